package filestore

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"sort"
	"strings"
	"time"
)

// settings.agent_commands arrive with `git clone` and `git pull`, so a stranger's commit can
// name any program. Like `direnv allow`, this machine runs a command only once it has
// approved its exact content: runtime/trust/commands.json (git-ignored) holds one entry per
// approved content, keyed by its hash. A change to a command's program, arguments or
// environment gives it a new hash, so a pulled change withdraws the approval.

// ApprovedCommand is one approved agent command: its name in settings.agent_commands, the
// content that was approved and when.
type ApprovedCommand struct {
	Name       string            `json:"name"`
	Command    []string          `json:"command"`
	Env        map[string]string `json:"env,omitempty"`
	ApprovedAt time.Time         `json:"approved_at"`
}

type trustFile struct {
	Approved map[string]ApprovedCommand `json:"approved"` // by CommandHash
}

func (s *Store) trustPath() string { return s.path("runtime", "trust", "commands.json") }

// CommandHash identifies the content of an agent command that runs: its name, program,
// arguments and environment (not its description).
func CommandHash(name string, ac AgentCommand) string {
	data, _ := json.Marshal(struct {
		Name    string            `json:"name"`
		Command []string          `json:"command"`
		Env     map[string]string `json:"env"` // encoding/json sorts map keys
	}{name, ac.Command, ac.Env})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func (s *Store) readTrust() (*trustFile, error) {
	var t trustFile
	if err := s.readJSON(s.trustPath(), &t); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if t.Approved == nil {
		t.Approved = map[string]ApprovedCommand{}
	}
	return &t, nil
}

// CommandApproved reports whether this machine approved exactly this content of the
// command called name.
func (s *Store) CommandApproved(name string, ac AgentCommand) (bool, error) {
	t, err := s.readTrust()
	if err != nil {
		return false, err
	}
	_, ok := t.Approved[CommandHash(name, ac)]
	return ok, nil
}

// LastApproved returns the most recently approved content of the command called name, nil
// if it was never approved.
func (s *Store) LastApproved(name string) (*ApprovedCommand, error) {
	t, err := s.readTrust()
	if err != nil {
		return nil, err
	}
	var last *ApprovedCommand
	for _, a := range t.Approved {
		if a.Name == name && (last == nil || a.ApprovedAt.After(last.ApprovedAt)) {
			a := a
			last = &a
		}
	}
	return last, nil
}

// ApproveCommands records the given commands, as they are now, as approved on this
// machine. It returns the names that were not approved before, sorted.
func (s *Store) ApproveCommands(cmds map[string]AgentCommand) ([]string, error) {
	var added []string
	err := s.locked(func() error {
		return s.approveLocked(cmds, &added)
	})
	sort.Strings(added)
	return added, err
}

func (s *Store) approveLocked(cmds map[string]AgentCommand, added *[]string) error {
	t, err := s.readTrust()
	if err != nil {
		return err
	}
	now := s.Now()
	for name, ac := range cmds {
		h := CommandHash(name, ac)
		if _, ok := t.Approved[h]; ok {
			continue
		}
		t.Approved[h] = ApprovedCommand{Name: name, Command: ac.Command, Env: ac.Env, ApprovedAt: now}
		*added = append(*added, name)
	}
	if len(*added) == 0 {
		return nil
	}
	return writeJSON(s.trustPath(), t, 0o600)
}

// Unapproved is an agent command that active AI agents use and this machine has not
// approved: `aipm run` starts nothing with it.
type Unapproved struct {
	Name   string   `json:"name"`   // the key in settings.agent_commands (an ai_type)
	Agents []string `json:"agents"` // the active AI agents that use it
}

// UnapprovedCommands lists the configured agent commands used by active AI agents that this
// machine has not approved (new, or changed since they were approved), by name. An ai_type
// with no command is not listed (`aipm doctor` reports it).
func (s *Store) UnapprovedCommands() ([]Unapproved, error) {
	p, err := s.Project()
	if err != nil {
		return nil, err
	}
	agents, err := s.Agents()
	if err != nil {
		return nil, err
	}
	users := map[string][]string{}
	for _, a := range agents {
		if a.Type != AgentAI || a.Status != AgentActive {
			continue
		}
		t := a.AIType
		if t == "" {
			t = "claude"
		}
		if _, ok := p.Settings.AgentCommands[t]; ok {
			users[t] = append(users[t], a.ID)
		}
	}
	var out []Unapproved
	for t, ids := range users {
		ok, err := s.CommandApproved(t, p.Settings.AgentCommands[t])
		if err != nil {
			return nil, err
		}
		if !ok {
			out = append(out, Unapproved{Name: t, Agents: ids})
		}
	}
	slices.SortFunc(out, func(a, b Unapproved) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
