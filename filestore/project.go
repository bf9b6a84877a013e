package filestore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Project statuses.
const (
	ProjectActive   = "active"
	ProjectPaused   = "paused"
	ProjectArchived = "archived"
)

// Project is .ai-pm/project.json: one store is one project.
type Project struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Status      string    `json:"status"`
	OwnerID     string    `json:"owner_id"`
	Settings    Settings  `json:"settings"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	Version     int       `json:"version"`
}

// Settings are the project's tunables. Zero values mean the default (see the Effective
// methods), so a hand-written project.json may leave any of them out.
type Settings struct {
	// Language of agent-facing instructions: "en" (default) or "ja".
	Language string `json:"language"`
	// MessageMaxChars bounds a chat message, counted in characters (default 4000).
	MessageMaxChars int `json:"message_max_chars"`
	// SessionLeaseSeconds is how long a session stays live without any tool call
	// (default 3600). A session also ends as soon as its serving process is gone.
	SessionLeaseSeconds int `json:"session_lease_seconds"`
	// ConversationPendingTimeoutSeconds: a conversation nobody picked up expires (default 300).
	ConversationPendingTimeoutSeconds int `json:"conversation_pending_timeout_seconds"`
	// ConversationActiveTimeoutSeconds: a silent active conversation ends (default 600).
	ConversationActiveTimeoutSeconds int `json:"conversation_active_timeout_seconds"`
	// ChatIdleTimeoutSeconds: an idle chat session is told to log out (default 600).
	ChatIdleTimeoutSeconds int `json:"chat_idle_timeout_seconds"`
}

// Lease returns the effective session lease.
func (s Settings) Lease() time.Duration {
	return seconds(s.SessionLeaseSeconds, 3600)
}

// MaxMessageChars returns the effective message length limit in characters.
func (s Settings) MaxMessageChars() int {
	if s.MessageMaxChars > 0 {
		return s.MessageMaxChars
	}
	return 4000
}

func seconds(v, def int) time.Duration {
	if v <= 0 {
		v = def
	}
	return time.Duration(v) * time.Second
}

// InitOptions describe a new project.
type InitOptions struct {
	Name        string
	Description string
	OwnerID     string // the human owner agent created with the project
	OwnerName   string
}

const gitignore = `# aipm runtime state, never committed: live sessions, read cursors, passkey hashes,
# locks, spawn state. Everything else under .ai-pm is meant to be committed.
runtime/
# Execution logs (captured agent output) can be large; their records in executions/*.json
# are committed.
executions/*.log
# Temp files of interrupted atomic writes.
.*.tmp
`

const gitattributes = `# Mailboxes, notifications and history are append-only: a union merge keeps both sides'
# lines, so two clones that worked independently merge without conflicts.
*.jsonl merge=union
`

// Init creates .ai-pm under root with project.json, the owner agent, .gitignore and
// .gitattributes. It refuses to overwrite an existing project.
func Init(root string, o InitOptions, opts Options) (*Store, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	s := newStore(root, opts)
	if o.OwnerID == "" {
		o.OwnerID = "owner"
	}
	if err := ValidateAgentID(o.OwnerID); err != nil {
		return nil, err
	}
	if strings.TrimSpace(o.Name) == "" {
		o.Name = filepath.Base(root)
	}
	if o.OwnerName == "" {
		o.OwnerName = o.OwnerID
	}
	err = s.locked(func() error {
		if _, err := os.Stat(s.path("project.json")); err == nil {
			return newErr(ErrExists, "project_exists", "inspect it with `aipm status`", "%s already holds a project", s.Rel(s.path("project.json")))
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		for _, d := range []string{"agents", "tasks", "conversations", "delegations", "runtime/sessions", "runtime/credentials", "runtime/cursors", "runtime/chat"} {
			if err := os.MkdirAll(s.path(d), 0o755); err != nil {
				return err
			}
		}
		if err := writeFileAtomic(s.path(".gitignore"), []byte(gitignore), 0o644); err != nil {
			return err
		}
		if err := writeFileAtomic(s.path(".gitattributes"), []byte(gitattributes), 0o644); err != nil {
			return err
		}
		now := s.Now()
		owner := &Agent{ID: o.OwnerID, Name: o.OwnerName, Type: AgentHuman, Hierarchy: HierarchyOwner,
			Role: "owner", Status: AgentActive, MaxParallelTasks: 1, CreatedAt: now, UpdatedAt: now, Version: 1}
		if err := writeJSON(s.agentPath(owner.ID), owner, 0o644); err != nil {
			return err
		}
		p := &Project{ID: NewID(PrefixProject, now), Name: o.Name, Description: o.Description, Status: ProjectActive,
			OwnerID: o.OwnerID, CreatedAt: now, UpdatedAt: now, Version: 1,
			Settings: Settings{Language: "en", MessageMaxChars: 4000, SessionLeaseSeconds: 3600,
				ConversationPendingTimeoutSeconds: 300, ConversationActiveTimeoutSeconds: 600, ChatIdleTimeoutSeconds: 600}}
		// project.json last: its presence is what marks a complete store.
		if err := writeJSON(s.path("project.json"), p, 0o644); err != nil {
			return err
		}
		return s.appendEvent(Event{At: now, Actor: o.OwnerID, Via: ViaCLI, Entity: "project", ID: p.ID, Change: "created", To: p.Name})
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Project reads project.json.
func (s *Store) Project() (*Project, error) {
	var p Project
	if err := s.readJSON(s.path("project.json"), &p); err != nil {
		return nil, err
	}
	return &p, nil
}
