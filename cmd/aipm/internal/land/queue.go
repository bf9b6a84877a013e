package land

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aipm/aipm/filestore"
	"github.com/gofrs/flock"
)

// NeedsYou are the tasks whose code did not land and waits for a person's decision
// (`aipm land retry|abandon`): their worktrees stay for it.
func (q *Queue) NeedsYou() ([]*filestore.Task, error) {
	return q.tasksWithWorktree(func(t *filestore.Task) bool { return t.Landing.NeedsHuman })
}

// Entries are this clone's tasks in the queue, in the order it lands them: queued (and
// checking, left by a queue that stopped part-way) and pushed branches waiting for their
// pull request. They are the tasks with a worktree here.
func (q *Queue) Entries() ([]*filestore.Task, error) {
	out, err := q.tasksWithWorktree(func(t *filestore.Task) bool {
		switch t.Landing.State {
		case filestore.LandQueued, filestore.LandChecking, filestore.LandPushed:
			return true
		}
		return false
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b *filestore.Task) int {
		if pa, pb := slices.Index(filestore.Priorities, a.Priority), slices.Index(filestore.Priorities, b.Priority); pa != pb {
			return pb - pa
		}
		var ta, tb time.Time
		if a.Landing.QueuedAt != nil {
			ta = *a.Landing.QueuedAt
		}
		if b.Landing.QueuedAt != nil {
			tb = *b.Landing.QueuedAt
		}
		if c := ta.Compare(tb); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// Waiting counts the entries the queue will land without anyone's help (not held, not
// pushed for a pull request), and lists why each held one waits, and each task whose code
// did not land and waits for a person.
func (q *Queue) Waiting() (n int, held []string) {
	// One look at the worktrees: the coordinator asks after every change it sees.
	all, err := q.tasksWithWorktree(func(*filestore.Task) bool { return true })
	if err != nil {
		return 0, nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, t := range all {
		l := t.Landing
		switch {
		case l.NeedsHuman:
			held = append(held, fmt.Sprintf("%s: %s, needs you (`aipm land retry %s` or `aipm land abandon %s`)", t.ID, l.State, t.ID, t.ID))
		case l.State == filestore.LandWorking && t.Status == filestore.StatusDone:
			// Done a moment ago by another process, read here before it was queued.
			n++
		case l.State == filestore.LandQueued || l.State == filestore.LandChecking:
			if h, ok := q.held[t.ID]; ok {
				held = append(held, t.ID+": "+h.why)
			} else {
				n++
			}
		}
		// pushed: its pull request is the forge's to merge; nothing here is stuck.
	}
	if q.active {
		n++ // its outcome (a landing, a rework) is not written yet
	}
	return n, held
}

func (q *Queue) setHold(id, why string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if h, ok := q.held[id]; !ok || h.why != why {
		q.say("land %s: waits: %s", id, why)
	}
	q.held[id] = hold{why: why, after: time.Now().Add(holdFor)}
}

// Step lands the first entry it may (busy says which tasks still have a running agent
// process: their worktree is still theirs) and reports whether it did anything. One step
// at a time per clone: a second queue (`aipm land run` beside `aipm run`) does nothing
// meanwhile. next is when a held entry is due for another look.
func (q *Queue) Step(busy func(taskID string) bool) (did bool, next time.Time, err error) {
	lk := flock.New(filepath.Join(q.s.Dir(), "runtime", "locks", "land.lock"))
	if err := filestore.EnsureDir(filepath.Dir(lk.Path())); err != nil {
		return false, next, err
	}
	ok, err := lk.TryLock()
	if err != nil || !ok {
		return false, time.Now().Add(holdFor), err
	}
	defer lk.Unlock()
	es, err := q.Entries()
	if err != nil {
		return false, next, err
	}
	now := time.Now()
	for _, t := range es {
		if busy != nil && busy(t.ID) {
			continue
		}
		q.mu.Lock()
		h, isHeld := q.held[t.ID]
		q.mu.Unlock()
		if isHeld && now.Before(h.after) {
			if next.IsZero() || h.after.Before(next) {
				next = h.after
			}
			continue
		}
		if t.Landing.State == filestore.LandPushed {
			if q.checkMerged(t) {
				return true, next, nil
			}
			continue
		}
		q.mu.Lock()
		delete(q.held, t.ID)
		q.active = true
		q.mu.Unlock()
		err := q.land(t)
		q.mu.Lock()
		q.active = false
		q.mu.Unlock()
		if err != nil {
			q.setHold(t.ID, err.Error())
			continue
		}
		return true, next, nil
	}
	return false, next, nil
}
