package filestore

import (
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
