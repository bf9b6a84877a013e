package tools

import (
	"testing"

	"github.com/aipm/aipm/filestore"
)

// TestFinishStartsTheNextSubtask: update_task_status(done, start_next=true) also makes the
// start the next answer would ask for — the worker's next ready sub-task — and answers
// with what follows it; without a ready one it starts nothing; it applies only to done.
func TestFinishStartsTheNextSubtask(t *testing.T) {
	s, st := newTestServer(t)
	out, isErr := invoke(t, s, s.tools["authenticate"], map[string]any{"agent_id": "w1", "passkey": "w1-passkey", "purpose": "task"})
	if isErr {
		t.Fatalf("authenticate: %v", out)
	}
	mine, err := st.Tasks(filestore.TaskFilter{AssigneeID: "w1", Status: filestore.StatusInProgress})
	if err != nil || len(mine) != 1 {
		t.Fatalf("w1's task: %v, %v", mine, err)
	}
	mainID := mine[0].ID
	w1 := filestore.Actor{ID: "w1", Via: filestore.ViaTool}
	subs, _, err := st.CreateTasks(w1, mainID, []filestore.BatchItem{
		{LocalID: "a", NewTask: filestore.NewTask{Title: "first", AssigneeID: "w1", Status: filestore.StatusTodo}},
		{LocalID: "b", NewTask: filestore.NewTask{Title: "second", AssigneeID: "w1", Status: filestore.StatusTodo, Dependencies: []string{"a"}}},
		{LocalID: "c", NewTask: filestore.NewTask{Title: "third", AssigneeID: "w1", Status: filestore.StatusTodo, Dependencies: []string{"b"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := subs[0].ID, subs[1].ID, subs[2].ID
	status := func(id string) string {
		tk, err := st.Task(id)
		if err != nil {
			t.Fatal(err)
		}
		return tk.Status
	}
	if out, isErr := invoke(t, s, s.tools["get_my_task"], map[string]any{}); isErr {
		t.Fatalf("get_my_task: %v", out)
	}
	upd := s.tools["update_task_status"]
	if out, isErr := invoke(t, s, upd, map[string]any{"task_id": a, "status": "in_progress", "start_next": true}); !isErr || out["error"] != "invalid_argument" {
		t.Errorf("start_next with in_progress: %v", out)
	}
	if out, isErr := invoke(t, s, upd, map[string]any{"task_id": a, "status": "in_progress"}); isErr {
		t.Fatalf("start a: %v", out)
	}
	out, isErr = invoke(t, s, upd, map[string]any{"task_id": a, "status": "done", "start_next": true})
	if isErr || out["started_task_id"] != b || status(b) != filestore.StatusInProgress || status(c) != filestore.StatusTodo {
		t.Fatalf("finishing a: %v (b %s, c %s)", out, status(b), status(c))
	}
	next, _ := out["next_action"].(map[string]any)
	if next["action"] != "execute_subtask" || next["current_subtask"].(map[string]any)["id"] != b {
		t.Errorf("next after the start: %v", next)
	}
	// The history tells both changes, each by the worker.
	evs, err := st.Events(b)
	if err != nil || len(evs) == 0 || evs[len(evs)-1].To != filestore.StatusInProgress || evs[len(evs)-1].Actor != "w1" {
		t.Errorf("b's history: %+v, %v", evs, err)
	}
	// Finishing b starts c; finishing c, the last, starts nothing and says to report.
	if out, _ := invoke(t, s, upd, map[string]any{"task_id": b, "status": "done", "start_next": true}); out["started_task_id"] != c {
		t.Fatalf("finishing b: %v", out)
	}
	out, isErr = invoke(t, s, upd, map[string]any{"task_id": c, "status": "done", "start_next": true})
	if isErr || out["started_task_id"] != nil {
		t.Fatalf("finishing c: %v", out)
	}
	if next, _ := out["next_action"].(map[string]any); next["action"] != "report_completion" {
		t.Errorf("after the last: %v", next)
	}
}
