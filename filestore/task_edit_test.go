package filestore

import (
	"slices"
	"strings"
	"testing"
)

func TestEditTask(t *testing.T) {
	s := newTestStore(t)
	a := mustTask(t, s, NewTask{Title: "A"})
	b := mustTask(t, s, NewTask{Title: "B", Dependencies: []string{a.ID}})
	ptr := func(v string) *string { return &v }
	deps := func(ids ...string) *[]string { return &ids }

	tk, fields, err := s.EditTask(human, a.ID, TaskEdit{Title: ptr("  A, renamed "), Priority: ptr("high"), Description: ptr(a.Description)})
	if err != nil {
		t.Fatal(err)
	}
	if tk.Title != "A, renamed" || tk.Priority != "high" || !slices.Equal(fields, []string{"title", "priority"}) {
		t.Errorf("edit: title %q priority %q fields %v", tk.Title, tk.Priority, fields)
	}
	if tk.Version != a.Version+1 {
		t.Errorf("version %d, want %d: one write for all fields", tk.Version, a.Version+1)
	}
	evs, err := s.Events(a.ID)
	if err != nil {
		t.Fatal(err)
	}
	last := evs[len(evs)-1]
	if last.Change != "updated" || !slices.Equal(last.Fields, fields) || last.Actor != human.ID {
		t.Errorf("history: %+v", last)
	}

	// The same values again change nothing and write nothing.
	if tk, fields, err = s.EditTask(human, a.ID, TaskEdit{Title: ptr("A, renamed")}); err != nil || len(fields) != 0 || tk.Version != a.Version+1 {
		t.Errorf("no-op edit: fields %v version %d err %v", fields, tk.Version, err)
	}

	for _, c := range []struct {
		name string
		id   string
		e    TaskEdit
		code string
	}{
		{"nothing given", a.ID, TaskEdit{}, "invalid_argument"},
		{"empty title", a.ID, TaskEdit{Title: ptr("  ")}, "invalid_argument"},
		{"long title", a.ID, TaskEdit{Title: ptr(strings.Repeat("x", 201))}, "invalid_argument"},
		{"unknown priority", a.ID, TaskEdit{Priority: ptr("extreme")}, "invalid_argument"},
		{"cycle", a.ID, TaskEdit{Dependencies: deps(b.ID)}, "dependency_cycle"},
		{"self", a.ID, TaskEdit{Dependencies: deps(a.ID)}, "invalid_dependency"},
		{"missing dependency", a.ID, TaskEdit{Dependencies: deps("tsk_nosuchtask")}, "task_not_found"},
		{"missing task", "tsk_nosuchtask", TaskEdit{Title: ptr("x")}, "task_not_found"},
	} {
		if _, _, err := s.EditTask(human, c.id, c.e); code(err) != c.code {
			t.Errorf("%s: got %v, want %s", c.name, err, c.code)
		}
	}

	if tk, fields, err = s.EditTask(human, b.ID, TaskEdit{Dependencies: deps()}); err != nil || !slices.Equal(fields, []string{"dependencies"}) || len(tk.Dependencies) != 0 {
		t.Errorf("clearing dependencies: %v %v %v", tk, fields, err)
	}

	if _, err := s.SetTaskStatus(human, b.ID, StatusCancelled, ""); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.EditTask(human, b.ID, TaskEdit{Title: ptr("B again")}); code(err) != "task_finished" {
		t.Errorf("editing a cancelled task: %v", err)
	}
}

func TestHandBrokenStatusIsRefusedInDoctorsWords(t *testing.T) {
	s := newTestStore(t)
	a := mustTask(t, s, NewTask{Title: "A"})
	writeTaskStatus(t, s, a.ID, "bogus")
	tk, err := s.Task(a.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := `invalid status "bogus" (want backlog, todo, in_progress, blocked, done, cancelled)`
	if tk.Problem() != want {
		t.Errorf("Problem() = %q, want %q", tk.Problem(), want)
	}
	_, err = s.SetTaskStatus(human, a.ID, StatusTodo, "")
	if code(err) != "task_file_invalid" || !strings.Contains(err.Error(), want) {
		t.Errorf("SetTaskStatus on a broken task: %v", err)
	}
	probs, err := s.Check()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range probs {
		found = found || strings.Contains(p.String(), want)
	}
	if !found {
		t.Errorf("doctor does not say %q: %v", want, probs)
	}
}
