package filestore

import (
	"strings"
	"testing"
)

// A task that started on a branch of its own moves its landing with its status: done
// queues it, cancelled gives it up. A dependent starts only once the dependency's code
// landed, by hand or by its agent's queue; a task without a branch counts as landed when
// done, as before.
func TestLandingFollowsStatusAndHoldsDependents(t *testing.T) {
	s := newTestStore(t)
	dep := mustTask(t, s, NewTask{Title: "dep", Status: StatusTodo, AssigneeID: "w1"})
	next := mustTask(t, s, NewTask{Title: "next", Status: StatusTodo, AssigneeID: "w2", Dependencies: []string{dep.ID}})
	if _, err := s.SetTaskStatus(human, dep.ID, StatusInProgress, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.BeginLanding(human, dep.ID, Landing{Target: "main", Branch: "aipm/" + dep.ID, Base: "abc"}); err != nil {
		t.Fatal(err)
	}
	// A second start keeps the record it has.
	if tk, err := s.BeginLanding(human, dep.ID, Landing{Target: "other", Branch: "x", Base: "def"}); err != nil || tk.Landing.Base != "abc" {
		t.Fatalf("BeginLanding again: %+v, %v; want the first record kept", tk.Landing, err)
	}
	if _, err := s.SetTaskStatus(human, dep.ID, StatusDone, ""); err != nil {
		t.Fatal(err)
	}
	got, err := s.Task(dep.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Landing.State != LandQueued || got.Landing.QueuedAt == nil {
		t.Fatalf("after done: landing %+v, want queued with its time", got.Landing)
	}
	if DependencyMet(got) {
		t.Fatal("a dependency whose code waits in the queue is met")
	}
	_, err = s.SetTaskStatus(human, next.ID, StatusInProgress, "")
	if code(err) != "dependencies_not_done" || !strings.Contains(err.Error(), dep.ID+" (done, landing queued)") {
		t.Fatalf("starting the dependent: %v; want dependencies_not_done naming the queued landing", err)
	}
	all, err := s.Tasks(TaskFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if started, err := s.StartQueued(all); err != nil || len(started) != 0 {
		t.Fatalf("StartQueued: %d started, %v; want none while the dependency has not landed", len(started), err)
	}
	if _, err := s.UpdateLanding(human, dep.ID, func(_ *Task, l *Landing) error {
		l.State, l.LandedCommit = LandLanded, "1234567890abcdef"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Task(dep.ID); !DependencyMet(got) || got.LandingSummary() != "landed 1234567890" {
		t.Fatalf("landed: met %v, summary %q", DependencyMet(got), got.LandingSummary())
	}
	if _, err := s.SetTaskStatus(human, next.ID, StatusInProgress, ""); err != nil {
		t.Fatalf("starting the dependent once its dependency landed: %v", err)
	}
	evs, err := s.Events(dep.ID)
	if err != nil {
		t.Fatal(err)
	}
	var changes []string
	for _, e := range evs {
		if e.Change == "landing" {
			changes = append(changes, e.From+">"+e.To)
		}
	}
	if got := strings.Join(changes, ","); got != ">working,queued>landed" {
		t.Errorf("landing history %q, want >working,queued>landed", got)
	}

	// Cancelled: the code is given up.
	other := mustTask(t, s, NewTask{Title: "other", Status: StatusTodo, AssigneeID: "w1"})
	if _, err := s.SetTaskStatus(human, other.ID, StatusInProgress, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.BeginLanding(human, other.ID, Landing{Target: "main", Branch: "aipm/" + other.ID, Base: "abc"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetTaskStatus(human, other.ID, StatusCancelled, "not needed"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Task(other.ID); got.Landing.State != LandAbandoned {
		t.Errorf("cancelled: landing %s, want abandoned", got.Landing.State)
	}
	// A task without a branch lands nothing: done is enough.
	plain := mustTask(t, s, NewTask{Title: "plain", Status: StatusTodo, AssigneeID: "w1"})
	if _, err := s.SetTaskStatus(human, plain.ID, StatusInProgress, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetTaskStatus(human, plain.ID, StatusDone, ""); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Task(plain.ID); got.Landing != nil || !DependencyMet(got) {
		t.Errorf("a task without a branch: landing %+v, met %v", got.Landing, DependencyMet(got))
	}
	if _, err := s.UpdateLanding(human, plain.ID, func(*Task, *Landing) error { return nil }); code(err) != "no_landing" {
		t.Errorf("UpdateLanding of a task without a branch: %v, want no_landing", err)
	}
}

// A rework carries the original's description unchanged, then a blank line, then what
// went wrong; it is its assignee's, linked to the original, started when the agent has
// room, and the failed task's landing names it. Its title counts the attempts.
func TestCreateRework(t *testing.T) {
	s := newTestStore(t)
	orig := mustTask(t, s, NewTask{Title: "Add b", Description: "append lib.sh b", Priority: "high", Status: StatusTodo, AssigneeID: "w1"})
	if _, err := s.SetTaskStatus(human, orig.ID, StatusInProgress, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.BeginLanding(human, orig.ID, Landing{Target: "main", Branch: "aipm/" + orig.ID, Base: "abc"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetTaskStatus(human, orig.ID, StatusDone, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateLanding(human, orig.ID, func(_ *Task, l *Landing) error {
		l.State, l.Attempts = LandConflict, 1
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	rw, err := s.CreateRework(human, orig.ID, orig.ID, "it conflicts in lib.sh")
	if err != nil {
		t.Fatal(err)
	}
	if rw.Description != "append lib.sh b\n\nit conflicts in lib.sh" {
		t.Errorf("description %q", rw.Description)
	}
	if rw.Title != "Add b (rework 1)" || rw.AssigneeID != "w1" || rw.Priority != "high" || rw.ReworkOf != orig.ID || rw.ParentID != "" {
		t.Errorf("rework %+v", rw)
	}
	if rw.Status != StatusInProgress {
		t.Errorf("rework status %s, want in_progress (w1 has room)", rw.Status)
	}
	if got, _ := s.Task(orig.ID); got.Landing.ReworkTaskID != rw.ID {
		t.Errorf("original's landing names rework %q, want %s", got.Landing.ReworkTaskID, rw.ID)
	}
	if LandingRoot(rw) != orig.ID || LandingRoot(orig) != orig.ID {
		t.Error("LandingRoot does not lead back to the original")
	}
	if got := ReworkTitle("Add b (rework 1)", 2); got != "Add b (rework 2)" {
		t.Errorf("ReworkTitle = %q", got)
	}
	// A copy of a task does not share its landing record with the cache.
	got, _ := s.Task(orig.ID)
	c := cloneTask(got)
	c.Landing.State = LandLanded
	if got.Landing.State == LandLanded {
		t.Error("cloneTask shares the landing record with the cache")
	}
}
