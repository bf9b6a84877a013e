package filestore

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aipm/aipm/filestore/internal/engine"
	"github.com/aipm/aipm/filestore/msg"
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
	// Conflict is set when project.json holds Git's conflict markers (two clones changed
	// the name, the description or an agent command): the project is read as our side,
	// so nothing stops, and a change of it is refused until a person settles the file
	// (see EntityConflict). Never read from a file.
	Conflict *EntityConflict `json:"conflict,omitempty"`
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
	// ConversationSessionGraceSeconds: an active conversation one of whose sides has had no
	// live chat session this long ends with session_expired (default 60).
	ConversationSessionGraceSeconds int `json:"conversation_session_grace_seconds"`
	// MaxAgentProcesses bounds the agent processes `aipm run` keeps at once (default 4).
	MaxAgentProcesses int `json:"max_agent_processes"`
	// AgentWorktrees gives each AI agent `aipm run` starts its own Git worktree of the
	// clone ({workdir}), so their file edits do not collide: <repo>.worktrees/<agent-id>
	// beside the repository, on branch aipm/<agent-id>, made on the agent's first start
	// and left for a human to review and merge. They share the clone's one store.
	AgentWorktrees bool `json:"agent_worktrees,omitempty"`
	// ManualTaskStart turns the per-agent queue off: an assigned todo task then starts only
	// when someone sets it in progress. Off (the default), `aipm run` starts each top-level
	// todo task whose dependencies are done as soon as its agent has room under
	// max_parallel_tasks, the highest priority first (StartQueued).
	ManualTaskStart bool `json:"manual_task_start,omitempty"`
	// StartTimeoutSeconds: a process `aipm run` started that has not authenticated this long
	// is stopped, recorded and backed off (default 120, the life of its spawn ticket).
	StartTimeoutSeconds int `json:"start_timeout_seconds,omitempty"`
	// SilenceTimeoutSeconds: a process that works (it is not in a wait the server knows
	// about) and has made no tool call and written no output this long is asked, by a
	// notification, to report progress or call get_next_action (default 180).
	SilenceTimeoutSeconds int `json:"silence_timeout_seconds,omitempty"`
	// SilenceGraceSeconds: a process still silent this long after it was asked is stopped,
	// recorded and backed off, and its task goes to the next start (default 120).
	SilenceGraceSeconds int `json:"silence_grace_seconds,omitempty"`
	// MaxFailedStarts: after this many starts in a row of one agent and purpose that fail,
	// never authenticate or are stopped as hung, `aipm run` gives up on that work for the
	// run and ends what waits on it (default 5).
	MaxFailedStarts int `json:"max_failed_starts,omitempty"`
	// TaskBranches: in a Git repository with at least one commit, each task `aipm run`
	// starts works in a worktree and on a branch of its own (aipm/<task id>, made from
	// the target's tip), and its code reaches the target through the merge queue
	// (landing.go). Unset, it is on in such a repository unless agent_worktrees is;
	// false turns it off (tasks then work in the repository itself, as before).
	TaskBranches *bool `json:"task_branches,omitempty"`
	// TargetBranch is the branch tasks land on: `aipm init` sets it to the branch checked
	// out then; empty, the branch the main worktree has checked out.
	TargetBranch string `json:"target_branch,omitempty"`
	// CheckCommand is the project's check, run with `sh -c` in a task's worktree after
	// its branch is brought up to the target and before it lands (exit 0: it lands). Like
	// agent commands it runs only once this machine approved it (`aipm trust`). Empty:
	// no check.
	CheckCommand string `json:"check_command,omitempty"`
	// CheckTimeoutSeconds bounds one run of the check (default 600).
	CheckTimeoutSeconds int `json:"check_timeout_seconds,omitempty"`
	// MaxLandAttempts: after this many failed attempts to land a task's code (conflicts,
	// failed checks; its reworks included) a person decides (default 3).
	MaxLandAttempts int `json:"max_land_attempts,omitempty"`
	// Land is how checked code reaches the target: "push" (default) moves the target
	// (and pushes it where there is a remote); "branch" pushes the task's branch and
	// leaves the merge to the forge's pull request.
	Land string `json:"land,omitempty"`
	// RequireSignedState: every commit of the state branch is signed with Git's SSH
	// signing (the clone's user.signingkey) by a key listed in allowed_signers, and a sync
	// round takes nothing from a remote whose new commits are not all so signed
	// (cmd/aipm/internal/gitstate/signing.go). Off by default.
	RequireSignedState bool `json:"require_signed_state,omitempty"`
	// AgentCommands are what `aipm run` starts for an agent, by the agent's ai_type.
	AgentCommands map[string]AgentCommand `json:"agent_commands"`
}

// Land modes (settings.land).
const (
	LandPush   = "push"
	LandBranch = "branch"
)

// CheckCommandName is the name the check carries among the approved commands.
const CheckCommandName = "check_command"

// Check returns the check as the command that runs (sh -c), ok false when none is set.
func (s Settings) Check() (ac AgentCommand, ok bool) {
	if strings.TrimSpace(s.CheckCommand) == "" {
		return AgentCommand{}, false
	}
	return AgentCommand{Description: "the project's check", Command: []string{"sh", "-c", s.CheckCommand}}, true
}

// TrustedCommands are the commands a machine approves with `aipm trust`: the agent
// commands, and the check under CheckCommandName.
func (s Settings) TrustedCommands() map[string]AgentCommand {
	out := maps.Clone(s.AgentCommands)
	if ac, ok := s.Check(); ok {
		if out == nil {
			out = map[string]AgentCommand{}
		}
		out[CheckCommandName] = ac
	}
	return out
}

// UseTaskBranches reports whether tasks work on branches of their own (in a repository
// where that is possible: the caller checks).
func (s Settings) UseTaskBranches() bool {
	if s.TaskBranches != nil {
		return *s.TaskBranches
	}
	return !s.AgentWorktrees
}

// CheckTimeout returns how long one run of the check may take.
func (s Settings) CheckTimeout() time.Duration { return seconds(s.CheckTimeoutSeconds, 600) }

// LandAttempts returns how many failed attempts to land a task's code are made before a
// person decides.
func (s Settings) LandAttempts() int {
	if s.MaxLandAttempts > 0 {
		return s.MaxLandAttempts
	}
	return 3
}

// LandMode returns settings.land, "push" by default.
func (s Settings) LandMode() string {
	if s.Land == LandBranch {
		return LandBranch
	}
	return LandPush
}

// AgentCommand is how the coordinator starts one kind of agent CLI. Command and Env values
// may hold placeholders, replaced per start: {aipm} (this aipm executable), {prompt},
// {workdir} (the repository root), {agent_id}, {purpose}, {task_id}, {model} and
// {mcp_config} (a per-start JSON file declaring the aipm MCP server, in the format Claude
// Code's --mcp-config and Gemini CLI's settings read).
type AgentCommand struct {
	Description string            `json:"description"`
	Command     []string          `json:"command"`
	Env         map[string]string `json:"env,omitempty"`
}

// MaxProcesses returns the effective bound on concurrent agent processes.
func (s Settings) MaxProcesses() int {
	if s.MaxAgentProcesses > 0 {
		return s.MaxAgentProcesses
	}
	return 4
}

// StartTimeout returns how long a started agent process may take to authenticate.
func (s Settings) StartTimeout() time.Duration { return seconds(s.StartTimeoutSeconds, 120) }

// SilenceTimeout returns how long a working agent process may make no tool call and write
// no output before it is asked whether it is stuck.
func (s Settings) SilenceTimeout() time.Duration { return seconds(s.SilenceTimeoutSeconds, 180) }

// SilenceGrace returns how long an agent process asked whether it is stuck may stay silent
// before it is stopped.
func (s Settings) SilenceGrace() time.Duration { return seconds(s.SilenceGraceSeconds, 120) }

// FailedStarts returns how many failed starts in a row make `aipm run` give up on a work.
func (s Settings) FailedStarts() int {
	if s.MaxFailedStarts > 0 {
		return s.MaxFailedStarts
	}
	return 5
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
	// AgentCommands become settings.agent_commands (the CLI passes its templates).
	AgentCommands map[string]AgentCommand
	// AIPM is the aipm executable, which {aipm} names in AgentCommands.
	AIPM string
	// TargetBranch becomes settings.target_branch: the branch tasks land on.
	TargetBranch string
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
# Entity files merge field by field with aipm's merge driver (` + "`aipm merge-driver`" + `), which
# ` + "`aipm init`" + ` registers in each clone's Git config: changes of different fields merge,
# a status changed on both sides resolves to a valid one.
` + gitattributesDriver

// gitattributesDriver names aipm's merge driver for every entity file (EntityKind).
const gitattributesDriver = `project.json merge=aipm
agents/*/agent.json merge=aipm
tasks/*.json merge=aipm
conversations/*.json merge=aipm
delegations/*.json merge=aipm
executions/*.json merge=aipm
leases/*.json merge=aipm
`

// oldGitattributes is what init wrote before the merge driver: replaced, not appended to.
const oldGitattributes = `# Mailboxes, notifications and history are append-only: a union merge keeps both sides'
# lines, so two clones that worked independently merge without conflicts.
*.jsonl merge=union
`

// runtimeDirs are the machine-local directories a store needs, created by Init and by
// Prepare in a fresh clone (where Git brought none of them: runtime/ is ignored).
var runtimeDirs = []string{"runtime/sessions", "runtime/cursors", "runtime/chat", "runtime/notifications", "runtime/spawns", "runtime/locks"}

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
		if _, err := engine.Lstat(s.path("project.json")); err == nil {
			return newErr(ErrExists, "project_exists", "inspect it with `aipm status`", "%s already holds a project", s.Rel(s.path("project.json")))
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		for _, d := range append([]string{"agents", "tasks", "conversations", "delegations"}, runtimeDirs...) {
			if err := engine.EnsureDir(s.path(d)); err != nil {
				return err
			}
		}
		if err := engine.WriteAtomic(s.path(".gitignore"), []byte(gitignore), 0o644); err != nil {
			return err
		}
		if err := engine.WriteAtomic(s.path(".gitattributes"), []byte(gitattributes), 0o644); err != nil {
			return err
		}
		now := s.Now()
		owner := &Agent{ID: o.OwnerID, Name: o.OwnerName, Type: AgentHuman, Hierarchy: HierarchyOwner,
			Role: "owner", Status: AgentActive, MaxParallelTasks: 1, CreatedAt: now, UpdatedAt: now, Version: 1}
		if err := engine.WriteJSON(s.agentPath(owner.ID), owner, 0o644); err != nil {
			return err
		}
		p := &Project{ID: NewID(PrefixProject, now), Name: o.Name, Description: o.Description, Status: ProjectActive,
			OwnerID: o.OwnerID, CreatedAt: now, UpdatedAt: now, Version: 1,
			Settings: Settings{Language: "en", MessageMaxChars: 4000, SessionLeaseSeconds: 3600,
				ConversationPendingTimeoutSeconds: 300, ConversationActiveTimeoutSeconds: 600, ChatIdleTimeoutSeconds: 600, ConversationSessionGraceSeconds: 60,
				MaxAgentProcesses: 4, TargetBranch: o.TargetBranch, AgentCommands: o.AgentCommands}}
		// project.json last: its presence is what marks a complete store.
		if err := engine.WriteJSON(s.path("project.json"), p, 0o644); err != nil {
			return err
		}
		// The commands written here are this machine's own: approved to run (trust.go).
		var approved []string
		if err := s.approveLocked(o.AgentCommands, o.AIPM, &approved); err != nil {
			return err
		}
		return s.appendEvent(Event{At: now, Actor: o.OwnerID, Via: ViaCLI, Entity: "project", ID: p.ID, Change: "created", To: p.Name})
	})
	if err != nil {
		return nil, err
	}
	// This machine's id, for the agent leases (machine.go).
	if _, err := s.MachineID(); err != nil {
		return nil, err
	}
	return s, nil
}

// Project reads project.json.
//
// Nearly every call reads it, so the last one read is kept with the file's identity and
// handed out again (a copy) while a stat says the file is the same.
func (s *Store) Project() (*Project, error) {
	p, shared, err := s.projectRead()
	if err != nil || !shared {
		return p, err
	}
	return p.clone(), nil
}

// ProjectView is Project for a caller that only reads it: the copy the store holds, not a
// copy of it (a call reads the project several times). It is shared with every other
// reader and must not be changed; the store never changes it either, a change of
// project.json gives a new one.
func (s *Store) ProjectView() (*Project, error) {
	p, _, err := s.projectRead()
	return p, err
}

// ProjectLanguage is the project's settings.language, "" (English) when the project
// cannot be read.
func (s *Store) ProjectLanguage() string {
	if p, _, err := s.projectRead(); err == nil {
		return p.Settings.Language
	}
	return ""
}

// projectRead returns the project as project.json says, and whether it is the copy the
// store holds (shared: no one may change it), read again only when the file's identity
// changed.
func (s *Store) projectRead() (p *Project, shared bool, err error) {
	path := s.path("project.json")
	st, regular, statErr := engine.LstatStamp(path)
	if statErr == nil && regular {
		s.projMu.Lock()
		if s.proj != nil && s.projStamp == st {
			p := s.proj
			s.projMu.Unlock()
			return p, true, nil
		}
		s.projMu.Unlock()
	}
	var read Project
	c, err := readEntityFile(s, path, &read)
	read.Conflict = c
	if err != nil {
		return nil, false, err
	}
	if statErr == nil && regular {
		// Stamped before the read: if the file changed in between, the next stat differs
		// and the file is read again.
		s.projMu.Lock()
		s.proj, s.projStamp = read.clone(), st
		s.projMu.Unlock()
	}
	return &read, false, nil
}

// clone is a deep copy: callers may change what they get.
func (p *Project) clone() *Project {
	c := *p
	c.Conflict = p.Conflict.clone()
	if p.Settings.AgentCommands != nil {
		c.Settings.AgentCommands = make(map[string]AgentCommand, len(p.Settings.AgentCommands))
		for k, ac := range p.Settings.AgentCommands {
			ac.Command = slices.Clone(ac.Command)
			ac.Env = maps.Clone(ac.Env)
			c.Settings.AgentCommands[k] = ac
		}
	}
	if p.Settings.TaskBranches != nil {
		v := *p.Settings.TaskBranches
		c.Settings.TaskBranches = &v
	}
	return &c
}

// ProjectStatusChange is what SetProjectStatus did.
type ProjectStatusChange struct {
	Project  *Project
	Previous string
	// Notified lists, sorted, the agents with a live session that were sent the pause
	// interrupt (or, on resume, the resume notice).
	Notified []string
}

// SetProjectStatus pauses (paused) or resumes (active) the project. Only a human owner or
// human manager may do it (unauthorized otherwise); an archived project stays archived
// (project_archived). Setting the current status changes nothing. The change is recorded
// in the history, and every agent with a live session is told at once: pausing sends an
// interrupt (action pause, target_purpose any) — the envelope then replaces the agent's
// next tool result, and a waiting long-poll ends — and resuming sends a status_change
// (action resume). While the project is paused Authenticate starts no session.
// EditSettings changes the project's settings under the lock and records who did it.
func (s *Store) EditSettings(actor Actor, change func(*Settings)) error {
	return s.locked(func() error {
		p, err := s.Project()
		if err != nil {
			return err
		}
		if p.Conflict != nil {
			return conflictedError(s, "project", "project", s.path("project.json"), p.Conflict.String(p))
		}
		change(&p.Settings)
		now := s.Now()
		p.UpdatedAt = now
		p.Version++
		if err := engine.WriteJSON(s.path("project.json"), p, 0o644); err != nil {
			return err
		}
		return s.appendEvent(Event{At: now, Actor: actor.ID, Via: actor.Via, Entity: "project", ID: p.ID, Change: "settings"})
	})
}

func (s *Store) SetProjectStatus(actor Actor, status string) (*ProjectStatusChange, error) {
	if status != ProjectActive && status != ProjectPaused {
		return nil, newErr(ErrInvalid, "invalid_argument", "use paused to pause the project or active to resume it", "invalid project status %q", clip(status))
	}
	if err := ValidateAgentID(actor.ID); err != nil {
		return nil, err
	}
	var ch *ProjectStatusChange
	err := s.locked(func() error {
		a, err := s.Member(actor.ID)
		if err != nil {
			return err
		}
		if a.Type != AgentHuman || !a.IsManager() {
			return newErr(ErrUnauthorized, "unauthorized", "ask the project owner (or a human manager) to do it",
				"agent %s is not a human owner or manager (%s %s): only they pause and resume the project", a.ID, a.Type, a.Hierarchy)
		}
		p, err := s.Project()
		if err != nil {
			return err
		}
		if p.Conflict != nil {
			return conflictedError(s, "project", "project", s.path("project.json"), p.Conflict.String(p))
		}
		ch = &ProjectStatusChange{Project: p, Previous: p.Status, Notified: []string{}}
		if p.Status == ProjectArchived {
			return newErr(ErrConflict, "project_archived", "an archived project is read-only", "project %s is archived", p.ID)
		}
		if p.Status == status {
			return nil
		}
		now := s.Now()
		p.Status = status
		p.UpdatedAt = now
		p.Version++
		if err := engine.WriteJSON(s.path("project.json"), p, 0o644); err != nil {
			return err
		}
		if err := s.appendEvent(Event{At: now, Actor: actor.ID, Via: actor.Via, Entity: "project", ID: p.ID, Change: "status", From: ch.Previous, To: status}); err != nil {
			return err
		}
		ch.Notified, err = s.notifyProjectStatusLocked(actor, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	return ch, nil
}

// NotifyProjectPaused sends the pause interrupt of the project's current pause to every
// agent with a live session that does not have it yet, and returns those agents, sorted:
// for a watcher that sees project.json set to paused by hand. It does nothing when the
// project is not paused. The notification key names the project version, so however
// many processes notice one pause, each agent is told once.
func (s *Store) NotifyProjectPaused(actor Actor) ([]string, error) {
	var out []string
	err := s.locked(func() error {
		p, err := s.Project()
		if err != nil || p.Status != ProjectPaused {
			return err
		}
		out, err = s.notifyProjectStatusLocked(actor, p)
		return err
	})
	return out, err
}

// ProjectStatusKey is the notification key of the project's current status change:
// AddNotification adds one notification per agent per key.
func ProjectStatusKey(p *Project) string {
	return fmt.Sprintf("project:%s:%s:v%d", p.ID, p.Status, p.Version)
}

// notifyProjectStatusLocked tells every agent with a live session about the project's
// status (paused: interrupt; active: resume notice). The caller holds the lock.
func (s *Store) notifyProjectStatusLocked(actor Actor, p *Project) ([]string, error) {
	live, err := s.LiveSessions("")
	if err != nil {
		return nil, err
	}
	agents := []string{}
	for _, se := range live {
		if !slices.Contains(agents, se.AgentID) {
			agents = append(agents, se.AgentID)
		}
	}
	slices.Sort(agents)
	out := []string{}
	for _, id := range agents {
		n := projectNotice(p, actor.ID, id)
		if err := s.validateNotification(&n); err != nil {
			return nil, err
		}
		if _, _, err := s.addNotificationLocked(actor, n); err != nil {
			if errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrNotFound) {
				continue // an agent made inactive or removed since its session started
			}
			return nil, err
		}
		out = append(out, id)
	}
	return out, nil
}

// projectNotice is the notification telling agentID that the project was paused or
// resumed by by, in the project's instruction language.
func projectNotice(p *Project, by, agentID string) Notification {
	lang := p.Settings.Language
	n := Notification{TargetAgentID: agentID, TargetPurpose: PurposeAny, FromAgentID: by, Key: ProjectStatusKey(p)}
	if p.Status == ProjectPaused {
		n.Type, n.Action, n.Priority = NotifyInterrupt, ActionPause, NotifyHigh
		n.Message = msg.Text(lang, "project.paused.message", p.Name, by)
		n.Instruction = msg.Text(lang, "project.paused.instruction")
		return n
	}
	n.Type, n.Action, n.Priority = NotifyStatusChange, ActionResume, NotifyNormal
	n.Message = msg.Text(lang, "project.resumed.message", p.Name, by)
	n.Instruction = msg.Text(lang, "project.resumed.instruction")
	return n
}

// GitFiles are the .gitignore and .gitattributes aipm writes at the top of a store: a
// clone writes its own, never another clone's (StatePath).
func GitFiles() map[string][]byte {
	return map[string][]byte{".gitignore": []byte(gitignore), ".gitattributes": []byte(gitattributes)}
}
