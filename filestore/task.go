package filestore

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/aipm/aipm/filestore/internal/engine"
)

// Task statuses.
const (
	StatusBacklog    = "backlog"
	StatusTodo       = "todo"
	StatusInProgress = "in_progress"
	StatusBlocked    = "blocked"
	StatusDone       = "done"
	StatusCancelled  = "cancelled"
)

// Statuses lists the task statuses in workflow order.
var Statuses = []string{StatusBacklog, StatusTodo, StatusInProgress, StatusBlocked, StatusDone, StatusCancelled}

// Priorities lists the task priorities, lowest first.
var Priorities = []string{"low", "medium", "high", "urgent"}

// Approval states of a task requested by an agent (request_task).
const (
	ApprovalApproved = "approved"
	ApprovalPending  = "pending_approval"
	ApprovalRejected = "rejected"
)

// transitions is the status table of SPEC §4.3: transitions[from] holds the allowed targets.
// A status to itself is never a transition.
var transitions = map[string][]string{
	StatusBacklog:    {StatusTodo, StatusCancelled},
	StatusTodo:       {StatusBacklog, StatusInProgress, StatusBlocked, StatusCancelled},
	StatusInProgress: {StatusBlocked, StatusDone, StatusCancelled},
	StatusBlocked:    {StatusTodo, StatusInProgress, StatusCancelled},
	StatusDone:       {},
	StatusCancelled:  {},
}

// CanTransition reports whether the table allows from → to.
func CanTransition(from, to string) bool {
	return slices.Contains(transitions[from], to)
}

// Finished reports whether a status is final (done or cancelled).
func Finished(status string) bool { return status == StatusDone || status == StatusCancelled }

// Task is tasks/<id>.json.
type Task struct {
	ID            string   `json:"id"`
	ProjectID     string   `json:"project_id"`
	Title         string   `json:"title"`
	Description   string   `json:"description"`
	Status        string   `json:"status"`
	Priority      string   `json:"priority"`
	AssigneeID    string   `json:"assignee_id"`
	CreatedBy     string   `json:"created_by"`
	ParentID      string   `json:"parent_id"`
	Dependencies  []string `json:"dependencies"`
	BlockedReason string   `json:"blocked_reason"`
	// CascadeFrom is the ancestor whose block blocked this task along with it, and
	// StatusBeforeCascade the status the task had then; both are set only by that cascade
	// and cleared by any later status change. Unblocking the ancestor returns the task to
	// that status (see applyStatusEvent and LiftCascades).
	CascadeFrom         string     `json:"cascade_from,omitempty"`
	StatusBeforeCascade string     `json:"status_before_cascade,omitempty"`
	StatusChangedBy     string     `json:"status_changed_by"`
	StatusChangedAt     *time.Time `json:"status_changed_at"`
	CompletionResult    string     `json:"completion_result"`
	CompletionSummary   string     `json:"completion_summary"`
	RequesterID         string     `json:"requester_id"`
	Approval            string     `json:"approval"`
	ApprovedBy          string     `json:"approved_by"`
	RejectedReason      string     `json:"rejected_reason"`
	CreatedAt           time.Time  `json:"created_at"`
	UpdatedAt           time.Time  `json:"updated_at"`
	CompletedAt         *time.Time `json:"completed_at"`
	// ReworkOf is the task whose code this one does again, after that code failed to
	// land (a conflict, a failed check); when this one lands, that one counts as landed.
	ReworkOf string `json:"rework_of,omitempty"`
	// Landing is how the task's code reaches the target branch: set when the task starts
	// on a branch of its own (landing.go), nil otherwise.
	Landing *Landing `json:"landing,omitempty"`
	Version int      `json:"version"`
	// Conflict is set on a task whose file holds Git's conflict markers (two clones
	// changed one field, and no rule decides): the task is read as our side, listed and
	// counted as it, marked with the fields in conflict and their other side, and refused
	// any write until a person settles it (`aipm resolve`). It is never read from a file:
	// a task file that carries it is read without it.
	Conflict *TaskConflict `json:"conflict,omitempty"`
}

// TaskConflict is what a conflicted task file holds besides our side.
type TaskConflict = EntityConflict

func (s *Store) taskPath(id string) string { return s.path("tasks", id+".json") }

// TaskFile is the path of a task's file.
func (s *Store) TaskFile(id string) string { return s.taskPath(id) }

// Problem is what makes a task unusable by the rules, in the words `aipm doctor` uses for
// it, or "" for a sound task: a status outside the transition table, left by a hand edit or
// a bad merge. Every view reports such a task with these words.
func (t *Task) Problem() string { return statusProblem(t.Status) }

func statusProblem(status string) string {
	if slices.Contains(Statuses, status) {
		return ""
	}
	return fmt.Sprintf("invalid status %q (want %s)", status, strings.Join(Statuses, ", "))
}

// Task reads one task from its file.
func (s *Store) Task(id string) (*Task, error) {
	if err := ValidateEntityID(PrefixTask, id); err != nil {
		return nil, err
	}
	if t := s.tasks.CachedCopy(id, cloneTask); t != nil {
		return t, nil
	}
	return s.readTask(id)
}

func (s *Store) readTask(id string) (*Task, error) {
	var t Task
	c, err := readEntityFile(s, s.taskPath(id), &t)
	t.Conflict = c
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, newErr(ErrNotFound, "task_not_found", "list tasks with list_tasks", "task %s not found", id)
		}
		return nil, err
	}
	t.normalize()
	// The file name is the task's identity; an "id" inside that says otherwise (a hand
	// edit, a stranger's commit) must not make an action on this task act on another.
	// doctor reports the mismatch.
	t.ID = id
	return &t, nil
}

// normalize fills what a hand-written file may leave out, so rules see sane values.
func (t *Task) normalize() {
	if t.Dependencies == nil {
		t.Dependencies = []string{}
	}
	if t.Priority == "" {
		t.Priority = "medium"
	}
	if t.Approval == "" {
		t.Approval = ApprovalApproved
	}
}

// NewTask describes a task to create.
type NewTask struct {
	Title        string
	Description  string
	Priority     string // default medium
	Status       string // backlog (default) or todo
	AssigneeID   string
	ParentID     string
	Dependencies []string
	RequesterID  string
	Approval     string // default approved
}

// CreateTask creates a task under the rules of SPEC §4.3: the parent, the assignee and every
// dependency must exist; the creator is the real actor.
func (s *Store) CreateTask(actor Actor, n NewTask) (*Task, error) {
	// A new task's rules look only at its parent and dependencies: read from their
	// files, so a command creating a task does not load the project's every task. A
	// one-shot command that names tasks by their short ids loads them all the same (from
	// the index file), and then the new id's sequence comes from them, not from a listing
	// of tasks/ under the lock: it loads them first, unless the last mint left the
	// sequence where the next one reads it (seqFile).
	if s.eng.IsOneShot() && !s.hasSeqFile() {
		s.warmTasks()
	}
	var t *Task
	err := s.locked(func() error {
		var err error
		t, err = s.newTask(actor, n, fileTasks{s})
		if err != nil {
			return err
		}
		ids, err := s.mintTaskIDs(1, t.CreatedAt)
		if err != nil {
			return err
		}
		t.ID = ids[0]
		return s.saveNewTask(actor, t)
	})
	return t, err
}

func (s *Store) saveNewTask(actor Actor, t *Task) error {
	if err := s.writeTask(t); err != nil {
		return err
	}
	return s.appendEvent(Event{At: t.CreatedAt, Actor: actor.ID, Via: actor.Via, Entity: "task", ID: t.ID,
		Change: "created", To: t.Status, RequesterID: t.RequesterID})
}

// newTask validates n against the known tasks and returns the task to write, without its
// id: the caller mints it under the store lock (mintTaskIDs).
func (s *Store) newTask(actor Actor, n NewTask, all taskSet) (*Task, error) {
	title := strings.TrimSpace(n.Title)
	if title == "" {
		return nil, newErr(ErrInvalid, "invalid_argument", "give the task a short title", "task title is empty")
	}
	if len([]rune(title)) > 200 {
		return nil, newErr(ErrInvalid, "invalid_argument", "keep the title under 200 characters; put details in the description", "task title is too long (%d characters)", len([]rune(title)))
	}
	if n.Priority == "" {
		n.Priority = "medium"
	}
	if !slices.Contains(Priorities, n.Priority) {
		return nil, newErr(ErrInvalid, "invalid_argument", "use one of "+strings.Join(Priorities, ", "), "invalid priority %q", clip(n.Priority))
	}
	if n.Status == "" {
		n.Status = StatusBacklog
	}
	if n.Status != StatusBacklog && n.Status != StatusTodo {
		return nil, newErr(ErrInvalid, "invalid_argument", "create the task as backlog or todo, then change its status", "a new task cannot start as %q", clip(n.Status))
	}
	if n.Approval == "" {
		n.Approval = ApprovalApproved
	}
	p, err := s.ProjectView()
	if err != nil {
		return nil, err
	}
	if n.ParentID != "" {
		if err := ValidateEntityID(PrefixTask, n.ParentID); err != nil {
			return nil, err
		}
		parent := all.task(n.ParentID)
		if parent == nil {
			return nil, newErr(ErrNotFound, "task_not_found", "check the parent task id with list_tasks", "parent task %s not found", n.ParentID)
		}
		if Finished(parent.Status) {
			return nil, newErr(ErrConflict, "invalid_parent", "add sub-tasks only to unfinished tasks", "parent task %s is %s", parent.ID, parent.Status)
		}
	}
	if n.AssigneeID != "" {
		if _, err := s.Member(n.AssigneeID); err != nil {
			return nil, err
		}
	}
	deps, err := checkDeps("", n.Dependencies, all)
	if err != nil {
		return nil, err
	}
	now := s.Now()
	return &Task{ProjectID: p.ID, Title: title, Description: n.Description,
		Status: n.Status, Priority: n.Priority, AssigneeID: n.AssigneeID, CreatedBy: actor.ID, ParentID: n.ParentID,
		Dependencies: deps, StatusChangedBy: actor.ID, StatusChangedAt: &now, RequesterID: n.RequesterID,
		Approval: n.Approval, CreatedAt: now, UpdatedAt: now, Version: 1}, nil
}

// checkDeps validates a dependency list for task id (empty for a new task): every
// dependency exists, none is the task itself, no duplicates, and the graph stays acyclic.
func checkDeps(id string, deps []string, all taskSet) ([]string, error) {
	out := []string{}
	for _, d := range deps {
		if err := ValidateEntityID(PrefixTask, d); err != nil {
			return nil, err
		}
		if d == id {
			return nil, newErr(ErrInvalid, "invalid_dependency", "remove the task from its own dependencies", "task %s cannot depend on itself", id)
		}
		if all.task(d) == nil {
			return nil, newErr(ErrNotFound, "task_not_found", "create the dependency first, or check its id with list_tasks", "dependency %s not found", d)
		}
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	if id != "" {
		// A cycle exists iff id is reachable from one of its new dependencies.
		if path := depPath(all, out, id); path != nil {
			return nil, newErr(ErrInvalid, "dependency_cycle", "drop one of these dependencies so the graph has no loop",
				"dependencies would form a cycle: %s", strings.Join(append([]string{id}, path...), " → "))
		}
	}
	return out, nil
}

// depPath returns a dependency chain from one of starts to target, or nil.
func depPath(all taskSet, starts []string, target string) []string {
	seen := map[string]bool{}
	var walk func(id string) []string
	walk = func(id string) []string {
		if id == target {
			return []string{id}
		}
		if seen[id] {
			return nil
		}
		seen[id] = true
		t := all.task(id)
		if t == nil {
			return nil
		}
		for _, d := range t.Dependencies {
			if p := walk(d); p != nil {
				return append([]string{id}, p...)
			}
		}
		return nil
	}
	for _, st := range starts {
		if p := walk(st); p != nil {
			return p
		}
	}
	return nil
}

// StatusChange is the result of SetTaskStatus: the task and every task changed with it by
// cascade.
type StatusChange struct {
	Task     *Task
	Previous string
	Cascaded []*Task
}

// SetTaskStatus moves a task to a new status under the rules of SPEC §4.3, for every writer:
// the transition table; → in_progress needs an assignee, all dependencies done, the assignee
// under max_parallel_tasks top-level tasks in progress, and an approval that is neither
// pending nor rejected; → done needs every sub-task done or cancelled; → blocked records
// the reason and blocks the unfinished descendants; → cancelled cancels them. The actor is
// recorded as status_changed_by and in the history.
func (s *Store) SetTaskStatus(actor Actor, id, to, reason string) (*StatusChange, error) {
	// Only some changes look at other tasks than the dependencies (read from their files):
	// done and the cascades at the sub-tree, a top-level start at the assignee's tasks.
	// Those bring the index up to date before taking the lock.
	if cur, err := s.Task(id); err == nil && (to != StatusInProgress || cur.ParentID == "") {
		s.warmTasks()
	}
	var ch *StatusChange
	err := s.locked(func() error {
		var all taskSet = fileTasks{s}
		t, err := s.Task(id) // not from the index: a corrupt file must surface as an error
		if err != nil {
			return err
		}
		ch, err = s.applyStatus(actor, all, t, to, reason)
		return err
	})
	return ch, err
}

func (s *Store) applyStatus(actor Actor, all taskSet, t *Task, to, reason string) (*StatusChange, error) {
	return s.applyStatusEvent(actor, all, t, to, reason, Event{})
}

// applyStatusEvent is the one validated status change: the rules of checkStatus, then the
// task and its cascade (→ blocked and → cancelled reach the unfinished descendants) written
// with one history event each. tmpl carries what the change came with — requester,
// conversation, other fields changed in the same write — into those events. The caller
// holds the lock.
//
// Each write leaves the store within the rules, so that a reader between two writes, or
// a store left by a writer killed between them, never has a task running under a blocked
// one: a cascade down is written from the deepest sub-task up and the task itself last,
// and a lift (liftCascade) goes from the top down after the task. A block killed part-way
// leaves sub-tasks blocked by a cascade whose cause is not blocked, which LiftCascades
// returns to where they were; a cancel killed part-way leaves the task unfinished, and
// cancelling it again finishes the cascade.
func (s *Store) applyStatusEvent(actor Actor, all taskSet, t *Task, to, reason string, tmpl Event) (*StatusChange, error) {
	if err := s.checkStatus(all, t, to); err != nil {
		return nil, err
	}
	now := s.Now()
	ch := &StatusChange{Task: t, Previous: t.Status}
	reason = s.ScrubPaths(reason) // committed: no path of this machine in it
	if to == StatusBlocked || to == StatusCancelled {
		cascaded, err := s.cascadeDown(actor, all, t, to, reason, now, tmpl)
		if err != nil {
			return nil, err
		}
		ch.Cascaded = cascaded
	}
	setStatus(t, actor, to, reason, now)
	ev := tmpl
	ev.Change, ev.From, ev.To, ev.Reason = "status", ch.Previous, to, reason
	if err := s.commitTask(actor, t, now, ev); err != nil {
		return nil, err
	}
	if ch.Previous == StatusBlocked && (to == StatusTodo || to == StatusInProgress) {
		lifted, err := s.liftCascade(actor, all, t, now, tmpl)
		if err != nil {
			return nil, err
		}
		ch.Cascaded = lifted
	}
	return ch, nil
}

// cascadeDown blocks or cancels (to) the unfinished descendants of t along with it,
// writing the deepest first, and returns them from the top down. A descendant the table
// does not let go to "to" (backlog cannot be blocked; done stays done) stays as it is.
// The caller writes t itself afterwards and holds the lock.
func (s *Store) cascadeDown(actor Actor, all taskSet, t *Task, to, reason string, now time.Time, tmpl Event) ([]*Task, error) {
	var out []*Task
	for _, d := range descendants(all, t.ID) {
		if CanTransition(d.Status, to) {
			out = append(out, d)
		}
	}
	why := fmt.Sprintf("parent task %s %s", t.ID, to)
	if reason != "" {
		why += ": " + reason
	}
	for _, d := range slices.Backward(out) {
		prev := d.Status
		setStatus(d, actor, to, why, now)
		if to == StatusBlocked {
			d.CascadeFrom, d.StatusBeforeCascade = t.ID, prev
		}
		cev := Event{Change: "status", From: prev, To: to, Reason: why, RequesterID: tmpl.RequesterID, ConversationID: tmpl.ConversationID}
		if err := s.commitTask(actor, d, now, cev); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// liftCascade undoes the cascade of t's block now that t is unblocked: every descendant
// still blocked by that cascade (and by nothing since) returns to the status it had, or
// to todo when it was in progress and t only returns to todo. A descendant blocked for its
// own reason, or moved since, stays as it is. The caller holds the lock.
func (s *Store) liftCascade(actor Actor, all taskSet, t *Task, now time.Time, tmpl Event) ([]*Task, error) {
	var out []*Task
	// From the top down, as descendants lists them: each sub-task runs again only once
	// the tasks above it are no longer blocked, so no one reading between two writes,
	// and no store left by a writer killed between them, has a task in progress under a
	// blocked one (the rule Check holds). A writer killed part-way leaves sub-tasks still
	// blocked by a cascade whose cause is gone, which LiftCascades lifts.
	for _, d := range descendants(all, t.ID) {
		if d.Status != StatusBlocked || d.CascadeFrom != t.ID {
			continue
		}
		back := d.StatusBeforeCascade
		if back != StatusTodo && back != StatusInProgress {
			back = StatusTodo
		}
		if back == StatusInProgress && t.Status != StatusInProgress {
			back = StatusTodo
		}
		why := fmt.Sprintf("parent task %s %s: its block no longer applies", t.ID, t.Status)
		setStatus(d, actor, back, "", now)
		cev := Event{Change: "status", From: StatusBlocked, To: back, Reason: why, RequesterID: tmpl.RequesterID, ConversationID: tmpl.ConversationID}
		if err := s.commitTask(actor, d, now, cev); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// LiftCascades lifts the cascaded blocks whose cause is gone although no status change
// through aipm said so: the ancestor was unblocked by hand in its file (or by a merge).
// tasks is what the caller last read, to find candidates without another scan; each is
// checked again under the lock. It returns how many tasks it unblocked.
func (s *Store) LiftCascades(tasks []*Task) (int, error) {
	status := map[string]string{}
	for _, t := range tasks {
		status[t.ID] = t.Status
	}
	var sources []string
	for _, t := range tasks {
		if t.Status == StatusBlocked && t.CascadeFrom != "" && cascadeGone(status[t.CascadeFrom]) && !slices.Contains(sources, t.CascadeFrom) {
			sources = append(sources, t.CascadeFrom)
		}
	}
	if len(sources) == 0 {
		return 0, nil
	}
	n := 0
	err := s.locked(func() error {
		all, err := s.taskSetLocked()
		if err != nil {
			return err
		}
		for _, id := range sources {
			src := all.task(id)
			if src == nil || !cascadeGone(src.Status) {
				continue
			}
			lifted, err := s.liftCascade(Actor{ID: "system", Via: ViaFile}, all, src, s.Now(), Event{})
			if err != nil {
				return err
			}
			n += len(lifted)
		}
		return nil
	})
	return n, err
}

// cascadeGone reports whether an ancestor in this status no longer holds its cascade.
func cascadeGone(status string) bool { return status == StatusTodo || status == StatusInProgress }

func setStatus(t *Task, actor Actor, to, reason string, now time.Time) {
	t.Status = to
	t.StatusChangedBy = actor.ID
	t.StatusChangedAt = &now
	t.UpdatedAt = now
	t.BlockedReason = ""
	t.CascadeFrom, t.StatusBeforeCascade = "", ""
	if to == StatusBlocked {
		t.BlockedReason = reason
		if t.BlockedReason == "" {
			t.BlockedReason = "blocked by " + actor.ID
		}
	}
	if to == StatusDone {
		t.CompletedAt = &now
	}
	landOnStatus(t, to, now)
}

// commitTask is the one way a changed task reaches the disk: stamp updated_at, bump the
// version, write atomically, and record ev (who, when and which task filled in) in the
// history. The caller holds the lock. One version per event keeps history and files in
// step.
func (s *Store) commitTask(actor Actor, t *Task, now time.Time, ev Event) error {
	t.UpdatedAt = now
	t.Version++
	if err := s.writeTask(t); err != nil {
		return err
	}
	ev.At, ev.Actor, ev.Via, ev.Entity, ev.ID = now, actor.ID, actor.Via, "task", t.ID
	s.noteWrote(t, nil)
	if err := s.appendEvent(ev); err != nil {
		return err
	}
	s.noteWrote(t, &ev)
	return nil
}

// writeTask writes a task file and tells the caches of every process (the journal) and of
// this one. The caller holds the lock.
func (s *Store) writeTask(t *Task) error {
	if t.Conflict != nil {
		return conflictedTaskError(s, t)
	}
	return engine.WriteEntity(s.tasks, t.ID, cloneTask(t))
}

// conflictedTaskError refuses a write to a task whose file holds a merge conflict: the
// write would settle the conflict by our side without a word.
func conflictedTaskError(s *Store, t *Task) *Error {
	return conflictedError(s, "task", t.ID, s.taskPath(t.ID), t.Conflict.String(t))
}

// conflictedError refuses a write to an entity (kind, id) whose file holds a merge
// conflict (what says the fields with both values).
func conflictedError(s *Store, kind, id, path, what string) *Error {
	rel := s.Rel(path)
	return newErr(ErrConflict, kind+"_conflicted",
		fmt.Sprintf("a person settles it: `aipm resolve %s --ours` or `--theirs` (or edit the file), then the change can be made", rel),
		"%s %s has an unresolved merge conflict in %s: it is left as it is until it is settled", kind, id, what)
}

// StatusMove is one status a task's table row lists, and whether the rules let the task
// move there now: Refusal is the error SetTaskStatus would return (nil when allowed).
type StatusMove struct {
	Status  string
	Refusal *Error
}

// StatusMoves lists the statuses the table allows from the task's status, in workflow
// order, each with the refusal SetTaskStatus would give now: the same checks, without
// the lock or a write, so that a person is offered only the moves that will be taken
// (the answer may change before they choose; SetTaskStatus decides). A task whose file
// is broken has no moves.
func (s *Store) StatusMoves(id string) ([]StatusMove, error) {
	t, err := s.Task(id)
	if err != nil {
		return nil, err
	}
	if statusProblem(t.Status) != "" {
		return []StatusMove{}, nil
	}
	s.warmTasks()
	all := fileTasks{s}
	out := []StatusMove{}
	for _, to := range Statuses {
		if !CanTransition(t.Status, to) {
			continue
		}
		m := StatusMove{Status: to}
		if err := s.checkStatus(all, t, to); err != nil {
			var fe *Error
			if !errors.As(err, &fe) {
				return nil, err
			}
			m.Refusal = fe
		}
		out = append(out, m)
	}
	return out, nil
}

// checkStatus applies the transition table and the entry rules of the target status.
func (s *Store) checkStatus(all taskSet, t *Task, to string) error {
	if !slices.Contains(Statuses, to) {
		return newErr(ErrInvalid, "invalid_status", "use one of "+strings.Join(Statuses, ", "), "invalid status %q", clip(to))
	}
	if p := statusProblem(t.Status); p != "" {
		// Broken by hand: no transition applies until a human repairs the file.
		return newErr(ErrConflict, "task_file_invalid", "a human must repair the file by hand (aipm doctor lists it)",
			"task %s cannot change status: tasks/%s.json: %s", t.ID, t.ID, p)
	}
	if t.Status == to {
		return newErr(ErrConflict, "invalid_status_transition", "the task already has this status; nothing to do", "task %s is already %s", t.ID, to)
	}
	if !CanTransition(t.Status, to) {
		allowed := transitions[t.Status]
		hint := "a " + t.Status + " task is final and cannot change"
		if len(allowed) > 0 {
			hint = "from " + t.Status + " a task can move to " + strings.Join(allowed, ", ")
		}
		return newErr(ErrConflict, "invalid_status_transition", hint, "invalid status transition from %s to %s (task %s)", t.Status, to, t.ID)
	}
	switch to {
	case StatusInProgress:
		if t.AssigneeID == "" {
			return newErr(ErrConflict, "assignee_required", "assign the task first (assign_task)", "task %s has no assignee and cannot start", t.ID)
		}
		switch t.Approval {
		case ApprovalPending:
			return newErr(ErrConflict, "approval_required", "an ancestor of the assignee must approve it first (approve_task_request)", "task %s is pending approval and cannot start", t.ID)
		case ApprovalRejected:
			return newErr(ErrConflict, "task_rejected", "a rejected request cannot start; create a new request if it is still needed", "task %s was rejected and cannot start", t.ID)
		}
		var open []string
		for _, d := range t.Dependencies {
			if dt := all.task(d); !DependencyMet(dt) {
				open = append(open, DependencyState(d, dt))
			}
		}
		if len(open) > 0 {
			return newErr(ErrConflict, "dependencies_not_done", "finish the dependencies first (a done task's code must also have landed on the target branch)",
				"task %s depends on unfinished tasks: %s", t.ID, strings.Join(open, ", "))
		}
		if t.ParentID == "" {
			a, err := s.Agent(t.AssigneeID)
			if err != nil {
				return err
			}
			n := 0
			for _, o := range all.assignedTo(t.AssigneeID) {
				if o.ID != t.ID && o.ParentID == "" && o.Status == StatusInProgress {
					n++
				}
			}
			if n >= a.MaxParallel() {
				return newErr(ErrConflict, "max_parallel_tasks_reached", "leave it todo: `aipm run` starts it when the agent has room (its queue); or finish or block one of the agent's running tasks first",
					"agent %s already has %d top-level task(s) in progress (max_parallel_tasks %d)", a.ID, n, a.MaxParallel())
			}
		}
	case StatusDone:
		var open []string
		for _, d := range descendants(all, t.ID) {
			if !Finished(d.Status) {
				open = append(open, d.ID)
			}
		}
		if len(open) > 0 {
			return newErr(ErrConflict, "subtasks_not_finished", "finish or cancel the sub-tasks first", "task %s has unfinished sub-tasks: %s", t.ID, strings.Join(open, ", "))
		}
	}
	return nil
}

// AssignTask sets or clears (assignee "") a task's assignee. The assignee must be an active
// project member. A task in progress is not reassigned: its session would be orphaned.
func (s *Store) AssignTask(actor Actor, id, assignee string) (*Task, error) {
	var t *Task
	err := s.locked(func() error {
		var err error
		t, err = s.Task(id)
		if err != nil {
			return err
		}
		if assignee != "" {
			a, err := s.Member(assignee)
			if err != nil {
				return err
			}
			if a.Status != AgentActive {
				return newErr(ErrConflict, "agent_not_active", "assign to an active agent", "agent %s is %s", a.ID, a.Status)
			}
		}
		if t.Status == StatusInProgress && assignee != t.AssigneeID {
			return newErr(ErrConflict, "task_in_progress", "block the task first, then reassign it", "task %s is in progress and cannot be reassigned", t.ID)
		}
		if Finished(t.Status) {
			return newErr(ErrConflict, "task_finished", "finished tasks keep their assignee", "task %s is %s", t.ID, t.Status)
		}
		prev := t.AssigneeID
		if prev == assignee {
			return nil
		}
		t.AssigneeID = assignee
		return s.commitTask(actor, t, s.Now(), Event{Change: "assignee", From: prev, To: assignee})
	})
	return t, err
}

// SetDependencies replaces a task's dependencies, refusing unknown tasks, self-references
// and cycles.
func (s *Store) SetDependencies(actor Actor, id string, deps []string) (*Task, error) {
	s.warmTasks()
	var t *Task
	err := s.locked(func() error {
		all, err := s.taskSetLocked()
		if err != nil {
			return err
		}
		if t, err = s.Task(id); err != nil {
			return err
		}
		clean, err := checkDeps(t.ID, deps, all)
		if err != nil {
			return err
		}
		t.Dependencies = clean
		return s.commitTask(actor, t, s.Now(), Event{Change: "dependencies", To: strings.Join(clean, ",")})
	})
	return t, err
}
