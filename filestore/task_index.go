package filestore

import (
	"maps"
	"slices"
	"sort"

	"github.com/aipm/aipm/filestore/internal/engine"
)

// taskIndex is the in-memory index of tasks/ (see cache.go): the parsed tasks by id and
// the sets the hot paths look up — children by parent, tasks by assignee, by status, and
// the tasks that depend on a task. It is kept in step by the tasks cache and guarded by
// its mutex.
type taskIndex struct {
	kids       engine.IDIndex // parent id ("" = top level) → child ids
	assigned   engine.IDIndex // assignee id → task ids
	byStatus   engine.IDIndex // status → task ids
	dependents engine.IDIndex // dependency id → ids of tasks that depend on it
	// sorted holds byStatus's sets as sorted ids, so that a page of one status is found
	// without sorting (or visiting) the rest of its thousands of tasks.
	sorted map[string][]string
	// bulk: a load is filling the index, and sorted's sets are appended to in any order;
	// settle sorts them once.
	bulk bool
	// load counts the in_progress tasks of each assignee, those in the index file's cold
	// part too, while loadOK: counted once from the sets, then kept by change.
	load   map[string]int
	loadOK bool
	// summaries are the sub-tree counts SubtreeSummary gave of large sub-trees, kept
	// up to date from the tasks changed since (subtreeSummaryLocked). A load of the
	// index (reset) drops them.
	summaries map[string]*subtreeMemo
}

// subtreeMemo is one sub-tree's counts by status as of the tasks cache's generation gen,
// with the status of each of its members.
type subtreeMemo struct {
	gen     uint64
	members map[string]string
	counts  TaskCounts
}

// change keeps load in step with a task's keys going from old to cur (nil: none): a
// change of what the cache knows, not a move between memory and the index file.
func (x *taskIndex) change(id string, old, cur []string) {
	if !x.loadOK {
		return
	}
	if old != nil && old[tkStatus] == StatusInProgress {
		if x.load[old[tkAssignee]]--; x.load[old[tkAssignee]] <= 0 {
			delete(x.load, old[tkAssignee])
		}
	}
	if cur != nil && cur[tkStatus] == StatusInProgress {
		x.load[cur[tkAssignee]]++
	}
}

// The secondary indexes by number, as the index file's cold part files them (cold.go).
const (
	ixKids = iota
	ixAssigned
	ixStatus
	ixDependents
)

func (x *taskIndex) set(i int) engine.IDIndex {
	return [...]engine.IDIndex{x.kids, x.assigned, x.byStatus, x.dependents}[i]
}

func (x *taskIndex) reset() {
	*x = taskIndex{kids: engine.IDIndex{}, assigned: engine.IDIndex{}, byStatus: engine.IDIndex{}, dependents: engine.IDIndex{}, sorted: map[string][]string{}, bulk: true}
}

// settle ends a load: each of sorted's sets is sorted once, instead of an insertion in
// order for each of the thousands of ids a load adds.
func (x *taskIndex) settle() {
	if !x.bulk {
		return
	}
	for k, ids := range x.sorted {
		slices.Sort(ids)
		x.sorted[k] = slices.Compact(ids)
	}
	x.bulk = false
}

// sortedAdd and sortedDel keep x.sorted[k] a sorted set of ids.
func (x *taskIndex) sortedAdd(k, id string) {
	ids := x.sorted[k]
	if x.bulk {
		x.sorted[k] = append(ids, id)
		return
	}
	i, found := slices.BinarySearch(ids, id)
	if !found {
		x.sorted[k] = slices.Insert(ids, i, id)
	}
}

func (x *taskIndex) sortedDel(k, id string) {
	x.settle()
	ids := x.sorted[k]
	i, found := slices.BinarySearch(ids, id)
	if !found {
		return
	}
	if ids = slices.Delete(ids, i, i+1); len(ids) == 0 {
		delete(x.sorted, k)
	} else {
		x.sorted[k] = ids
	}
}

// The index keys of a task (taskKeys): parent, assignee, status, then the dependencies.
const (
	tkParent = iota
	tkAssignee
	tkStatus
	tkDeps
)

// taskKeys is what the index files a task under; a finished task is held as these alone.
func taskKeys(t *Task) []string {
	return append([]string{t.ParentID, t.AssigneeID, t.Status}, t.Dependencies...)
}

// taskFinished: done and cancelled tasks are the project's history, read on demand.
func taskFinished(t *Task) bool { return Finished(t.Status) }

// update moves id from what old said to what cur says (taskKeys; nil: none).
func (x *taskIndex) update(id string, old, cur []string) {
	// Most writes keep a task's parent and assignee, and many its status: a set that
	// keeps the id is left alone (the sets of a large project hold thousands of ids).
	if old != nil && cur != nil {
		if old[tkParent] != cur[tkParent] {
			engine.SetDel(x.kids, old[tkParent], id)
			engine.SetAdd(x.kids, cur[tkParent], id)
		}
		if old[tkAssignee] != cur[tkAssignee] {
			engine.SetDel(x.assigned, old[tkAssignee], id)
			engine.SetAdd(x.assigned, cur[tkAssignee], id)
		}
		if old[tkStatus] != cur[tkStatus] {
			engine.SetDel(x.byStatus, old[tkStatus], id)
			engine.SetAdd(x.byStatus, cur[tkStatus], id)
			x.sortedDel(old[tkStatus], id)
			x.sortedAdd(cur[tkStatus], id)
		}
		if !slices.Equal(old[tkDeps:], cur[tkDeps:]) {
			for _, d := range old[tkDeps:] {
				engine.SetDel(x.dependents, d, id)
			}
			for _, d := range cur[tkDeps:] {
				engine.SetAdd(x.dependents, d, id)
			}
		}
		return
	}
	if old != nil {
		engine.SetDel(x.kids, old[tkParent], id)
		engine.SetDel(x.assigned, old[tkAssignee], id)
		engine.SetDel(x.byStatus, old[tkStatus], id)
		x.sortedDel(old[tkStatus], id)
		for _, d := range old[tkDeps:] {
			engine.SetDel(x.dependents, d, id)
		}
	}
	if cur != nil {
		engine.SetAdd(x.kids, cur[tkParent], id)
		engine.SetAdd(x.assigned, cur[tkAssignee], id)
		engine.SetAdd(x.byStatus, cur[tkStatus], id)
		x.sortedAdd(cur[tkStatus], id)
		for _, d := range cur[tkDeps:] {
			engine.SetAdd(x.dependents, d, id)
		}
	}
}

func newTaskCache(s *Store) *engine.Cache[Task] {
	c := engine.NewCache(s.eng, "tasks", isEntityID(PrefixTask), s.readTask)
	c.Keys, c.Done, c.Persist = taskKeys, taskFinished, true
	c.DoneKeys = func(k []string) bool { return Finished(k[tkStatus]) }
	c.Reset = s.tix.reset
	c.Index = s.tix.update
	c.Change = s.tix.change
	c.Settle = s.tix.settle
	c.Sets, c.NIdx, c.MinKeys = s.tix.set, 4, tkDeps
	c.Slot = func(pos int) int { return min(pos, ixDependents) } // parent, assignee, status, dependencies
	s.tix.reset()
	return c
}

// cloneTask is a copy a caller may change without touching the cache.
func cloneTask(t *Task) *Task {
	c := *t
	c.Dependencies = slices.Clone(t.Dependencies)
	if t.Landing != nil {
		l := *t.Landing
		c.Landing = &l
	}
	c.Conflict = t.Conflict.clone()
	return &c
}

// taskSet is what the task rules need to know of the other tasks. Every task it returns
// is a copy.
type taskSet interface {
	task(id string) *Task              // nil when unknown
	children(id string) []*Task        // direct sub-tasks, by id
	assignedTo(agentID string) []*Task // the agent's tasks, by id
	dependentsOf(id string) []*Task    // the tasks that depend on id, by id
}

// cachedTasks answers taskSet from the index. Under the store lock, the index is brought
// up to date once (the journal names every write made through aipm) and then read.
type cachedTasks struct{ s *Store }

// taskSetLocked is the fresh view of the tasks a write checks its rules against. The
// caller holds the store lock, and called warmTasks before taking it: under the lock only
// the journal is read (every write through aipm is in it), so no scan holds up the
// writers of other processes.
func (s *Store) taskSetLocked() (taskSet, error) {
	if err := s.tasks.Sync(false, func() {}); err != nil {
		return nil, err
	}
	return cachedTasks{s}, nil
}

// fileTasks is a taskSet that reads each task it is asked for from its file and answers
// the set questions from the index (brought up to date from the journal; loaded at the
// first such question). For rules that mostly look at a few named tasks.
type fileTasks struct{ s *Store }

func (f fileTasks) task(id string) *Task {
	t, err := f.s.Task(id)
	if err != nil {
		return nil
	}
	return t
}

func (f fileTasks) sets() cachedTasks {
	f.s.tasks.Sync(false, func() {})
	return cachedTasks{f.s}
}

func (f fileTasks) children(id string) []*Task        { return f.sets().children(id) }
func (f fileTasks) assignedTo(agentID string) []*Task { return f.sets().assignedTo(agentID) }
func (f fileTasks) dependentsOf(id string) []*Task    { return f.sets().dependentsOf(id) }

// warmTasks brings the task cache up to date before a task write takes the store lock.
func (s *Store) warmTasks() {
	s.tasks.With(func() {})
}

func (v cachedTasks) task(id string) *Task {
	var out *Task
	c := v.s.tasks
	c.Do(func() {
		if t := c.Get(id); t != nil {
			out = cloneTask(t)
		}
	})
	return out
}

func (v cachedTasks) ids(m func() map[string]struct{}) []*Task {
	var out []*Task
	v.s.tasks.Do(func() { out = v.s.collectLocked(m()) })
	return out
}

func (v cachedTasks) children(id string) []*Task {
	return v.ids(func() map[string]struct{} { return v.s.tasks.Lookup(ixKids, id) })
}

func (v cachedTasks) assignedTo(agentID string) []*Task {
	return v.ids(func() map[string]struct{} { return v.s.tasks.Lookup(ixAssigned, agentID) })
}

func (v cachedTasks) dependentsOf(id string) []*Task {
	return v.ids(func() map[string]struct{} { return v.s.tasks.Lookup(ixDependents, id) })
}

// collectLocked copies the tasks of a set of ids, sorted by id (creation order). The
// caller holds the tasks cache's mutex.
func (s *Store) collectLocked(ids map[string]struct{}) []*Task {
	out := make([]*Task, 0, len(ids))
	for id := range ids {
		if t := s.tasks.Get(id); t != nil {
			out = append(out, cloneTask(t))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// taskMap is a taskSet over tasks in memory: the plan of a batch on top of the store's.
type taskMap struct {
	base  taskSet
	extra map[string]*Task
}

func (m taskMap) task(id string) *Task {
	if t, ok := m.extra[id]; ok {
		return t
	}
	if m.base == nil {
		return nil
	}
	return m.base.task(id)
}

func (m taskMap) merge(base []*Task, keep func(*Task) bool) []*Task {
	var out []*Task
	for _, t := range base {
		if _, over := m.extra[t.ID]; !over && keep(t) {
			out = append(out, t)
		}
	}
	for _, t := range m.extra {
		if keep(t) {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (m taskMap) baseOr(f func(taskSet) []*Task) []*Task {
	if m.base == nil {
		return nil
	}
	return f(m.base)
}

func (m taskMap) children(id string) []*Task {
	return m.merge(m.baseOr(func(b taskSet) []*Task { return b.children(id) }), func(t *Task) bool { return t.ParentID == id })
}

func (m taskMap) assignedTo(agentID string) []*Task {
	return m.merge(m.baseOr(func(b taskSet) []*Task { return b.assignedTo(agentID) }), func(t *Task) bool { return t.AssigneeID == agentID })
}

func (m taskMap) dependentsOf(id string) []*Task {
	return m.merge(m.baseOr(func(b taskSet) []*Task { return b.dependentsOf(id) }), func(t *Task) bool { return slices.Contains(t.Dependencies, id) })
}

// descendants returns the task's descendants (not the task itself), breadth first, each
// level by id. A hand-edited parent cycle does not loop.
func descendants(all taskSet, id string) []*Task {
	var out []*Task
	seen := map[string]bool{id: true}
	queue := []string{id}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, c := range all.children(cur) {
			if seen[c.ID] {
				continue
			}
			seen[c.ID] = true
			out = append(out, c)
			queue = append(queue, c.ID)
		}
	}
	return out
}

// TaskCounts is how many tasks have each status.
type TaskCounts map[string]int

// Total is the number of tasks counted.
func (c TaskCounts) Total() int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

// memTasks is a taskSet over a map of tasks read by the caller (`aipm doctor`), indexed
// once.
type memTasks struct {
	all map[string]*Task
	x   taskIndex
}

func newMemTasks(all map[string]*Task) *memTasks {
	m := &memTasks{all: all}
	m.x.reset()
	for id, t := range all {
		m.x.update(id, nil, taskKeys(t))
	}
	return m
}

func (m *memTasks) task(id string) *Task { return m.all[id] }

func (m *memTasks) pick(ids map[string]struct{}) []*Task {
	out := make([]*Task, 0, len(ids))
	for id := range ids {
		out = append(out, m.all[id])
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (m *memTasks) children(id string) []*Task        { return m.pick(m.x.kids[id]) }
func (m *memTasks) assignedTo(agentID string) []*Task { return m.pick(m.x.assigned[agentID]) }
func (m *memTasks) dependentsOf(id string) []*Task    { return m.pick(m.x.dependents[id]) }

// TasksByID copies the known tasks among ids, by id; unknown and unreadable ones are left
// out.
func (s *Store) TasksByID(ids []string) ([]*Task, error) {
	set := make(map[string]struct{}, len(ids))
	for _, id := range ids {
		set[id] = struct{}{}
	}
	var out []*Task
	err := s.tasks.With(func() { out = s.collectLocked(set) })
	return out, err
}

// TaskRef is where a task stands in the index: enough to tell whom a change concerns.
type TaskRef struct {
	ID, ParentID, AssigneeID, Status string
}

// TaskRefs returns the index entries of the readable tasks among ids, by id, without
// reading their files: a write through aipm by another process is known from its
// journal line.
func (s *Store) TaskRefs(ids []string) ([]TaskRef, error) {
	var out []TaskRef
	err := s.tasks.With(func() {
		for _, id := range ids {
			if k := s.tasks.KeysOf(id); k != nil {
				out = append(out, TaskRef{ID: id, ParentID: k[tkParent], AssigneeID: k[tkAssignee], Status: k[tkStatus]})
			}
		}
	})
	return out, err
}

// SubtreeRef is the index entry of a task in a sub-tree, with what tells how it stands
// to the others there: its parent's assignee, and whether it has sub-tasks of its own.
type SubtreeRef struct {
	TaskRef
	ParentAssignee string
	HasChildren    bool
}

// SubtreeRefs returns the index entries of the tasks among ids that are root or below it,
// without walking the sub-tree or reading a file: the parent chain of each says whether
// it is in. Each id is answered once.
func (s *Store) SubtreeRefs(root string, ids []string) ([]SubtreeRef, error) {
	var out []SubtreeRef
	err := s.tasks.With(func() {
		done := make(map[string]bool, len(ids))
		for _, id := range ids {
			k := s.tasks.KeysOf(id)
			if done[id] || k == nil {
				continue
			}
			done[id] = true
			if !s.inSubtreeLocked(root, id) {
				continue
			}
			r := SubtreeRef{TaskRef: TaskRef{ID: id, ParentID: k[tkParent], AssigneeID: k[tkAssignee], Status: k[tkStatus]}}
			if pk := s.tasks.KeysOf(k[tkParent]); pk != nil {
				r.ParentAssignee = pk[tkAssignee]
			}
			r.HasChildren = s.hasSubtasksLocked(id)
			out = append(out, r)
		}
	})
	return out, err
}

// hasSubtasksLocked tells whether a task the cache knows names id as its parent. The
// caller holds the tasks cache's mutex.
func (s *Store) hasSubtasksLocked(id string) bool {
	for kid := range s.tasks.Lookup(ixKids, id) {
		if s.tasks.KeysOf(kid) != nil {
			return true
		}
	}
	return false
}

// TasksGeneration brings the tasks cache up to date and returns its generation: it
// changes whenever a task as the store knows it changes, so an answer computed from the
// tasks at one generation holds while it stays the same.
func (s *Store) TasksGeneration() (uint64, error) {
	var g uint64
	err := s.tasks.With(func() { g = s.tasks.Gen() })
	return g, err
}

// TasksChangedSince brings the tasks cache up to date and returns the ids of the tasks
// that changed after generation g (TasksGeneration), and the generation now; ok is false
// when the changes since g are too many to tell.
func (s *Store) TasksChangedSince(g uint64) (ids []string, now uint64, ok bool, err error) {
	err = s.tasks.With(func() {
		now = s.tasks.Gen()
		ids, ok = s.tasks.ChangedSince(g)
	})
	return ids, now, ok && err == nil, err
}

// InProgressByAssignee counts the in-progress tasks of each assignee ("" for none), from
// the index: no file is read.
func (s *Store) InProgressByAssignee() (map[string]int, error) {
	var out map[string]int
	err := s.tasks.With(func() {
		if !s.tix.loadOK {
			s.tix.load = map[string]int{}
			for id := range s.tasks.Lookup(ixStatus, StatusInProgress) {
				if k := s.tasks.KeysOf(id); k != nil && k[tkStatus] == StatusInProgress {
					s.tix.load[k[tkAssignee]]++
				}
			}
			s.tix.loadOK = true
		}
		out = maps.Clone(s.tix.load)
	})
	return out, err
}

// Dependents copies the tasks that depend on id, by id.
func (s *Store) Dependents(id string) ([]*Task, error) {
	var out []*Task
	err := s.tasks.With(func() { out = s.collectLocked(s.tasks.Lookup(ixDependents, id)) })
	return out, err
}
