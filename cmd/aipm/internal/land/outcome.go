package land

import (
	"fmt"
	"strings"
	"time"

	"github.com/aipm/aipm/filestore"
)

// landed records the task's code on the target (the original's too, for a rework) and
// removes its worktree and branch.
func (q *Queue) landed(t *filestore.Task, commit, how string) error {
	now := time.Now().UTC()
	mark := func(detail string) func(*filestore.Task, *filestore.Landing) error {
		return func(_ *filestore.Task, l *filestore.Landing) error {
			l.State, l.LandedCommit, l.LandedAt, l.NeedsHuman, l.Detail = filestore.LandLanded, commit, &now, false, detail
			if commit != "" {
				l.Commit = commit
			}
			return nil
		}
	}
	if _, err := q.s.UpdateLanding(Actor, t.ID, mark("")); err != nil {
		return err
	}
	if t.ReworkOf != "" {
		if _, err := q.s.UpdateLanding(Actor, t.ReworkOf, mark("landed by its rework "+t.ID)); err != nil {
			q.say("land %s: recording the landing on %s: %v", t.ID, t.ReworkOf, err)
		}
	}
	q.remove(t.ID, true)
	if commit == "" {
		q.say("land %s (%s): landed: %s", t.ID, t.Title, how)
	} else {
		q.say("land %s (%s): landed %s %s", t.ID, t.Title, commit[:10], how)
	}
	return nil
}

// failed ends an attempt that did not fit: rework for the same agent, or, past the
// attempts allowed, a person's decision.
func (q *Queue) failed(t *filestore.Task, set filestore.Settings, f *failure) error {
	root := filestore.LandingRoot(t)
	attempts := 0
	if _, err := q.s.UpdateLanding(Actor, root, func(_ *filestore.Task, l *filestore.Landing) error {
		l.Attempts++
		attempts = l.Attempts
		if root != t.ID {
			l.Detail = f.detail
		}
		return nil
	}); err != nil {
		return err
	}
	limit := set.LandAttempts()
	human := attempts >= limit
	if _, err := q.s.UpdateLanding(Actor, t.ID, func(_ *filestore.Task, l *filestore.Landing) error {
		l.State, l.Detail, l.NeedsHuman = f.state, f.detail, human
		return nil
	}); err != nil {
		return err
	}
	what := "conflict"
	if f.state == filestore.LandCheckFailed {
		what = "check failed"
	}
	if human {
		if root != t.ID {
			q.s.UpdateLanding(Actor, root, func(_ *filestore.Task, l *filestore.Landing) error {
				l.NeedsHuman = true
				return nil
			})
		}
		q.say("land %s (%s): %s, attempt %d of %d: needs you: `aipm land retry %s` or `aipm land abandon %s` (%s)",
			t.ID, t.Title, what, attempts, limit, t.ID, t.ID, Summary(f.detail))
		return nil
	}
	what2 := "What went wrong when its code was to land (attempt " + fmt.Sprint(attempts) + " of " + fmt.Sprint(limit) + "): " + f.detail +
		"\nThis task starts from the target's new tip; do the work again there."
	rw, err := q.s.CreateRework(Actor, t.ID, root, what2)
	if err != nil {
		return err
	}
	if root != t.ID {
		q.s.UpdateLanding(Actor, root, func(_ *filestore.Task, l *filestore.Landing) error {
			l.ReworkTaskID = rw.ID
			return nil
		})
	}
	q.remove(t.ID, false) // its branch stays, for a look at what did not fit
	q.say("land %s (%s): %s, attempt %d of %d: rework %s for %s (%s)", t.ID, t.Title, what, attempts, limit, rw.ID, rw.AssigneeID, Summary(f.detail))
	return nil
}

// Summary is a failure's detail in one line: its first line, and the last line of
// output that follows it.
func Summary(detail string) string {
	first, rest, _ := strings.Cut(detail, "\n")
	first = strings.TrimSuffix(first, "; the end of its output:")
	lines := strings.Split(strings.TrimSpace(rest), "\n")
	if last := strings.TrimSpace(lines[len(lines)-1]); last != "" {
		first += ": …" + last
	}
	return first
}

// Retry puts a task whose landing waits for a person back in the queue for one more
// attempt, from its branch as it is.
func (q *Queue) Retry(actor filestore.Actor, id string) (*filestore.Task, error) {
	t, err := q.s.Task(id)
	if err != nil {
		return nil, err
	}
	if t.Landing == nil {
		return nil, fmt.Errorf("task %s has no branch of its own: nothing to land", id)
	}
	if !isWorktree(q.Worktree(id)) {
		return nil, fmt.Errorf("task %s's worktree %s is gone: nothing to retry; `aipm land abandon %s` gives its code up", id, q.Worktree(id), id)
	}
	switch t.Landing.State {
	case filestore.LandConflict, filestore.LandCheckFailed, filestore.LandQueued, filestore.LandChecking:
	default:
		return nil, fmt.Errorf("task %s's landing is %s: only a conflict, a failed check or a waiting entry can be retried", id, t.Landing.State)
	}
	p, err := q.s.ProjectView()
	if err != nil {
		return nil, err
	}
	root := filestore.LandingRoot(t)
	q.s.UpdateLanding(actor, root, func(_ *filestore.Task, l *filestore.Landing) error {
		l.Attempts = min(l.Attempts, p.Settings.LandAttempts()-1)
		l.NeedsHuman = false
		return nil
	})
	q.mu.Lock()
	delete(q.held, id)
	q.mu.Unlock()
	return q.s.UpdateLanding(actor, id, func(_ *filestore.Task, l *filestore.Landing) error {
		now := time.Now().UTC()
		l.State, l.NeedsHuman, l.Detail, l.QueuedAt = filestore.LandQueued, false, "retried by "+actor.ID, &now
		return nil
	})
}

// Abandon gives a task's code up: it never lands; its worktree goes, its branch stays.
func (q *Queue) Abandon(actor filestore.Actor, id string) (*filestore.Task, error) {
	t, err := q.s.Task(id)
	if err != nil {
		return nil, err
	}
	if t.Landing == nil {
		return nil, fmt.Errorf("task %s has no branch of its own: nothing to abandon", id)
	}
	if t.Landing.State == filestore.LandLanded {
		return nil, fmt.Errorf("task %s's code has landed already (%s)", id, t.Landing.LandedCommit)
	}
	give := func(_ *filestore.Task, l *filestore.Landing) error {
		l.State, l.NeedsHuman, l.Detail = filestore.LandAbandoned, false, "abandoned by "+actor.ID
		return nil
	}
	if root := filestore.LandingRoot(t); root != id {
		q.s.UpdateLanding(actor, root, give)
	}
	out, err := q.s.UpdateLanding(actor, id, give)
	if err != nil {
		return nil, err
	}
	q.remove(id, false)
	return out, nil
}
