package filestore

import (
	"strings"
)

// BatchItem is one task of CreateTasks. Dependencies name other items by LocalID, or
// existing tasks by id.
type BatchItem struct {
	LocalID string
	NewTask
}

// CreateTasks creates several sub-tasks of parentID at once, all or nothing: every item is
// validated — local ids unique, titles unique within the batch and among the parent's
// existing sub-tasks (a re-sent batch must not duplicate work), every dependency known,
// no cycle — before the first file is written. It returns the tasks in item order and the
// local-id → id map.
func (s *Store) CreateTasks(actor Actor, parentID string, items []BatchItem) ([]*Task, map[string]string, error) {
	if len(items) == 0 {
		return nil, nil, newErr(ErrInvalid, "invalid_argument", "pass at least one task", "the batch is empty")
	}
	s.warmTasks()
	var out []*Task
	var ids map[string]string
	err := s.locked(func() error {
		all, err := s.taskSetLocked()
		if err != nil {
			return err
		}
		if out, ids, err = s.planBatch(actor, all, parentID, "", items); err != nil {
			return err
		}
		for _, t := range out {
			if err := s.saveNewTask(actor, t); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return out, ids, nil
}

func uniq(in []string) []string {
	out := []string{}
	seen := map[string]bool{}
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// planBatch validates items as new sub-tasks of parentID and builds them in memory: local
// ids unique, titles unique within the batch and among the parent's live sub-tasks (except
// replacing, a task being replaced), every dependency known, no cycle. Nothing is written.
func (s *Store) planBatch(actor Actor, all taskSet, parentID, replacing string, items []BatchItem) ([]*Task, map[string]string, error) {
	var out []*Task
	ids := map[string]string{}
	if err := ValidateEntityID(PrefixTask, parentID); err != nil {
		return nil, nil, err
	}
	if all.task(parentID) == nil {
		return nil, nil, newErr(ErrNotFound, "task_not_found", "check parent_task_id", "parent task %s not found", parentID)
	}
	existing := map[string]string{} // title → id of the parent's live sub-tasks
	for _, t := range all.children(parentID) {
		if t.Status != StatusCancelled && t.ID != replacing {
			existing[strings.ToLower(strings.TrimSpace(t.Title))] = t.ID
		}
	}
	seenTitle := map[string]string{}
	minted, err := s.mintTaskIDs(len(items), s.Now())
	if err != nil {
		return nil, nil, err
	}
	for i, it := range items {
		if it.LocalID == "" {
			return nil, nil, newErr(ErrInvalid, "invalid_argument", "give every task a local_id", "task %d has no local_id", i+1)
		}
		if _, dup := ids[it.LocalID]; dup {
			return nil, nil, newErr(ErrInvalid, "invalid_argument", "local ids must be unique in a batch", "local_id %q is used twice", clip(it.LocalID))
		}
		key := strings.ToLower(strings.TrimSpace(it.Title))
		if id, ok := existing[key]; ok {
			return nil, nil, newErr(ErrExists, "duplicate_task", "the task already exists: use it (get_task "+id+") instead of creating it again",
				"a sub-task titled %q already exists under %s: %s", clip(it.Title), parentID, id)
		}
		if other, ok := seenTitle[key]; ok {
			return nil, nil, newErr(ErrExists, "duplicate_task", "give each task a distinct title", "tasks %q and %q have the same title", other, it.LocalID)
		}
		seenTitle[key] = it.LocalID
		ids[it.LocalID] = minted[i]
	}
	// Resolve dependencies, then build every task in memory with the normal validation.
	planned := taskMap{base: all, extra: map[string]*Task{}}
	for _, it := range items {
		var deps []string
		for _, d := range it.Dependencies {
			if real, ok := ids[d]; ok {
				deps = append(deps, real)
				continue
			}
			if all.task(d) != nil {
				deps = append(deps, d)
				continue
			}
			return nil, nil, newErr(ErrNotFound, "unknown_dependency", "name another task of this batch by its local_id, or an existing task by its id",
				"task %q depends on unknown %q", it.LocalID, clip(d))
		}
		n := it.NewTask
		n.ParentID = parentID
		n.Dependencies = nil
		t, err := s.newTask(actor, n, all)
		if err != nil {
			return nil, nil, err
		}
		t.ID = ids[it.LocalID]
		t.Dependencies = uniq(deps)
		planned.extra[t.ID] = t
		out = append(out, t)
	}
	for _, t := range out {
		if p := depPath(planned, t.Dependencies, t.ID); p != nil {
			return nil, nil, newErr(ErrInvalid, "dependency_cycle", "drop one of these dependencies so the graph has no loop",
				"dependencies would form a cycle: %s", strings.Join(append([]string{t.ID}, p...), " → "))
		}
	}
	return out, ids, nil
}
