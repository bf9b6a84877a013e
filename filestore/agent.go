package filestore

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aipm/aipm/filestore/internal/engine"
)

// Agent types, hierarchy levels and statuses.
const (
	AgentHuman = "human"
	AgentAI    = "ai"

	HierarchyOwner   = "owner"
	HierarchyManager = "manager"
	HierarchyWorker  = "worker"

	AgentActive    = "active"
	AgentInactive  = "inactive"
	AgentSuspended = "suspended"
)

// Agent is agents/<id>/agent.json.
type Agent struct {
	ID               string    `json:"id"`
	Name             string    `json:"name"`
	Type             string    `json:"type"`
	Hierarchy        string    `json:"hierarchy"`
	Role             string    `json:"role"`
	ParentID         string    `json:"parent_id"`
	Status           string    `json:"status"`
	MaxParallelTasks int       `json:"max_parallel_tasks"`
	AIType           string    `json:"ai_type"`
	Provider         string    `json:"provider"`
	Model            string    `json:"model"`
	SystemPrompt     string    `json:"system_prompt"`
	CreatedAt        time.Time `json:"created_at"`
	UpdatedAt        time.Time `json:"updated_at"`
	Version          int       `json:"version"`
	// Conflict is set when the agent's file holds Git's conflict markers (two clones
	// changed its name, role or system prompt): it is read as our side, so the agent
	// keeps working, until a person settles the file (see EntityConflict). Never read
	// from a file.
	Conflict *EntityConflict `json:"conflict,omitempty"`
}

// IsManager reports whether the agent manages others (owners count as managers for
// manager-only tools and approvals).
func (a *Agent) IsManager() bool {
	return a.Hierarchy == HierarchyManager || a.Hierarchy == HierarchyOwner
}

// MaxParallel returns the effective max_parallel_tasks (at least 1).
func (a *Agent) MaxParallel() int { return max(a.MaxParallelTasks, 1) }

func (s *Store) agentPath(id string) string { return s.path("agents", id, "agent.json") }

// credentialPath is where this machine keeps the agent's passkey hash: outside the
// repository (machine_trust.go), so a committed hash opens nothing.
func (s *Store) credentialPath(id string) (string, error) {
	return s.machinePath("credentials", id+".json")
}

// Agent reads one agent.
func (s *Store) Agent(id string) (*Agent, error) {
	if err := ValidateAgentID(id); err != nil {
		return nil, err
	}
	if a := s.agents.CachedCopy(id, func(a *Agent) *Agent { c := *a; c.Conflict = a.Conflict.clone(); return &c }); a != nil {
		return a, nil
	}
	return s.readAgent(id)
}

func (s *Store) readAgent(id string) (*Agent, error) {
	var a Agent
	c, err := readEntityFile(s, s.agentPath(id), &a)
	a.Conflict = c
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, newErr(ErrNotFound, "agent_not_found", "list agents with `aipm agent list`", "agent %s not found", id)
		}
		return nil, err
	}
	a.ID = id // the directory name is the agent's identity, whatever the file claims
	a.Hierarchy = s.checkedHierarchy(&a)
	return &a, nil
}

// checkedHierarchy is the hierarchy an agent file may claim: only project.json's owner,
// a human, is the owner. Another agent claiming owner (a hand edit, or a stranger's
// commit) is treated as a worker if it is an AI and as a manager if it is a human, so no
// authorization check honours the claim; doctor reports it.
func (s *Store) checkedHierarchy(a *Agent) string {
	if a.Hierarchy != HierarchyOwner {
		return a.Hierarchy
	}
	if a.Type == AgentHuman {
		if p, err := s.ProjectView(); err == nil && p.OwnerID == a.ID {
			return HierarchyOwner
		}
		return HierarchyManager
	}
	return HierarchyWorker
}

// Member returns the agent if it belongs to the project: its agent.json exists and it is
// not inactive.
func (s *Store) Member(id string) (*Agent, error) {
	a, err := s.Agent(id)
	if err != nil {
		return nil, err
	}
	if a.Status == AgentInactive {
		return nil, newErr(ErrUnauthorized, "agent_not_assigned_to_project", "reactivate the agent (status active) in "+s.Rel(s.agentPath(id)),
			"agent %s is not assigned to this project (status inactive)", id)
	}
	return a, nil
}

// Agents lists all agents sorted by id. Unreadable agent files are skipped (doctor reports
// them).
func (s *Store) Agents() ([]*Agent, error) {
	var out []*Agent
	err := s.agents.With(func() {
		ids := engine.Pick(s.agents, nil, false)
		// Every decision of a session lists the team: the copies are made in one block.
		copies := make([]Agent, 0, len(ids))
		out = make([]*Agent, 0, len(ids))
		for _, id := range ids {
			if a := s.agents.Get(id); a != nil {
				copies = append(copies, *a)
				out = append(out, &copies[len(copies)-1])
			}
		}
	})
	return out, err
}

// IsAncestor reports whether anc is on desc's parent chain (not desc itself). The walk stops
// at a missing agent or a cycle in hand-edited files.
func (s *Store) IsAncestor(anc, desc string) bool {
	seen := map[string]bool{desc: true}
	id := desc
	for {
		a, err := s.Agent(id)
		if err != nil || a.ParentID == "" || seen[a.ParentID] {
			return false
		}
		if a.ParentID == anc {
			return true
		}
		seen[a.ParentID] = true
		id = a.ParentID
	}
}

// Subordinates returns the direct children of id, sorted by id.
func (s *Store) Subordinates(id string) ([]*Agent, error) {
	all, err := s.Agents()
	if err != nil {
		return nil, err
	}
	var out []*Agent
	for _, a := range all {
		if a.ParentID == id {
			out = append(out, a)
		}
	}
	return out, nil
}

// NewAgent describes an agent to add.
type NewAgent struct {
	ID               string
	Name             string
	Type             string // human or ai (default ai)
	Hierarchy        string // owner, manager or worker (default worker)
	Role             string
	ParentID         string
	MaxParallelTasks int
	AIType           string
	Provider         string
	Model            string
	SystemPrompt     string
	// Passkey for an AI agent; empty means generate one. Humans have none.
	Passkey string
}

// AddAgent creates an agent. For an AI agent it returns the passkey, the only time it is
// ever available in plain text: only a salted hash is kept, under the git-ignored runtime
// directory.
func (s *Store) AddAgent(actor Actor, n NewAgent) (*Agent, string, error) {
	if err := ValidateAgentID(n.ID); err != nil {
		return nil, "", err
	}
	if n.Type == "" {
		n.Type = AgentAI
	}
	if n.Hierarchy == "" {
		n.Hierarchy = HierarchyWorker
	}
	if n.Name == "" {
		n.Name = n.ID
	}
	if !slices.Contains([]string{AgentHuman, AgentAI}, n.Type) {
		return nil, "", newErr(ErrInvalid, "invalid_argument", "use human or ai", "invalid agent type %q", clip(n.Type))
	}
	if !slices.Contains([]string{HierarchyOwner, HierarchyManager, HierarchyWorker}, n.Hierarchy) {
		return nil, "", newErr(ErrInvalid, "invalid_argument", "use owner, manager or worker", "invalid hierarchy %q", clip(n.Hierarchy))
	}
	if n.Hierarchy == HierarchyOwner && n.Type == AgentHuman {
		return nil, "", newErr(ErrInvalid, "invalid_argument", "make the human a manager; the project's one owner is owner_id in project.json", "the project already has its owner")
	}
	if n.Hierarchy == HierarchyOwner && n.Type != AgentHuman {
		return nil, "", newErr(ErrInvalid, "invalid_argument", "owners are humans; make the AI agent a manager", "an owner must be a human agent")
	}
	if n.MaxParallelTasks < 0 {
		return nil, "", newErr(ErrInvalid, "invalid_argument", "use 1 or more", "max_parallel_tasks must be positive")
	}
	passkey := ""
	if n.Type == AgentAI {
		passkey = n.Passkey
		if passkey == "" {
			passkey = newSecret("pk_")
		} else if len(passkey) < 8 {
			return nil, "", newErr(ErrInvalid, "invalid_argument", "choose a passkey of at least 8 characters, or omit it to get a generated one", "passkey too short")
		}
	} else if n.Passkey != "" {
		return nil, "", newErr(ErrInvalid, "invalid_argument", "humans act through the CLI with --as; only AI agents have passkeys", "a human agent has no passkey")
	}
	var a *Agent
	err := s.locked(func() error {
		if _, err := engine.Lstat(s.agentPath(n.ID)); err == nil {
			return newErr(ErrExists, "agent_exists", "pick another id, or inspect it with `aipm agent show "+n.ID+"`", "agent %s already exists", n.ID)
		}
		if n.ParentID != "" {
			if err := ValidateAgentID(n.ParentID); err != nil {
				return err
			}
			if _, err := s.Agent(n.ParentID); err != nil {
				return err
			}
		}
		now := s.Now()
		a = &Agent{ID: n.ID, Name: n.Name, Type: n.Type, Hierarchy: n.Hierarchy, Role: n.Role, ParentID: n.ParentID,
			Status: AgentActive, MaxParallelTasks: max(n.MaxParallelTasks, 1), AIType: n.AIType, Provider: n.Provider,
			Model: n.Model, SystemPrompt: n.SystemPrompt, CreatedAt: now, UpdatedAt: now, Version: 1}
		if passkey != "" {
			if err := s.writeCredential(a.ID, passkey); err != nil {
				return err
			}
		}
		if a.Type == AgentAI {
			if err := s.approveCreated(a); err != nil {
				return err
			}
		}
		if err := engine.WriteJSON(s.agentPath(a.ID), a, 0o644); err != nil {
			return err
		}
		s.eng.NoteWrite("agents/" + a.ID + "/agent.json")
		return s.appendEvent(Event{At: now, Actor: actor.ID, Via: actor.Via, Entity: "agent", ID: a.ID, Change: "created", To: a.Hierarchy})
	})
	if err != nil {
		return nil, "", err
	}
	return a, passkey, nil
}

// credential is credentials/<agent>.json in the machine directory: a salted SHA-256 of the passkey. Passkeys
// are long random strings, so a fast hash is enough; the salt keeps equal passkeys apart.
type credential struct {
	AgentID   string    `json:"agent_id"`
	Salt      string    `json:"salt"`
	Hash      string    `json:"hash"`
	CreatedAt time.Time `json:"created_at"`
}

func (s *Store) writeCredential(agentID, passkey string) error {
	salt := newSecret("")
	c := credential{AgentID: agentID, Salt: salt, Hash: hashSecret(salt, passkey), CreatedAt: s.Now()}
	path, err := s.credentialPath(agentID)
	if err != nil {
		return err
	}
	if err := engine.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return engine.WriteJSON(path, c, 0o600)
}

// RotatePasskey replaces an AI agent's passkey and returns the new one.
func (s *Store) RotatePasskey(actor Actor, agentID string) (string, error) {
	a, err := s.Agent(agentID)
	if err != nil {
		return "", err
	}
	if a.Type != AgentAI {
		return "", newErr(ErrInvalid, "invalid_argument", "humans act through the CLI with --as", "agent %s is human and has no passkey", agentID)
	}
	passkey := newSecret("pk_")
	err = s.locked(func() error {
		if err := s.writeCredential(agentID, passkey); err != nil {
			return err
		}
		return s.appendEvent(Event{At: s.Now(), Actor: actor.ID, Via: actor.Via, Entity: "agent", ID: agentID, Change: "passkey_rotated"})
	})
	return passkey, err
}

// checkPasskey verifies a passkey in constant time.
func (s *Store) checkPasskey(agentID, passkey string) bool {
	var c credential
	path, err := s.credentialPath(agentID)
	if err != nil {
		return false
	}
	if err := s.readJSON(path, &c); err != nil {
		return false
	}
	got := hashSecret(c.Salt, passkey)
	return subtle.ConstantTimeCompare([]byte(got), []byte(c.Hash)) == 1
}

func hashSecret(salt, secret string) string {
	sum := sha256.Sum256([]byte(salt + "\x00" + secret))
	return hex.EncodeToString(sum[:])
}

func newSecret(prefix string) string {
	var b [20]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("filestore: crypto/rand failed: " + err.Error())
	}
	return prefix + strings.ToLower(hex.EncodeToString(b[:]))
}
