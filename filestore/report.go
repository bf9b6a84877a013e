package filestore

import "strings"

// Results a task session reports with report_completed.
const (
	ResultSuccess = "success"
	ResultFailed  = "failed"
	ResultBlocked = "blocked"
)

// Completion is the outcome of ReportCompleted.
type Completion struct {
	Task     *Task
	Previous string
	// Open lists unfinished sub-tasks when a success report was refused.
	Open []*Task
	// Released says the task was no longer the session's (cancelled, or assigned to someone
	// else) when it reported, or that the project was paused: the session ended and the
	// task was left as it was.
	Released bool
	// Paused says the release was the project's pause: the task goes on after the resume.
	Paused bool
}

// InSubtree reports whether id is root or one of root's descendants.
func (s *Store) InSubtree(root, id string) (bool, error) {
	var in bool
	err := s.tasks.With(func() { in = s.inSubtreeLocked(root, id) })
	return in, err
}

// inSubtreeLocked is InSubtree from the index, for a caller holding the tasks cache's
// mutex: up the parent chain, as deep as the tree and not as wide. A hand-made cycle ends
// it.
func (s *Store) inSubtreeLocked(root, id string) bool {
	in := root == id
	seen := map[string]bool{}
	for cur, k := id, s.tasks.KeysOf(id); !in && k != nil && k[tkParent] != "" && !seen[cur]; cur, k = k[tkParent], s.tasks.KeysOf(k[tkParent]) {
		seen[cur] = true
		in = k[tkParent] == root
	}
	return in
}

// ReportCompleted finishes a task session's work: success moves the session's task to done
// (all its sub-tasks must be finished), failed and blocked move it to blocked with the
// summary as reason. Only the session's own task changes — never other queued tasks of the
// agent (anchor defect 9.3.19); the blocked cascade of SetTaskStatus covers its sub-tree.
// A task someone else already blocked (an interrupt) is acknowledged without a transition.
// A task cancelled or assigned to another agent is no longer the session's: the report
// ends the session and leaves the task untouched (Completion.Released). So does a blocked
// or failed report while the project is paused (Completion.Paused): seed 004's interrupt
// flow has the agent report blocked after any interrupt, a pause's too, but a pause only
// stops the work — the task stays in progress, and the coordinator starts a session for
// it again on resume; blocking it would leave it stuck until a person lifted the block. A
// success is work finished before the pause reached the agent and is recorded as usual.
// The execution record closes and the session ends, all under one lock.
func (s *Store) ReportCompleted(sessionID, result, summary string) (*Completion, error) {
	if result != ResultSuccess && result != ResultFailed && result != ResultBlocked {
		return nil, newErr(ErrInvalid, "invalid_argument", "use result success, failed or blocked", "invalid result %q", clip(result))
	}
	if err := ValidateEntityID(PrefixSession, sessionID); err != nil {
		return nil, err
	}
	summary = s.ScrubPaths(summary) // committed: no path of this machine in it
	var out *Completion
	s.warmTasks()
	err := s.locked(func() error {
		se, err := s.readSession(sessionID)
		if err != nil {
			return err
		}
		if se.Purpose != PurposeTask || se.TaskID == "" {
			return newErr(ErrConflict, "task_session_required", "call report_completed from a task session", "session %s has no task", se.ID)
		}
		all, err := s.taskSetLocked()
		if err != nil {
			return err
		}
		t, err := s.Task(se.TaskID)
		if err != nil {
			return err
		}
		actor := Actor{ID: se.AgentID, Via: ViaTool}
		// Set before the status is written: a watcher woken by the status change (a
		// manager waiting for its sub-tasks) reads the summary with it.
		t.CompletionResult, t.CompletionSummary = result, summary
		out = &Completion{Task: t, Previous: t.Status}
		if result != ResultSuccess && !Finished(t.Status) {
			p, err := s.Project()
			if err != nil {
				return err
			}
			out.Paused = p.Status == ProjectPaused
		}
		if t.Status == StatusCancelled || t.AssigneeID != se.AgentID || out.Paused {
			// The end of seed 004's interrupt flow: the session stops, and a task that is no
			// longer its to change stays as its new owner left it. The summary is kept in
			// the session's execution record.
			out.Released = true
			if se.ExecutionID != "" {
				if err := s.finishExecution(se.ExecutionID, ExecFailed, summary); err != nil {
					return err
				}
			}
			return s.updateSessionLocked(se.ID, func(cur *Session) error { return s.endSession(cur, "report_completed") })
		}
		target := StatusBlocked
		if result == ResultSuccess {
			target = StatusDone
		}
		switch {
		case t.Status == target || (result != ResultSuccess && Finished(t.Status)):
			// Already where the report would put it (e.g. the owner blocked or cancelled it
			// while the agent worked): acknowledge, record the summary.
		case result == ResultSuccess && t.Status != StatusInProgress:
			return newErr(ErrConflict, "invalid_status_transition", "the task is "+t.Status+"; report blocked or failed, or ask the owner",
				"task %s is %s and cannot be completed", t.ID, t.Status)
		default:
			if result == ResultSuccess {
				for _, d := range descendants(all, t.ID) {
					if !Finished(d.Status) {
						out.Open = append(out.Open, d)
					}
				}
				if len(out.Open) > 0 {
					var ids []string
					for _, d := range out.Open {
						ids = append(ids, d.ID+" ("+d.Status+")")
					}
					return newErr(ErrConflict, "subtasks_not_finished", "finish or cancel these sub-tasks, then report again",
						"task %s has unfinished sub-tasks: %s", t.ID, strings.Join(ids, ", "))
				}
			}
			reason := summary
			if reason == "" && target == StatusBlocked {
				reason = "reported " + result + " by " + se.AgentID
			}
			ch, err := s.applyStatus(actor, all, t, target, reason)
			if err != nil {
				return err
			}
			out.Task = ch.Task
		}
		out.Task.CompletionResult = result
		out.Task.CompletionSummary = summary
		if err := s.commitTask(actor, out.Task, s.Now(), Event{Change: "completion_reported", To: result, Reason: summary}); err != nil {
			return err
		}
		if se.ExecutionID != "" {
			status := ExecFailed
			if result == ResultSuccess {
				status = ExecCompleted
			}
			if err := s.finishExecution(se.ExecutionID, status, summary); err != nil {
				return err
			}
		}
		return s.updateSessionLocked(se.ID, func(cur *Session) error { return s.endSession(cur, "report_completed") })
	})
	if err != nil {
		if out != nil && len(out.Open) > 0 {
			return out, err // the caller shows the open sub-tasks
		}
		return nil, err
	}
	return out, nil
}
