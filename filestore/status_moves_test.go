package filestore

import (
	"strings"
	"testing"
)

// TestStatusMoves: the moves offered are the table's, each with the refusal SetTaskStatus
// gives at that moment, and an allowed one is taken.
func TestStatusMoves(t *testing.T) {
	s := newTestStore(t)
	dep := mustTask(t, s, NewTask{Title: "Schema", AssigneeID: "w1", Status: StatusTodo})
	tk := mustTask(t, s, NewTask{Title: "API", Status: StatusTodo, Dependencies: []string{dep.ID}})
	moves := func(id string) map[string]string {
		t.Helper()
		ms, err := s.StatusMoves(id)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		var order []string
		for _, m := range ms {
			order = append(order, m.Status)
			out[m.Status] = ""
			if m.Refusal != nil {
				out[m.Status] = m.Refusal.Code
			}
		}
		out["order"] = strings.Join(order, ",")
		return out
	}
	got := moves(tk.ID)
	if got["order"] != "backlog,in_progress,blocked,cancelled" {
		t.Errorf("moves of a todo task: %s, want the table's row in workflow order", got["order"])
	}
	// No assignee: in_progress is refused as SetTaskStatus refuses it.
	_, err := s.SetTaskStatus(human, tk.ID, StatusInProgress, "")
	if got["in_progress"] != "assignee_required" || code(err) != "assignee_required" {
		t.Errorf("in_progress without an assignee: move %q, SetTaskStatus %q; want assignee_required for both", got["in_progress"], code(err))
	}
	if got["backlog"] != "" || got["cancelled"] != "" {
		t.Errorf("backlog %q, cancelled %q: want both allowed", got["backlog"], got["cancelled"])
	}
	// Assigned, its dependency still open: the next rule refuses.
	if _, err := s.AssignTask(human, tk.ID, "w2"); err != nil {
		t.Fatal(err)
	}
	if got := moves(tk.ID)["in_progress"]; got != "dependencies_not_done" {
		t.Errorf("in_progress with an open dependency: %q, want dependencies_not_done", got)
	}
	// The dependency done: the move is allowed, and taken.
	for _, st := range []string{StatusInProgress, StatusDone} {
		if _, err := s.SetTaskStatus(human, dep.ID, st, ""); err != nil {
			t.Fatal(err)
		}
	}
	if got := moves(tk.ID)["in_progress"]; got != "" {
		t.Errorf("in_progress once the dependency is done: refused %q", got)
	}
	if _, err := s.SetTaskStatus(human, tk.ID, StatusInProgress, ""); err != nil {
		t.Errorf("the allowed move was refused: %v", err)
	}
	// A sub-task open: done is refused.
	mustTask(t, s, NewTask{Title: "Tests", ParentID: tk.ID})
	if got := moves(tk.ID)["done"]; got != "subtasks_not_finished" {
		t.Errorf("done with an open sub-task: %q, want subtasks_not_finished", got)
	}
	// A finished task has none.
	if got := moves(dep.ID)["order"]; got != "" {
		t.Errorf("moves of a done task: %q, want none", got)
	}
	if _, err := s.StatusMoves("tsk_nope"); err == nil {
		t.Errorf("StatusMoves of an unknown id: no error")
	}
}
