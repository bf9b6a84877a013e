package filestore

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// TaskEdit is a change of a task's own fields by a human (aipm task edit): nil leaves a
// field as it is. Dependencies replaces the whole list.
type TaskEdit struct {
	Title        *string
	Description  *string
	Priority     *string
	Dependencies *[]string
}

// EditTask changes a task's title, description, priority or dependencies under the rules
// the tools apply: a non-empty title under 200 characters, a known priority, dependencies
// that exist and form no cycle, and no change to a finished task. A field given with its
// current value is not a change; all changes are one write and one history event naming
// the fields. It returns the task and the fields changed.
func (s *Store) EditTask(actor Actor, id string, e TaskEdit) (*Task, []string, error) {
	if err := ValidateEntityID(PrefixTask, id); err != nil {
		return nil, nil, err
	}
	if e.Title == nil && e.Description == nil && e.Priority == nil && e.Dependencies == nil {
		return nil, nil, newErr(ErrInvalid, "invalid_argument", "give at least one of title, description, priority, dependencies",
			"nothing to change in task %s", id)
	}
	if err := checkEditedFields(&e.Title, e.Priority); err != nil {
		return nil, nil, err
	}
	if e.Dependencies != nil {
		s.warmTasks()
	}
	var t *Task
	var fields []string
	var changes []FieldChange
	err := s.locked(func() error {
		var err error
		if t, err = s.Task(id); err != nil {
			return err
		}
		var deps []string
		if e.Dependencies != nil {
			all, err := s.taskSetLocked()
			if err != nil {
				return err
			}
			if deps, err = checkDeps(t.ID, *e.Dependencies, all); err != nil {
				return err
			}
		}
		changes = editChanges(t, e.Title, e.Description, e.Priority)
		if e.Dependencies != nil && !slices.Equal(deps, t.Dependencies) {
			changes = append(changes, FieldChange{"dependencies", strings.Join(t.Dependencies, ","), strings.Join(deps, ",")})
		}
		fields = changedFields(changes)
		if len(fields) == 0 {
			return nil
		}
		if Finished(t.Status) {
			return newErr(ErrConflict, "task_finished", "a finished task keeps its record; create a new task for further work",
				"task %s is %s and cannot be changed", t.ID, t.Status)
		}
		if e.Title != nil {
			t.Title = *e.Title
		}
		if e.Description != nil {
			t.Description = *e.Description
		}
		if e.Priority != nil {
			t.Priority = *e.Priority
		}
		ev := Event{Change: "updated", Fields: fields, Changes: changes}
		if slices.Contains(fields, "dependencies") {
			t.Dependencies = deps
			ev.To = strings.Join(deps, ",") // as SetDependencies records them
		}
		return s.commitTask(actor, t, s.Now(), ev)
	})
	if err != nil {
		return nil, nil, err
	}
	return t, fields, nil
}

// editChanges lists the task's own fields that the new values (nil: not given) change, in
// the order title, description, priority.
func editChanges(t *Task, title, description, priority *string) []FieldChange {
	var out []FieldChange
	for _, f := range []struct {
		name string
		old  string
		new  *string
	}{{"title", t.Title, title}, {"description", t.Description, description}, {"priority", t.Priority, priority}} {
		if f.new != nil && *f.new != f.old {
			out = append(out, FieldChange{f.name, f.old, *f.new})
		}
	}
	return out
}

func changedFields(changes []FieldChange) []string {
	var out []string
	for _, c := range changes {
		out = append(out, c.Field)
	}
	return out
}

// checkEditedFields checks a new title (trimming it in place) and a new priority, either
// nil when not changed: the rules every edit of a task's own fields follows (EditTask,
// UpdateTaskFromChat).
func checkEditedFields(title **string, priority *string) error {
	if *title != nil {
		t := strings.TrimSpace(**title)
		if t == "" {
			return newErr(ErrInvalid, "invalid_argument", "give the task a short title, or leave title out", "task title is empty")
		}
		if n := utf8.RuneCountInString(t); n > 200 {
			return newErr(ErrInvalid, "invalid_argument", "keep the title under 200 characters; put details in the description", "task title is too long (%d characters)", n)
		}
		*title = &t
	}
	if priority != nil && !slices.Contains(Priorities, *priority) {
		return newErr(ErrInvalid, "invalid_argument", "use one of "+strings.Join(Priorities, ", "), "invalid priority %q", clip(*priority))
	}
	return nil
}
