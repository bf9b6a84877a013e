package filestore

import (
	"slices"
	"strings"
)

// Split is the outcome of SplitTask.
type Split struct {
	Original *Task             // now cancelled
	Tasks    []*Task           // the replacements, in item order
	IDs      map[string]string // local id → task id
	Rewired  []*Task           // tasks that depended on the original and now depend on the replacements
}

// SplitTask replaces a todo or backlog task that has no sub-tasks by two or more sibling
// tasks, all at once under the lock: the replacements inherit the original's parent and
// dependencies (plus their own, by local id), every task that depended on the original
// depends on all replacements instead, and the original is cancelled with a reason naming
// them. Items without an assignee take the original's.
func (s *Store) SplitTask(actor Actor, id string, items []BatchItem) (*Split, error) {
	if len(items) < 2 {
		return nil, newErr(ErrInvalid, "invalid_argument", "give at least two replacement tasks (to rename one task, cancel it and create another)", "split needs at least 2 tasks, got %d", len(items))
	}
	if err := ValidateEntityID(PrefixTask, id); err != nil {
		return nil, err
	}
	s.warmTasks()
	var out *Split
	err := s.locked(func() error {
		all, err := s.taskSetLocked()
		if err != nil {
			return err
		}
		orig := all.task(id)
		if orig == nil {
			return newErr(ErrNotFound, "task_not_found", "check the id with list_tasks", "task %s not found", id)
		}
		if orig.Status != StatusTodo && orig.Status != StatusBacklog {
			return newErr(ErrConflict, "invalid_status_transition", "only a todo or backlog task can be split; block or finish a running one instead",
				"task %s is %s", id, orig.Status)
		}
		if orig.ParentID == "" {
			return newErr(ErrInvalid, "invalid_argument", "split sub-tasks only; add sub-tasks to a top-level task instead", "task %s has no parent", id)
		}
		if kids := descendants(all, id); len(kids) > 0 {
			return newErr(ErrConflict, "has_subtasks", "split its sub-tasks instead, or cancel them first",
				"task %s has %d sub-task(s)", id, len(kids))
		}
		items = slices.Clone(items)
		for i := range items {
			it := &items[i]
			it.Dependencies = append(slices.Clone(orig.Dependencies), it.Dependencies...)
			if it.AssigneeID == "" {
				it.AssigneeID = orig.AssigneeID
			}
			if it.Priority == "" {
				it.Priority = orig.Priority
			}
			if it.Status == "" {
				it.Status = orig.Status
			}
			for _, d := range it.Dependencies {
				if d == id {
					return newErr(ErrInvalid, "invalid_argument", "the replacements cannot depend on the task they replace", "task %q depends on %s", it.LocalID, id)
				}
			}
		}
		tasks, ids, err := s.planBatch(actor, all, orig.ParentID, id, items)
		if err != nil {
			return err
		}
		now := s.Now()
		out = &Split{Tasks: tasks, IDs: ids}
		var newIDs []string
		for _, t := range tasks {
			newIDs = append(newIDs, t.ID)
		}
		for _, t := range all.dependentsOf(id) {
			if t.ID == id {
				continue
			}
			c := *t
			deps := slices.DeleteFunc(slices.Clone(c.Dependencies), func(d string) bool { return d == id })
			c.Dependencies = uniq(append(deps, newIDs...))
			out.Rewired = append(out.Rewired, &c)
		}
		// A replacement may name a task that depended on the original: with the rewiring
		// that would be a loop.
		planned := taskMap{base: all, extra: map[string]*Task{}}
		for _, t := range append(slices.Clone(tasks), out.Rewired...) {
			planned.extra[t.ID] = t
		}
		for _, t := range append(slices.Clone(tasks), out.Rewired...) {
			if p := depPath(planned, t.Dependencies, t.ID); p != nil {
				return newErr(ErrInvalid, "dependency_cycle", "a replacement cannot depend on a task that waits for the original",
					"dependencies would form a cycle: %s", strings.Join(append([]string{t.ID}, p...), " → "))
			}
		}
		for _, t := range tasks {
			if err := s.saveNewTask(actor, t); err != nil {
				return err
			}
		}
		for _, t := range out.Rewired {
			if err := s.commitTask(actor, t, now, Event{Change: "dependencies", To: strings.Join(t.Dependencies, ","), Reason: "split of " + id}); err != nil {
				return err
			}
		}
		c := *orig
		setStatus(&c, actor, StatusCancelled, "split into "+strings.Join(newIDs, ", "), now)
		if err := s.commitTask(actor, &c, now, Event{Change: "status", From: orig.Status, To: StatusCancelled, Reason: "split into " + strings.Join(newIDs, ", ")}); err != nil {
			return err
		}
		out.Original = &c
		return nil
	})
	return out, err
}
