package filestore

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// A task that starts in a Git repository works on a branch of its own, made from the tip of
// the project's target branch; its code counts only once it is on that target. Landing is
// that record on the task: the seeds' status table is untouched (report_completed still
// makes a task done), and the landing goes on beside it, written by the merge queue
// (cmd/aipm/internal/land). Dependents wait for "landed", not for "done" (DependencyMet).

// Landing states.
const (
	// LandWorking: the task's branch exists and its agent works on it.
	LandWorking = "working"
	// LandQueued: the task is done and waits in the merge queue.
	LandQueued = "queued"
	// LandChecking: the queue brings the branch up to the target and runs the check.
	LandChecking = "checking"
	// LandLanded: its code is on the target (LandedCommit), or it changed nothing.
	LandLanded = "landed"
	// LandConflict and LandCheckFailed: the attempt failed; a rework task (ReworkTaskID)
	// does the work again on the target's new tip, or, past the attempts allowed, a
	// person decides (NeedsHuman).
	LandConflict    = "conflict"
	LandCheckFailed = "check_failed"
	// LandPushed: settings.land is "branch": the checked branch waits on the remote for a
	// forge's pull request to merge it.
	LandPushed = "pushed"
	// LandAbandoned: a person (or a cancel) gave the code up; it never lands.
	LandAbandoned = "abandoned"
)

// LandStates lists the landing states in the order a landing goes through them.
var LandStates = []string{LandWorking, LandQueued, LandChecking, LandPushed, LandLanded, LandConflict, LandCheckFailed, LandAbandoned}

// Landing is how a task's code reaches the target branch.
type Landing struct {
	State string `json:"state"`
	// Target is the branch the code lands on; Branch the task's own (aipm/<task id>),
	// made from Base, a commit of the target.
	Target string `json:"target"`
	Branch string `json:"branch"`
	Base   string `json:"base"`
	// Machine is the machine whose clone holds the branch and its worktree: its queue
	// lands it.
	Machine string `json:"machine,omitempty"`
	// Commit is the task's commit as last checked; LandedCommit the commit on the target
	// that holds its code ("" for a task that changed nothing).
	Commit       string     `json:"commit,omitempty"`
	LandedCommit string     `json:"landed_commit,omitempty"`
	QueuedAt     *time.Time `json:"queued_at,omitempty"`
	LandedAt     *time.Time `json:"landed_at,omitempty"`
	// Attempts counts the failed attempts to land this code, its reworks' included (kept
	// on the original task).
	Attempts int `json:"attempts,omitempty"`
	// ReworkTaskID is the rework made after this task's attempt failed.
	ReworkTaskID string `json:"rework_task_id,omitempty"`
	// NeedsHuman: the attempts allowed are spent (or the queue cannot go on without a
	// person): `aipm land retry` or `aipm land abandon`.
	NeedsHuman bool `json:"needs_human,omitempty"`
	// Detail says what the last step found: the conflicting files, the tail of the
	// check's output, where a pushed branch waits, what holds the queue.
	Detail string `json:"detail,omitempty"`
}

// Final reports whether a landing state ends the landing.
func landFinal(state string) bool { return state == LandLanded || state == LandAbandoned }

// DependencyMet reports whether a dependency lets its dependents start: it is done and
// its code, if it had a branch, is on the target.
func DependencyMet(dt *Task) bool {
	return dt != nil && dt.Status == StatusDone && (dt.Landing == nil || dt.Landing.State == LandLanded)
}

// LandingInFlight reports whether a done task's code is on its way to the target without anyone's
// help: queued, being checked, or done again by a rework after a failed attempt.
func (t *Task) LandingInFlight() bool {
	l := t.Landing
	if t.Status != StatusDone || l == nil || l.NeedsHuman {
		return false
	}
	switch l.State {
	case LandQueued, LandChecking, LandConflict, LandCheckFailed:
		return true
	}
	return false
}

// DependencyState describes a dependency that is not met, as "id (status)" or
// "id (done, landing queued)".
func DependencyState(id string, dt *Task) string {
	switch {
	case dt == nil:
		return id + " (missing)"
	case dt.Status == StatusDone && dt.Landing != nil:
		return id + " (done, landing " + dt.Landing.State + ")"
	}
	return id + " (" + dt.Status + ")"
}

// LandingSummary is a landing in a few words for listings: "landed 1a2b3c4", "queued",
// "check_failed, needs you", or "" for a task without a branch.
func (t *Task) LandingSummary() string {
	l := t.Landing
	if l == nil {
		return ""
	}
	s := l.State
	switch {
	case l.State == LandLanded && l.LandedCommit != "":
		s += " " + shortCommit(l.LandedCommit)
	case l.State == LandLanded:
		s += " (no changes)"
	case l.ReworkTaskID != "" && !l.NeedsHuman:
		s += ", rework " + l.ReworkTaskID
	}
	if l.NeedsHuman {
		s += ", needs you"
	}
	return s
}

func shortCommit(c string) string {
	if len(c) > 10 {
		return c[:10]
	}
	return c
}

// landOnStatus moves a task's landing along with its status: done submits a working
// branch to the queue, cancelled gives it up. Called by setStatus, the one place a
// status changes.
func landOnStatus(t *Task, to string, now time.Time) {
	l := t.Landing
	if l == nil || landFinal(l.State) {
		return
	}
	switch to {
	case StatusDone:
		if l.State == LandWorking {
			l.State, l.QueuedAt, l.Detail = LandQueued, &now, ""
		}
	case StatusCancelled:
		if l.State == LandWorking || l.State == LandQueued {
			l.State, l.Detail = LandAbandoned, "the task was cancelled"
		}
	}
}

// BeginLanding records the branch a task starts on. A task that has one keeps it (a
// restart reuses its worktree).
func (s *Store) BeginLanding(actor Actor, id string, l Landing) (*Task, error) {
	var out *Task
	err := s.locked(func() error {
		t, err := s.Task(id)
		if err != nil {
			return err
		}
		if t.Landing != nil {
			out = t
			return nil
		}
		l.State = LandWorking
		t.Landing = &l
		out = t
		return s.commitTask(actor, t, s.Now(), Event{Change: "landing", To: LandWorking,
			Reason: fmt.Sprintf("branch %s from %s at %s", l.Branch, l.Target, shortCommit(l.Base))})
	})
	return out, err
}

// UpdateLanding changes a task's landing under the lock: change gets the current record
// (never nil: a task without one is refused) and may change it; the write and its history
// event (from the old state to the new) follow.
func (s *Store) UpdateLanding(actor Actor, id string, change func(t *Task, l *Landing) error) (*Task, error) {
	var out *Task
	err := s.locked(func() error {
		t, err := s.Task(id)
		if err != nil {
			return err
		}
		if t.Landing == nil {
			return newErr(ErrConflict, "no_landing", "only a task that started on a branch of its own has a landing",
				"task %s has no branch of its own", id)
		}
		before := *t.Landing
		if err := change(t, t.Landing); err != nil {
			return err
		}
		out = t
		if *t.Landing == before {
			return nil
		}
		return s.commitTask(actor, t, s.Now(), Event{Change: "landing", From: before.State, To: t.Landing.State, Reason: clipDetail(t.Landing.Detail)})
	})
	return out, err
}

func clipDetail(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}

// ReworkTitle is the title of the n-th rework of a task titled title.
func ReworkTitle(title string, n int) string {
	base := title
	if i := strings.LastIndex(title, " (rework "); i >= 0 && strings.HasSuffix(title, ")") {
		base = title[:i]
	}
	return fmt.Sprintf("%s (rework %d)", base, n)
}

// CreateRework makes the task that does failed's work again: same assignee, priority and
// creator, its description the original's, unchanged, then a blank line, then what went
// wrong. It is a top-level task (the original's parent may be finished by now), linked to
// the original (rootID) by rework_of, and started at once when its agent has room (else
// its queue starts it), so that its branch is made from the target's tip then. failed's
// landing names it.
func (s *Store) CreateRework(actor Actor, failedID, rootID, what string) (*Task, error) {
	var out *Task
	err := s.locked(func() error {
		failed, err := s.Task(failedID)
		if err != nil {
			return err
		}
		root, err := s.Task(rootID)
		if err != nil {
			return err
		}
		attempt := 1
		if root.Landing != nil {
			attempt = max(root.Landing.Attempts, 1)
		}
		t, err := s.newTask(actor, NewTask{Title: ReworkTitle(root.Title, attempt), Description: root.Description + "\n\n" + what,
			Status: StatusTodo, Priority: root.Priority, AssigneeID: failed.AssigneeID}, fileTasks{s})
		if err != nil {
			return err
		}
		t.ReworkOf = root.ID
		ids, err := s.mintTaskIDs(1, t.CreatedAt)
		if err != nil {
			return err
		}
		t.ID = ids[0]
		if err := s.saveNewTask(actor, t); err != nil {
			return err
		}
		if failed.Landing != nil {
			failed.Landing.ReworkTaskID = t.ID
			if err := s.commitTask(actor, failed, s.Now(), Event{Change: "landing", From: failed.Landing.State, To: failed.Landing.State, Reason: "rework " + t.ID}); err != nil {
				return err
			}
		}
		if _, err := s.applyStatus(actor, fileTasks{s}, t, StatusInProgress, "rework of "+root.ID); err != nil {
			// The agent has no room: the rework waits in its queue (todo).
			out = t
			return nil
		}
		out, err = s.Task(t.ID)
		return err
	})
	return out, err
}

// LandingRoot is the task whose code a task's landing carries: the original of a rework,
// else the task itself.
func LandingRoot(t *Task) string {
	if t.ReworkOf != "" {
		return t.ReworkOf
	}
	return t.ID
}

// LandStateKnown reports whether state is a landing state.
func LandStateKnown(state string) bool { return slices.Contains(LandStates, state) }
