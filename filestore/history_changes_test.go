package filestore

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// An edit records the old and new value of every field it changed, and only those.
func TestEditRecordsOldAndNewValues(t *testing.T) {
	s := newTestStore(t)
	dep := mustTask(t, s, NewTask{Title: "dep"})
	tk := mustTask(t, s, NewTask{Title: "Old title", Description: "same"})
	title, desc, prio := "New title", "same", "high"
	deps := []string{dep.ID}
	if _, _, err := s.EditTask(human, tk.ID, TaskEdit{Title: &title, Description: &desc, Priority: &prio, Dependencies: &deps}); err != nil {
		t.Fatal(err)
	}
	evs, err := s.Events(tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	last := evs[len(evs)-1]
	want := []FieldChange{{"title", "Old title", "New title"}, {"priority", "medium", "high"}, {"dependencies", "", dep.ID}}
	if last.Change != "updated" || !slices.Equal(last.Changes, want) || !slices.Equal(last.Fields, []string{"title", "priority", "dependencies"}) {
		t.Errorf("event: %+v", last)
	}
}

// The last event of a task this process committed is known without reading the history;
// one another process committed after it is read from the history.
func TestLastEventOfOwnCommit(t *testing.T) {
	s := newTestStore(t)
	tk := mustTask(t, s, NewTask{Title: "t", Status: StatusTodo, AssigneeID: "w1"})
	isStatus := func(e *Event) bool { return e.Change == "status" }
	if _, err := s.SetTaskStatus(human, tk.ID, StatusInProgress, ""); err != nil {
		t.Fatal(err)
	}
	cur, err := s.Task(tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	// Without the history, only what this process remembers can answer.
	events := filepath.Join(s.Root(), DirName, "events.jsonl")
	kept, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(events, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ev, err := s.LastEventOf(cur, isStatus)
	if err != nil || ev == nil || ev.To != StatusInProgress || ev.Actor != human.ID {
		t.Fatalf("own commit's event: %+v, %v", ev, err)
	}
	if ev, err := s.LastEventOf(cur, func(e *Event) bool { return e.Change == "updated" }); err != nil || ev != nil {
		t.Errorf("an event of another kind: %+v, %v; want none (the history is empty)", ev, err)
	}
	if err := os.WriteFile(events, kept, 0o644); err != nil {
		t.Fatal(err)
	}
	other, err := Open(s.Root(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.SetTaskStatus(Actor{ID: "w1", Via: ViaTool}, tk.ID, StatusBlocked, "waits"); err != nil {
		t.Fatal(err)
	}
	if cur, err = s.Task(tk.ID); err != nil {
		t.Fatal(err)
	}
	if ev, err = s.LastEventOf(cur, isStatus); err != nil || ev == nil || ev.To != StatusBlocked || ev.Actor != "w1" {
		t.Errorf("another process's commit: %+v, %v; want w1's block", ev, err)
	}
}
