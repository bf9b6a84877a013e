package filestore

import (
	"errors"
	"io/fs"
	"strings"
	"time"

	"github.com/aipm/aipm/filestore/internal/engine"
)

// Identity is runtime/identity.json: the human who works in this clone (machine-local,
// never committed). The command line acts as this human unless told otherwise, so a
// collaborator's clone speaks for the collaborator, not for the owner.
type Identity struct {
	// Human is the human agent's id; "" when `aipm init` could not tell who works here
	// (the command line then asks for one).
	Human string    `json:"human"`
	SetAt time.Time `json:"set_at"`
	// From says how it was chosen: "project created", "git identity ...", "aipm whoami --set".
	From string `json:"from"`
}

func (s *Store) identityPath() string { return s.path("runtime", "identity.json") }

// Identity reads this clone's human; nil (no error) when none was ever set (a store from
// before identities, where the command line acts as the owner).
func (s *Store) Identity() (*Identity, error) {
	var id Identity
	if err := s.readJSON(s.identityPath(), &id); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	return &id, nil
}

// SetIdentity records who works in this clone: human must be a human member of the
// project, or "" to record that nobody is set yet (the command line asks).
func (s *Store) SetIdentity(human, from string) (*Identity, error) {
	if human != "" {
		ag, err := s.Member(human)
		if err != nil {
			return nil, err
		}
		if ag.Type != AgentHuman {
			return nil, newErr(ErrInvalid, "not_human", "name a human agent (`aipm agent list` shows them), or add yourself with `aipm agent add ID --type human`",
				"agent %s is an AI agent: a clone's identity is a human", human)
		}
	}
	id := &Identity{Human: human, SetAt: s.Now(), From: from}
	err := s.locked(func() error {
		if err := engine.EnsureDir(s.path("runtime")); err != nil {
			return err
		}
		return engine.WriteJSON(s.identityPath(), id, 0o644)
	})
	return id, err
}

// MatchHuman finds the human member a git identity ("Name <email>") stands for: the one
// whose id is the e-mail's local part or the name, or whose display name is the name
// (case-insensitive, at most one). "" when none or several match.
func (s *Store) MatchHuman(gitIdent string) (string, error) {
	name, email, _ := strings.Cut(gitIdent, "<")
	name = strings.TrimSpace(name)
	email, _, _ = strings.Cut(email, ">")
	local, _, _ := strings.Cut(strings.TrimSpace(email), "@")
	agents, err := s.Agents()
	if err != nil {
		return "", err
	}
	found := ""
	for _, ag := range agents {
		if ag.Type != AgentHuman || ag.Status == AgentInactive {
			continue
		}
		if local != "" && strings.EqualFold(ag.ID, local) || name != "" && (strings.EqualFold(ag.ID, name) || strings.EqualFold(ag.Name, name)) {
			if found != "" && found != ag.ID {
				return "", nil // ambiguous: ask
			}
			found = ag.ID
		}
	}
	return found, nil
}

// ThisMachine is this machine's id if it has one ("" before the first `aipm init` or
// `aipm run` made it), without making one: the history stamps each change with it.
func (s *Store) ThisMachine() string {
	s.machineIDMu.Lock()
	defer s.machineIDMu.Unlock()
	if s.machineID == "" {
		s.machineID, _ = s.knownMachineID() // kept once there is one
	}
	return s.machineID
}
