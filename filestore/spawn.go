package filestore

import (
	"crypto/subtle"
	"errors"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aipm/aipm/filestore/internal/engine"
	"github.com/aipm/aipm/filestore/msg"
)

// Spawn is runtime/spawns/<id>.json: one agent process the coordinator started, for one
// agent and one purpose. Its one-time ticket (only a hash is kept) lets the process
// authenticate without a passkey; the sessions it opens carry the spawn id, so when the
// process exits the coordinator ends exactly those sessions — never a sibling of the other
// purpose — and attaches the captured output to their execution records.
type Spawn struct {
	ID      string `json:"id"`
	AgentID string `json:"agent_id"`
	Purpose string `json:"purpose"`
	TaskID  string `json:"task_id"`
	AIType  string `json:"ai_type"`
	// Machine is the machine whose coordinator started it (only that machine's next
	// coordinator may stop what is left of it).
	Machine string `json:"machine,omitempty"`
	Command string `json:"command"`
	PID     int    `json:"pid"`
	// PIDStart identifies the process beside its pid (its start time, where the system
	// tells it): a recycled pid is not this spawn's process.
	PIDStart        string     `json:"pid_start,omitempty"`
	LogPath         string     `json:"log_path"`
	TicketHash      string     `json:"ticket_hash"`
	TicketExpiresAt time.Time  `json:"ticket_expires_at"`
	TicketUsedAt    *time.Time `json:"ticket_used_at"`
	SessionIDs      []string   `json:"session_ids"`
	StartedAt       time.Time  `json:"started_at"`
	EndedAt         *time.Time `json:"ended_at"`
	ExitCode        *int       `json:"exit_code"`
	Outcome         string     `json:"outcome"`
	// BackoffUntil is set when the coordinator holds the next start for the same agent and
	// purpose after this one failed or changed nothing (`aipm status` shows it).
	BackoffUntil *time.Time `json:"backoff_until,omitempty"`
	UpdatedAt    time.Time  `json:"updated_at"`
	Version      int        `json:"version"`
}

func (s *Store) spawnPath(id string) string { return s.path("runtime", "spawns", id+".json") }

// SpawnLogPath is where the coordinator captures the output of a spawned process.
func (s *Store) SpawnLogPath(id string) string { return s.path("runtime", "spawns", id+".log") }

// NewSpawn is a process the coordinator is about to start.
type NewSpawn struct {
	AgentID, Purpose, TaskID, AIType string
	Machine                          string
	// TicketTTL bounds how long the process may take to authenticate.
	TicketTTL time.Duration
}

// CreateSpawn records a spawn and mints its one-time ticket, returned in plain text only
// here: the coordinator hands it to the process through its environment.
func (s *Store) CreateSpawn(n NewSpawn) (*Spawn, string, error) {
	if err := ValidateAgentID(n.AgentID); err != nil {
		return nil, "", err
	}
	if n.Purpose != PurposeTask && n.Purpose != PurposeChat {
		return nil, "", newErr(ErrInvalid, "invalid_argument", "use purpose task or chat", "invalid purpose %q", clip(n.Purpose))
	}
	if n.TicketTTL <= 0 {
		n.TicketTTL = 2 * time.Minute
	}
	now := s.Now()
	sp := &Spawn{ID: NewID(PrefixSpawn, now), AgentID: n.AgentID, Purpose: n.Purpose, TaskID: n.TaskID, AIType: n.AIType, Machine: n.Machine,
		TicketExpiresAt: now.Add(n.TicketTTL), SessionIDs: []string{}, StartedAt: now, UpdatedAt: now, Version: 1}
	secret := newSecret("")
	h, err := s.boundHash(sp.ID, secret)
	if err != nil {
		return nil, "", err
	}
	sp.TicketHash = h
	sp.LogPath = s.Rel(s.SpawnLogPath(sp.ID))
	err = s.locked(func() error {
		if err := engine.WriteJSON(s.spawnPath(sp.ID), sp, 0o600); err != nil {
			return err
		}
		return s.appendEvent(Event{At: now, Actor: n.AgentID, Via: ViaCoordinator, Entity: "spawn", ID: sp.ID, Change: "started", To: n.Purpose, Reason: n.TaskID})
	})
	if err != nil {
		return nil, "", err
	}
	return sp, sp.ID + "." + secret, nil
}

// Spawn reads one spawn record.
func (s *Store) Spawn(id string) (*Spawn, error) {
	if err := ValidateEntityID(PrefixSpawn, id); err != nil {
		return nil, err
	}
	var sp Spawn
	if err := s.readJSON(s.spawnPath(id), &sp); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, newErr(ErrNotFound, "spawn_not_found", "the coordinator lists its processes in runtime/spawns/", "spawn %s not found", id)
		}
		return nil, err
	}
	sp.ID = id // the file name is the identity, whatever the file claims
	return &sp, nil
}

// Spawns lists the spawn records, oldest first.
func (s *Store) Spawns() ([]*Spawn, error) {
	entries, err := engine.ReadDir(s.path("runtime", "spawns"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var out []*Spawn
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || ValidateEntityID(PrefixSpawn, id) != nil {
			continue
		}
		if sp, err := s.Spawn(id); err == nil {
			out = append(out, sp)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// SetSpawnBackoff records that the next start for the spawn's agent and purpose waits
// until the given moment.
func (s *Store) SetSpawnBackoff(id string, until time.Time) error {
	return s.updateSpawn(id, func(sp *Spawn) error {
		sp.BackoffUntil = &until
		return nil
	})
}

// SetSpawnPID records the started process.
func (s *Store) SetSpawnPID(id string, pid int, command string) error {
	return s.updateSpawn(id, func(sp *Spawn) error {
		sp.PID, sp.Command, sp.PIDStart = pid, command, engine.ProcessStart(pid)
		return nil
	})
}

func (s *Store) updateSpawn(id string, fn func(*Spawn) error) error {
	if err := ValidateEntityID(PrefixSpawn, id); err != nil {
		return err
	}
	return s.locked(func() error { return s.updateSpawnLocked(id, fn) })
}

func (s *Store) updateSpawnLocked(id string, fn func(*Spawn) error) error {
	var sp Spawn
	if err := s.readJSON(s.spawnPath(id), &sp); err != nil {
		return err
	}
	if err := fn(&sp); err != nil {
		if errors.Is(err, errNoChange) {
			return nil
		}
		return err
	}
	sp.UpdatedAt = s.Now()
	sp.Version++
	return engine.WriteJSON(s.spawnPath(sp.ID), &sp, 0o600)
}

// OutcomeShutdown is the outcome of a process its coordinator stopped because it was
// shutting down itself (Ctrl-C, --timeout, --exit-when-idle): not a failure of the agent.
const OutcomeShutdown = "stopped: aipm run shut down"

// Failed reports whether an ended spawn counts as a failed start for the people watching:
// it failed, was stopped as hung, or was held back — not when its coordinator stopped it
// while shutting down or because the agent moved to another machine, nor when the next
// coordinator cleaned up after a dead one.
func (sp *Spawn) Failed() bool {
	if sp.EndedAt == nil || Interruption(sp.Outcome) {
		return false
	}
	return sp.BackoffUntil != nil || sp.Outcome != "exited" || sp.ExitCode == nil || *sp.ExitCode != 0
}

// OutcomeMoved is the outcome of a process its coordinator stopped because the agent's
// lease went to another machine: not a failure of the agent.
const OutcomeMoved = "stopped: its lease moved to another machine"

// OutcomeInactive is the outcome of a process its coordinator stopped because its agent
// was made inactive: not a failure of the agent either.
const OutcomeInactive = "stopped: the agent was made inactive"

// OutcomeFenced is the outcome of a process its coordinator stopped because the renewals
// of its agent's lease no longer reached the remote (another machine may take the lease
// once it lapses there): not a failure of the agent.
const OutcomeFenced = "stopped: its lease could not be renewed on the remote"

// Interruption says whether outcome is a stop that is no failure of the agent: the run
// shut down, the lease moved or could not be renewed, the agent was made inactive, or
// the next coordinator cleaned up after a dead one. Its work starts again.
func Interruption(outcome string) bool {
	switch outcome {
	case OutcomeShutdown, OutcomeOrphaned, OutcomeMoved, OutcomeInactive, OutcomeFenced:
		return true
	}
	return false
}

// OutcomeOrphaned is the outcome of a spawn whose coordinator died: the next coordinator
// stopped what was left of it and closed the record. Not a failure of the agent.
const OutcomeOrphaned = "orphaned: its aipm run died; stopped by the next one"

// OpenSpawns lists the spawn records with no end: processes a coordinator started and has
// not seen exit (it is running, or it was killed before it could record the exit).
func (s *Store) OpenSpawns() ([]*Spawn, error) {
	all, err := s.Spawns()
	if err != nil {
		return nil, err
	}
	var out []*Spawn
	for _, sp := range all {
		if sp.EndedAt == nil {
			out = append(out, sp)
		}
	}
	return out, nil
}

// Alive reports whether the spawn's process still runs (the same process: not a recycled
// pid).
func (sp *Spawn) Alive() bool { return engine.ProcessAlive(sp.PID, sp.PIDStart) }

// IsSpawnTicket reports whether a credential has the shape of a spawn ticket rather than a
// passkey.
func IsSpawnTicket(cred string) bool {
	id, _, ok := strings.Cut(cred, ".")
	return ok && ValidateEntityID(PrefixSpawn, id) == nil
}

// redeemTicketLocked checks a spawn ticket for an agent and marks it used. It returns the
// spawn (whose purpose the new session must have). The caller holds the lock.
func (s *Store) redeemTicketLocked(agentID, ticket string) (*Spawn, error) {
	bad := newErr(ErrUnauthorized, "invalid_ticket", "spawn tickets are minted by `aipm run` for one start; authenticate with your passkey instead",
		"invalid, used or expired spawn ticket")
	id, secret, _ := strings.Cut(ticket, ".")
	sp, err := s.Spawn(id)
	if err != nil {
		return nil, bad
	}
	// Bound to this machine's key: a spawn record that came with the repository matches
	// no ticket.
	want, err := s.boundHash(sp.ID, secret)
	if err != nil {
		return nil, err
	}
	if subtle.ConstantTimeCompare([]byte(want), []byte(sp.TicketHash)) != 1 || sp.AgentID != agentID ||
		sp.TicketUsedAt != nil || !s.Now().Before(sp.TicketExpiresAt) {
		return nil, bad
	}
	return sp, nil
}

// EndSpawn records that a spawned process exited: its exit code, the sessions it opened
// end (reason process_exit, unless they ended already), and its captured output becomes
// the log of their execution records. It returns the sessions it ended.
func (s *Store) EndSpawn(id string, exitCode int, outcome string) ([]string, error) {
	var ended []string
	err := s.locked(func() error {
		var sp Spawn
		if err := s.readJSON(s.spawnPath(id), &sp); err != nil {
			return err
		}
		now := s.Now()
		for _, sid := range sp.SessionIDs {
			se, err := s.readSession(sid)
			if err != nil {
				continue
			}
			if se.State == SessionActive {
				if err := s.updateSessionLocked(sid, func(cur *Session) error { return s.endSession(cur, "process_exit") }); err != nil {
					return err
				}
				ended = append(ended, sid)
			}
			if se.ExecutionID != "" {
				if err := s.attachRunLocked(se.ExecutionID, &sp, exitCode, outcome); err != nil {
					return err
				}
			}
		}
		if err := s.updateSpawnLocked(id, func(cur *Spawn) error {
			cur.EndedAt, cur.ExitCode, cur.Outcome = &now, &exitCode, outcome
			return nil
		}); err != nil {
			return err
		}
		return s.appendEvent(Event{At: now, Actor: sp.AgentID, Via: ViaCoordinator, Entity: "spawn", ID: sp.ID, Change: "exited",
			From: sp.Purpose, To: outcome, Reason: "exit code " + strconv.Itoa(exitCode)})
	})
	return ended, err
}

// attachRunLocked gives an execution record the exit code and output of the process that
// ran it: the spawn log is copied to executions/<id>.log (committed records, git-ignored
// logs). A record still running is closed as failed: the process ended without reporting
// (or was stopped as hung: its outcome starts with "stopped: ").
func (s *Store) attachRunLocked(execID string, sp *Spawn, exitCode int, outcome string) error {
	ex, err := s.Execution(execID)
	if err != nil {
		return err
	}
	if ex.Status == ExecRunning {
		if err := s.finishExecution(execID, ExecFailed, "the agent process exited before report_completed"); err != nil {
			return err
		}
		if ex, err = s.Execution(execID); err != nil {
			return err
		}
	}
	if Interruption(outcome) && ex.Status == ExecFailed {
		// Not the agent's failure: the run was cut short, and its work starts again.
		ex.Interrupted = true
		ex.Summary = "interrupted: " + outcome + "; the work starts again with the next run"
	} else if why, ok := strings.CutPrefix(outcome, "stopped: "); ok && ex.Status == ExecFailed {
		// The coordinator stopped it as hung: the record says so and why, whatever the
		// process's own server wrote as it went down.
		ex.Summary = "aipm run stopped the agent process before report_completed: " + why
	}
	dst := s.path("executions", ex.ID+".log")
	if err := copyFile(s.SpawnLogPath(sp.ID), dst); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	ex.ExitCode = &exitCode
	ex.LogPath = s.Rel(dst)
	ex.UpdatedAt = s.Now()
	ex.Version++
	return engine.WriteJSON(s.executionPath(ex.ID), ex, 0o644)
}

func copyFile(src, dst string) error {
	in, err := engine.OpenRead(src, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := engine.Open(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644, 0)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// AskSilent tells the agent of a running spawn, by a notification to the spawn's latest
// session (or, before it has one, to its purpose), that its process has been silent for
// silent and seems stuck: report progress or call get_next_action, or be stopped after
// grace. round tells one question to the same process from the next (one notification
// each).
func (s *Store) AskSilent(spawnID string, silent, grace time.Duration, round int) (*Notification, error) {
	sp, err := s.Spawn(spawnID)
	if err != nil {
		return nil, err
	}
	lang := s.ProjectLanguage()
	n := Notification{TargetAgentID: sp.AgentID, TargetPurpose: sp.Purpose, Type: NotifyStatusChange, Action: "report_progress",
		Priority: NotifyHigh, TaskID: sp.TaskID, FromAgentID: SystemSender, Key: "silent:" + sp.ID + ":" + strconv.Itoa(round),
		Message: msg.Text(lang, "silent.message", silent), Instruction: msg.Text(lang, "silent.instruction", grace)}
	if k := len(sp.SessionIDs); k > 0 {
		n.TargetSessionID, n.TargetPurpose = sp.SessionIDs[k-1], PurposeAny
	}
	out, _, err := s.AddNotification(Actor{ID: SystemSender, Via: ViaCoordinator}, n)
	return out, err
}
