package filestore

import (
	"errors"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/aipm/aipm/filestore/internal/engine"
)

// Execution record statuses.
const (
	ExecRunning   = "running"
	ExecCompleted = "completed"
	ExecFailed    = "failed"
)

// Execution is executions/<id>.json: one task session's work on a task, opened once per
// session (not per call) and closed by report_completed or by the session ending.
type Execution struct {
	ID              string     `json:"id"`
	TaskID          string     `json:"task_id"`
	AgentID         string     `json:"agent_id"`
	SessionID       string     `json:"session_id"`
	Purpose         string     `json:"purpose"`
	Status          string     `json:"status"`
	StartedAt       time.Time  `json:"started_at"`
	CompletedAt     *time.Time `json:"completed_at"`
	DurationSeconds float64    `json:"duration_seconds"`
	ExitCode        *int       `json:"exit_code"`
	LogPath         string     `json:"log_path"`
	Summary         string     `json:"summary"`
	// Interrupted marks a failed run whose process its coordinator stopped while shutting
	// down (or the next coordinator stopped after its coordinator died): not the agent's
	// failure, and not something a person must act on.
	Interrupted bool `json:"interrupted,omitempty"`
	// Usage is the session's tool calls and their bytes, from authenticate on; written
	// when the record closes and settled after the closing call.
	Usage
	UpdatedAt time.Time `json:"updated_at"`
	Version   int       `json:"version"`
}

func (s *Store) executionPath(id string) string { return s.path("executions", id+".json") }

// StartExecution returns the execution record of a task session, creating it on the first
// call only.
func (s *Store) StartExecution(sessionID string) (*Execution, error) {
	// Every get_my_task of a task session asks, and only the first creates the record: a
	// session that names its record already (a name never changed once written) is
	// answered from the files, without the store lock.
	if se, err := s.readSession(sessionID); err == nil && se.Purpose == PurposeTask && se.TaskID != "" && se.ExecutionID != "" {
		if ex, err := s.Execution(se.ExecutionID); err == nil {
			return ex, nil
		}
	}
	var ex *Execution
	err := s.locked(func() error {
		return s.updateSessionLocked(sessionID, func(se *Session) error {
			if se.Purpose != PurposeTask || se.TaskID == "" {
				return newErr(ErrConflict, "task_session_required", "call this from a task session", "session %s has no task", se.ID)
			}
			if se.ExecutionID != "" {
				var err error
				ex, err = s.Execution(se.ExecutionID)
				if err != nil {
					return err
				}
				return errNoChange
			}
			now := s.Now()
			ex = &Execution{ID: NewID(PrefixExecution, now), TaskID: se.TaskID, AgentID: se.AgentID, SessionID: se.ID,
				Purpose: se.Purpose, Status: ExecRunning, StartedAt: now, UpdatedAt: now, Version: 1}
			if err := engine.WriteJSON(s.executionPath(ex.ID), ex, 0o644); err != nil {
				return err
			}
			se.ExecutionID = ex.ID
			return s.appendEvent(Event{At: now, Actor: se.AgentID, Via: ViaTool, Entity: "execution", ID: ex.ID, Change: "started", To: se.TaskID})
		})
	})
	return ex, err
}

// Execution reads one execution record.
func (s *Store) Execution(id string) (*Execution, error) {
	if err := ValidateEntityID(PrefixExecution, id); err != nil {
		return nil, err
	}
	var ex Execution
	if err := s.readJSON(s.executionPath(id), &ex); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, newErr(ErrNotFound, "execution_not_found", "list your runs with get_my_execution_history", "execution %s not found", id)
		}
		return nil, err
	}
	ex.ID = id // the file name is the identity, whatever the file claims
	return &ex, nil
}

// Executions lists execution records of an agent ("" for all), newest first.
func (s *Store) Executions(agentID string) ([]*Execution, error) {
	entries, err := engine.ReadDir(s.path("executions"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var out []*Execution
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || ValidateEntityID(PrefixExecution, id) != nil {
			continue
		}
		ex, err := s.Execution(id)
		if err != nil {
			continue
		}
		if agentID == "" || ex.AgentID == agentID {
			out = append(out, ex)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID > out[j].ID })
	return out, nil
}

// finishExecution closes a running record; the caller holds the lock.
func (s *Store) finishExecution(id, status, summary string) error {
	ex, err := s.Execution(id)
	if err != nil {
		return err
	}
	if ex.Status != ExecRunning {
		return nil
	}
	now := s.Now()
	ex.Status = status
	ex.CompletedAt = &now
	ex.DurationSeconds = now.Sub(ex.StartedAt).Seconds()
	ex.Summary = summary
	if u, err := s.SessionUsage(ex.SessionID); err == nil {
		ex.Usage = u
	}
	ex.UpdatedAt = now
	ex.Version++
	if err := engine.WriteJSON(s.executionPath(ex.ID), ex, 0o644); err != nil {
		return err
	}
	return s.appendEvent(Event{At: now, Actor: ex.AgentID, Via: ViaTool, Entity: "execution", ID: ex.ID, Change: "finished", From: ExecRunning, To: status})
}

// LogPage is a window of an execution's captured output.
type LogPage struct {
	Path       string   // relative to the repository root
	Lines      []string // the returned lines
	TotalLines int
	Offset     int // index of the first returned line
	// Truncated says there is more to read in the direction of reading: lines after the page
	// for a read from offset (false once a page reaches the end of the log), lines before
	// it for a tail (seed 000's example: the last 100 of 250 lines are truncated).
	Truncated bool
}

// ExecutionLog reads the captured output of an execution, executions/<id>.log: the last
// tail lines, or limit lines from offset when offset >= 0. A missing log is an empty page
// (the agent may not have printed anything yet). The path never comes from the record, so a
// hand-edited log_path cannot point outside the store.
func (s *Store) ExecutionLog(id string, tail, offset, limit int) (*LogPage, error) {
	if err := ValidateEntityID(PrefixExecution, id); err != nil {
		return nil, err
	}
	path := s.path("executions", id+".log")
	page := &LogPage{Path: s.Rel(path), Lines: []string{}}
	data, err := engine.ReadFile(path, engine.MaxJSONLFile)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	text := strings.TrimSuffix(string(data), "\n")
	var lines []string
	if text != "" {
		lines = strings.Split(text, "\n")
	}
	page.TotalLines = len(lines)
	start, end := 0, len(lines)
	if offset >= 0 {
		start = min(offset, len(lines))
		end = min(start+limit, len(lines))
	} else if tail < len(lines) {
		start = len(lines) - tail
	}
	page.Offset = start
	page.Lines = append(page.Lines, lines[start:end]...)
	if offset >= 0 {
		page.Truncated = end < len(lines)
	} else {
		page.Truncated = start > 0
	}
	return page, nil
}
