package tools

import (
	"maps"
	"slices"

	"github.com/aipm/aipm/filestore"
)

// subtreeMemo is a task's sub-tree as last copied, at a generation of the tasks cache
// (filestore.Store.TasksGeneration).
type subtreeMemo struct {
	gen   uint64
	tasks map[string]*filestore.Task
}

// maxSubtreeMemos bounds the sub-trees a Server holds: one per task session it serves,
// and a few it served before.
const maxSubtreeMemos = 16

// subtreeOf returns the descendants of root, in no particular order, for a session's
// decisions (loadSituation). Every get_my_task and status change of a task session
// decides its next step, and a worker's task gathers hundreds of sub-tasks, most of them
// unchanged since the last decision: the copy made then is brought up to date from the
// tasks changed since, the way a derivation is (changedWatched), and the sub-tree is
// walked again only when that cannot tell — too many changes, or a changed task with
// sub-tasks of its own, whose whole branch may have moved in or out. The tasks handed
// out are the memo's own: callers only read them.
func (s *Server) subtreeOf(root string) ([]*filestore.Task, error) {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	if m := s.subtrees[root]; m != nil {
		ok, err := s.patchSubtree(root, m)
		if err != nil {
			return nil, err
		}
		if ok {
			s.patchedSubtrees++
			return slices.Collect(maps.Values(m.tasks)), nil
		}
	}
	// The generation before the walk: a change made during it shows again next time.
	gen, err := s.store.TasksGeneration()
	if err != nil {
		return nil, err
	}
	sub, err := s.store.Subtree(root)
	if err != nil {
		return nil, err
	}
	m := &subtreeMemo{gen: gen, tasks: make(map[string]*filestore.Task, len(sub))}
	for _, t := range sub {
		m.tasks[t.ID] = t
	}
	if s.subtrees == nil || len(s.subtrees) >= maxSubtreeMemos {
		s.subtrees = map[string]*subtreeMemo{}
	}
	s.subtrees[root] = m
	return sub, nil
}

// patchSubtree brings m up to date from the tasks changed since its generation; false
// when the sub-tree must be walked again (m is then left as it was).
func (s *Server) patchSubtree(root string, m *subtreeMemo) (bool, error) {
	ids, gen, ok, err := s.store.TasksChangedSince(m.gen)
	if err != nil || !ok || len(ids) > s.walkBound {
		return false, err
	}
	if len(ids) == 0 {
		return true, nil
	}
	refs, err := s.store.SubtreeRefs(root, ids)
	if err != nil {
		return false, err
	}
	in := map[string]bool{}
	var want []string
	for _, r := range refs {
		if r.ID == root {
			continue // the root itself is not of its sub-tree, whatever its change
		}
		if r.HasChildren {
			return false, nil
		}
		in[r.ID] = true
		want = append(want, r.ID)
	}
	// A task that left the sub-tree (moved, removed) takes its branch with it: unless it
	// had no sub-task in the memo, walk again.
	for _, id := range ids {
		if in[id] || m.tasks[id] == nil {
			continue
		}
		for _, t := range m.tasks {
			if t.ParentID == id {
				return false, nil
			}
		}
	}
	fresh, err := s.store.TasksByID(want)
	if err != nil {
		return false, err
	}
	for _, id := range ids {
		delete(m.tasks, id)
	}
	for _, t := range fresh {
		m.tasks[t.ID] = t
	}
	m.gen = gen
	return true, nil
}
