package filestore

import (
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/aipm/aipm/filestore/internal/engine"
)

// The questions asked of the tasks: by filter, a page at a time, a sub-tree and its
// counts. Each is answered from the tasks' cache and its indexes, reading only the files
// of the tasks it returns.

// TaskFilter selects tasks; empty fields match everything.
type TaskFilter struct {
	Status     string
	AssigneeID string
	ParentID   string
	// TopLevel selects tasks without a parent.
	TopLevel bool
	// Unfinished leaves out done and cancelled tasks (whose files are then not read).
	Unfinished bool
}

// matchKeys is match on a task's index keys (taskKeys).
func (f TaskFilter) matchKeys(k []string) bool {
	return (f.Status == "" || k[tkStatus] == f.Status) &&
		(f.AssigneeID == "" || k[tkAssignee] == f.AssigneeID) &&
		(f.ParentID == "" || k[tkParent] == f.ParentID) &&
		(!f.TopLevel || k[tkParent] == "") &&
		(!f.Unfinished || k[tkStatus] != StatusDone && k[tkStatus] != StatusCancelled)
}

func (f TaskFilter) match(t *Task) bool {
	return (f.Status == "" || t.Status == f.Status) &&
		(f.AssigneeID == "" || t.AssigneeID == f.AssigneeID) &&
		(f.ParentID == "" || t.ParentID == f.ParentID) &&
		(!f.TopLevel || t.ParentID == "") &&
		(!f.Unfinished || !taskFinished(t))
}

// TaskStatusCounts counts the tasks by status, whatever the status says (a hand-edited
// one too), from the index: no file is read.
func (s *Store) TaskStatusCounts() (TaskCounts, error) {
	out := TaskCounts{}
	err := s.tasks.With(func() {
		for st, n := range s.tasks.CountsLocked(ixStatus) {
			out[st] = n
		}
	})
	return out, err
}

// Tasks lists the tasks matching f, oldest first (IDs sort by creation time). Files that
// cannot be read are skipped here and reported by `aipm doctor`, so one hand-broken file
// never stops the rest of the project. It costs what it returns: the index narrows the
// candidates by parent, assignee or status.
func (s *Store) Tasks(f TaskFilter) ([]*Task, error) {
	var out []*Task
	err := s.tasks.With(func() {
		ids := map[string]struct{}{}
		for id := range s.candidatesLocked(f) {
			if k := s.tasks.KeysOf(id); k != nil && f.matchKeys(k) {
				ids[id] = struct{}{}
			}
		}
		out = s.collectLocked(ids)
		out = slices.DeleteFunc(out, func(t *Task) bool { return !f.match(t) })
	})
	return out, err
}

// keyed is one index key a filter asks for: index Ix (ixKids...) under Key.
type keyed = engine.Keyed

// constraints are the index keys every task matching f is filed under.
func (f TaskFilter) constraints() []keyed {
	var out []keyed
	if f.ParentID != "" {
		out = append(out, keyed{Ix: ixKids, Key: f.ParentID})
	}
	if f.TopLevel {
		out = append(out, keyed{Ix: ixKids, Key: ""})
	}
	if f.AssigneeID != "" {
		out = append(out, keyed{Ix: ixAssigned, Key: f.AssigneeID})
	}
	if f.Status != "" {
		out = append(out, keyed{Ix: ixStatus, Key: f.Status})
	}
	return out
}

// WorkingTasks is the work in flight: every unfinished task, and every task those reach
// through their parents, dependencies and cascade causes, and the ancestors of those
// (a finished one read from its file), each once. It is what aipm run and the merge
// repairs look at on every change, so its cost follows the open work, not the project's
// history.
func (s *Store) WorkingTasks() ([]*Task, error) {
	out, err := s.Tasks(TaskFilter{Unfinished: true})
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(out))
	for _, t := range out {
		seen[t.ID] = true
	}
	// Layer by layer, through the cache: a finished task read once is held, so a look
	// does not read its file again. A reference to a task that does not exist is left
	// for doctor to name.
	for layer := out; len(layer) > 0; {
		var next []string
		for _, t := range layer {
			refs := []string{t.ParentID}
			if !Finished(t.Status) {
				refs = append(append(refs, t.CascadeFrom), t.Dependencies...)
			}
			for _, id := range refs {
				if id != "" && !seen[id] {
					seen[id] = true
					next = append(next, id)
				}
			}
		}
		if len(next) == 0 {
			break
		}
		if layer, err = s.TasksByID(next); err != nil {
			return nil, err
		}
		out = append(out, layer...)
	}
	return out, nil
}

// candidatesLocked is the smallest indexed set that holds every task matching f; all
// (lazily built) when nothing narrows it.
func (s *Store) candidatesLocked(f TaskFilter) map[string]struct{} {
	cons := f.constraints()
	if len(cons) == 0 && !f.Unfinished {
		return s.tasks.AllIDs()
	}
	if f.Unfinished {
		// Unfinished work is all held in memory: the index file holds finished work only.
		best := s.tasks.HeldIDs()
		for _, k := range cons {
			if set := s.tasks.Sets(k.Ix)[k.Key]; len(set) < len(best) {
				best = set
			}
		}
		if best == nil {
			return emptySet
		}
		return best
	}
	best := cons[0]
	for _, k := range cons[1:] {
		if s.tasks.LookupSize(k.Ix, k.Key) < s.tasks.LookupSize(best.Ix, best.Key) {
			best = k
		}
	}
	return s.tasks.Lookup(best.Ix, best.Key)
}

// TaskPage is one page of a task listing.
type TaskPage struct {
	Tasks []*Task
	// Total is how many tasks match in all; Next is the cursor of the following page ("" on
	// the last one).
	Total int
	Next  string
}

// TaskPage lists at most limit tasks matching f, oldest first, starting after the task id
// cursor (a previous page's Next; "" for the first page).
func (s *Store) TaskPage(f TaskFilter, after string, limit int) (*TaskPage, error) {
	out := &TaskPage{}
	err := s.tasks.With(func() { s.taskPageLocked(out, f, after, max(limit, 0)) })
	return out, err
}

// taskPageLocked is TaskPage without sorting every match: the tasks held in memory
// (unfinished work, and what changed since the index file) are matched on their keys, the
// finished ones of the index file by intersecting its lists, which are in id order; only
// the page's tasks are read. A limit of 0 only counts.
func (s *Store) taskPageLocked(out *TaskPage, f TaskFilter, after string, limit int) {
	c := s.tasks
	cons := f.constraints()
	// Of the matches held in memory (thousands of unfinished tasks in a large project),
	// only the page's are sorted: the limit+1 smallest ids after `after` (one more says
	// whether a next page starts) are kept in order as they are met, the others counted.
	var hot []string
	nhot, keepHot := 0, limit+1
	match := func(id string) {
		if k := c.HeldKeys(id); k == nil || !f.matchKeys(k) {
			return
		}
		nhot++
		if id <= after {
			return
		}
		if keepHot > maxPartialSort {
			hot = append(hot, id)
			return
		}
		if len(hot) == keepHot && id >= hot[keepHot-1] {
			return
		}
		i, _ := slices.BinarySearch(hot, id)
		if len(hot) < keepHot {
			hot = append(hot, id)
		}
		copy(hot[i+1:], hot[i:len(hot)-1])
		hot[i] = id
	}
	oneStatus := f == (TaskFilter{Status: f.Status}) && f.Status != ""
	if oneStatus {
		// One status: its ids are kept sorted (taskIndex.sorted); the page is read off
		// after the cursor.
		ids := s.tix.sorted[f.Status]
		nhot = len(ids)
		from, _ := slices.BinarySearch(ids, after)
		if from < len(ids) && ids[from] == after {
			from++
		}
		for _, id := range ids[from:] {
			if len(hot) == keepHot {
				break
			}
			if k := c.HeldKeys(id); k != nil && k[tkStatus] == f.Status {
				hot = append(hot, id)
			}
		}
	} else if len(cons) > 0 {
		best := c.Sets(cons[0].Ix)[cons[0].Key]
		for _, k := range cons[1:] {
			if set := c.Sets(k.Ix)[k.Key]; len(set) < len(best) {
				best = set
			}
		}
		for id := range best {
			match(id)
		}
	} else {
		c.EachHeld(match)
	}
	if keepHot > maxPartialSort && !oneStatus { // the status set's ids come in order
		sort.Strings(hot)
	}
	// The finished matches in the index file, where they lie: counted, and read from the
	// cursor on only as far as the page goes.
	ncold, nextCold := 0, func() (string, bool) { return "", false }
	if !f.Unfinished {
		ncold, nextCold = c.ColdMatches(cons, after)
	}
	out.Total = nhot + ncold
	keep := make([]string, 0, min(limit+1, out.Total))
	i := 0
	coldID, more := nextCold()
	for len(keep) < limit+1 && (i < len(hot) || more) {
		if !more || i < len(hot) && hot[i] < coldID {
			keep = append(keep, hot[i])
			i++
		} else {
			keep = append(keep, coldID)
			coldID, more = nextCold()
		}
	}
	page := keep[:min(limit, len(keep))]
	for _, id := range page {
		if t := s.tasks.Get(id); t != nil {
			out.Tasks = append(out.Tasks, cloneTask(t))
		}
	}
	if len(keep) > limit && limit > 0 {
		out.Next = page[limit-1]
	}
}

// maxPartialSort is the largest page that taskPageLocked keeps in order as it goes; a
// larger one sorts every match instead.
const maxPartialSort = 256

// walkSubtreeLocked calls fn with each of the task's descendants (not the task itself),
// breadth first, each level by id. A hand-edited parent cycle does not loop. The caller
// holds the tasks cache's mutex; fn must not keep the task it is given.
func (s *Store) walkSubtreeLocked(id string, fn func(t *Task)) {
	s.walkSubtreeKeysLocked(id, true, func(k string, _ []string) {
		if t := s.tasks.Get(k); t != nil {
			fn(t)
		}
	})
}

// walkSubtreeKeysLocked is walkSubtreeLocked on the index keys (taskKeys): no file read.
// Unless ordered, the tasks of a level come in no particular order.
func (s *Store) walkSubtreeKeysLocked(id string, ordered bool, fn func(id string, keys []string)) {
	type kid struct {
		id   string
		keys []string
	}
	// Each task is filed under one parent, so a walk meets each once: parents edited by
	// hand into a loop lead back only to the task the walk started from, which is passed
	// over. What goes through a task's sub-tasks is remembered against anything else
	// coming round (no walk goes on forever); the leaves, most of a tree, are not.
	expanded := map[string]bool{}
	queue := []string{id}
	var level []kid
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		level = level[:0]
		s.tasks.Each(ixKids, cur, func(k string) {
			if k == id {
				return
			}
			if keys := s.tasks.KeysOf(k); keys != nil {
				level = append(level, kid{k, keys})
			}
		})
		if len(level) == 0 {
			continue
		}
		if expanded[cur] {
			continue
		}
		expanded[cur] = true
		if ordered {
			slices.SortFunc(level, func(a, b kid) int { return strings.Compare(a.id, b.id) })
		}
		for _, k := range level {
			fn(k.id, k.keys)
			queue = append(queue, k.id)
		}
	}
}

// Subtree returns the task's descendants (not the task itself), in breadth-first order.
func (s *Store) Subtree(id string) ([]*Task, error) {
	return s.SubtreeWhere(id, func(*Task) bool { return true })
}

// SubtreeWhere returns the task's descendants for which keep is true, breadth first,
// copying only those.
func (s *Store) SubtreeWhere(id string, keep func(*Task) bool) ([]*Task, error) {
	var out []*Task
	err := s.tasks.With(func() {
		s.walkSubtreeLocked(id, func(t *Task) {
			if keep(t) {
				out = append(out, cloneTask(t))
			}
		})
	})
	return out, err
}

// SubtreeSummary counts a task's descendants by status without copying them.
func (s *Store) SubtreeSummary(id string) (TaskCounts, error) {
	out := TaskCounts{}
	err := s.tasks.With(func() { maps.Copy(out, s.subtreeSummaryLocked(id)) })
	return out, err
}

// memoSubtree is the least number of tasks a sub-tree holds for SubtreeSummary to keep
// its counts between calls; a smaller one is walked each time. maxSubtreeSummaries
// bounds how many sub-trees' counts are kept.
const (
	memoSubtree         = 64
	maxSubtreeSummaries = 32
)

// subtreeSummaryLocked counts root's descendants by status. A large sub-tree's counts
// are kept, and a later call brings them up to date from the tasks changed since (a
// session asks on every call, and its sub-tree can hold hundreds of tasks): a task whose
// file changed is in the sub-tree when its parents lead up to root, and the counts move
// with its status. A change that takes a task with sub-tasks of its own into the
// sub-tree or out of it, or more changes than the sub-tree has members, or changes the
// cache no longer remembers, mean a walk of the whole sub-tree instead. The caller holds
// the tasks cache's mutex; the counts returned must not be kept or changed.
func (s *Store) subtreeSummaryLocked(root string) TaskCounts {
	c, x := s.tasks, &s.tix
	if m := x.summaries[root]; m != nil {
		if ids, ok := c.ChangedSince(m.gen); ok && len(ids) <= len(m.members) && s.patchSubtreeMemo(root, m, ids) {
			m.gen = c.Gen()
			return m.counts
		}
		delete(x.summaries, root)
	}
	m := &subtreeMemo{gen: c.Gen(), members: map[string]string{}, counts: TaskCounts{}}
	s.walkSubtreeKeysLocked(root, false, func(id string, k []string) {
		m.members[id] = k[tkStatus]
		m.counts[k[tkStatus]]++
	})
	if len(m.members) >= memoSubtree {
		if x.summaries == nil || len(x.summaries) >= maxSubtreeSummaries {
			x.summaries = map[string]*subtreeMemo{}
		}
		x.summaries[root] = m
	}
	return m.counts
}

// patchSubtreeMemo applies the changes of ids to m, and reports false when a walk must
// redo it (m is then partly patched: the caller drops it).
func (s *Store) patchSubtreeMemo(root string, m *subtreeMemo, ids []string) bool {
	c := s.tasks
	for _, id := range ids {
		if id == root {
			continue // root itself is not counted, and its own parent moves it all at once
		}
		was, in := m.members[id]
		k := c.KeysOf(id)
		now := s.inSubtreeLocked(root, id)
		if in != now && s.hasSubtasksLocked(id) {
			return false
		}
		if in {
			if m.counts[was]--; m.counts[was] <= 0 {
				delete(m.counts, was)
			}
			delete(m.members, id)
		}
		if now {
			m.members[id] = k[tkStatus]
			m.counts[k[tkStatus]]++
		}
	}
	return true
}
