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
}

// InSubtree reports whether id is root or one of root's descendants.
func (s *Store) InSubtree(root, id string) (bool, error) {
	in := root == id
	err := s.tasks.with(func() {
		// Up the parent chain: as deep as the tree, not as wide. A hand-made cycle ends it.
		seen := map[string]bool{}
		for cur := s.tasks.get(id); !in && cur != nil && cur.ParentID != "" && !seen[cur.ID]; cur = s.tasks.get(cur.ParentID) {
			seen[cur.ID] = true
			in = cur.ParentID == root
		}
	})
	return in, err
}

// ReportCompleted finishes a task session's work: success moves the session's task to done
// (all its sub-tasks must be finished), failed and blocked move it to blocked with the
// summary as reason. Only the session's own task changes — never other queued tasks of the
// agent (anchor defect 9.3.19); the blocked cascade of SetTaskStatus covers its sub-tree.
// A task someone else already blocked or cancelled (an interrupt) is acknowledged without a
// transition. The execution record closes and the session ends, all under one lock.
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
		out = &Completion{Task: t, Previous: t.Status}
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
