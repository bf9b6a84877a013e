package main

import (
	"fmt"
	"strings"

	"github.com/aipm/aipm/cmd/aipm/internal/land"
	"github.com/aipm/aipm/filestore"
)

// openQueue opens the store and the merge queue of the clone around it.
func (a *app) openQueue() (*filestore.Store, *land.Queue, error) {
	s, err := a.open()
	if err != nil {
		return nil, nil, err
	}
	q, ok := land.New(s, func(format string, args ...any) { a.printf(format+"\n", args...) })
	if !ok {
		return nil, nil, fmt.Errorf("%s is not in a Git repository: tasks land code only in one", s.Root())
	}
	return s, q, nil
}

// landList prints the merge queue of this clone, and every task whose landing waits
// for a person.
func (a *app) landList(args []string) error {
	fs := newFlags(a, "land list")
	if _, err := fs.parse(args, 0, 0, ""); err != nil {
		return err
	}
	s, q, err := a.openQueue()
	if err != nil {
		return err
	}
	es, err := q.Entries()
	if err != nil {
		return err
	}
	needs, err := q.NeedsYou()
	if err != nil {
		return err
	}
	if fs.json {
		if es == nil {
			es = []*filestore.Task{}
		}
		if needs == nil {
			needs = []*filestore.Task{}
		}
		return a.printJSON(struct {
			Queue    []*filestore.Task `json:"queue"`
			NeedsYou []*filestore.Task `json:"needs_you"`
		}{es, needs})
	}
	if len(es) == 0 {
		a.printf("the merge queue is empty\n")
	}
	for i, t := range es {
		a.printf("%d. %s  %-9s %s  %s  (%s, branch %s)\n", i+1, t.ID, t.Landing.State, t.Priority, t.Title, orDash(t.AssigneeID), t.Landing.Branch)
		if t.Landing.Detail != "" {
			a.printf("   %s\n", firstLineOf(t.Landing.Detail))
		}
	}
	for _, t := range needs {
		attempts := t.Landing.Attempts
		if root, err := s.Task(filestore.LandingRoot(t)); err == nil && root.Landing != nil {
			attempts = root.Landing.Attempts
		}
		a.printf("needs you: %s  %s  %s after %d attempt(s): `aipm land retry %s` or `aipm land abandon %s`\n", t.ID, t.Title, t.Landing.State, attempts, t.ID, t.ID)
		a.printf("   %s\n", strings.ReplaceAll(t.Landing.Detail, "\n", "\n   "))
	}
	return nil
}

func firstLineOf(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// landRun lands what the queue holds now, one task after another, and returns when
// nothing more can land without help: the queue without `aipm run`.
func (a *app) landRun(args []string) error {
	fs := newFlags(a, "land run")
	if _, err := fs.parse(args, 0, 0, ""); err != nil {
		return err
	}
	_, q, err := a.openQueue()
	if err != nil {
		return err
	}
	n := 0
	for {
		did, _, err := q.Step(nil)
		if err != nil {
			return err
		}
		if !did {
			break
		}
		n++
	}
	waiting, held := q.Waiting()
	a.printf("the queue did %d step(s); %d entr(ies) left to land, %d waiting\n", n, waiting, len(held))
	for _, h := range held {
		a.printf("  waits: %s\n", h)
	}
	return nil
}

// landRetry puts a task whose landing failed back in the queue for one more attempt.
func (a *app) landRetry(args []string) error {
	t, err := a.landOne("land retry", args, (*land.Queue).Retry)
	if err == nil {
		a.printf("%s is queued again: `aipm run` (or `aipm land run`) lands it\n", t.ID)
	}
	return err
}

// landAbandon gives a task's code up: it never lands.
func (a *app) landAbandon(args []string) error {
	t, err := a.landOne("land abandon", args, (*land.Queue).Abandon)
	if err == nil {
		a.printf("%s's code is abandoned; its branch %s stays for reference\n", t.ID, t.Landing.Branch)
	}
	return err
}

// landOne is a command that does one thing to one task's landing, as the acting human.
func (a *app) landOne(path string, args []string, do func(*land.Queue, filestore.Actor, string) (*filestore.Task, error)) (*filestore.Task, error) {
	fs := newFlags(a, path)
	pos, err := fs.parse(args, 1, 1, "ID")
	if err != nil {
		return nil, err
	}
	s, q, err := a.openQueue()
	if err != nil {
		return nil, err
	}
	id, err := taskID(s, pos[0])
	if err != nil {
		return nil, err
	}
	actor, err := a.actor(s, fs.as)
	if err != nil {
		return nil, err
	}
	return do(q, actor, id)
}

// printLanding prints where a task's code is: its branch, its landing, the commit on the
// target, and what it changes (git's diff summary).
func (a *app) printLanding(s *filestore.Store, t *filestore.Task, sh shortener) {
	if t.ReworkOf != "" {
		a.printf("  rework of: %s\n", sh.id(t.ReworkOf))
	}
	l := t.Landing
	if l == nil {
		return
	}
	a.printf("code:\n")
	a.printf("  branch: %s from %s at %.10s", l.Branch, l.Target, l.Base)
	if l.Machine != "" {
		a.printf(" (machine %s)", l.Machine)
	}
	a.printf("\n  landing: %s\n", t.LandingSummary())
	if l.LandedCommit != "" {
		a.printf("  landed: %s on %s", l.LandedCommit, l.Target)
		if l.LandedAt != nil {
			a.printf(" at %s", localTime(*l.LandedAt))
		}
		a.printf(" (git log --grep 'Aipm-Task: %s')\n", t.ID)
	}
	if l.Attempts > 0 {
		a.printf("  failed attempts: %d\n", l.Attempts)
	}
	if l.ReworkTaskID != "" {
		a.printf("  rework: %s\n", sh.id(l.ReworkTaskID))
	}
	if l.Detail != "" {
		a.printf("  %s\n", strings.ReplaceAll(l.Detail, "\n", "\n    "))
	}
	if l.NeedsHuman {
		a.printf("  needs you: `aipm land retry %s` or `aipm land abandon %s`\n", t.ID, t.ID)
	}
	q, ok := land.New(s, nil)
	if !ok {
		return
	}
	if stat, err := q.Diff(t, true); err == nil && stat != "" {
		a.printf("  changes:\n    %s\n", strings.ReplaceAll(stat, "\n", "\n    "))
	}
}

// landDetail is a landing's detail as a suffix: ": <its first line>", or "".
func landDetail(t *filestore.Task) string {
	if t.Landing == nil || t.Landing.Detail == "" {
		return ""
	}
	return ": " + land.Summary(t.Landing.Detail)
}
