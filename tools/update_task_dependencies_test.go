package tools

import (
	"strings"
	"testing"

	"github.com/aipm/aipm/filestore"
)

// update_task_dependencies is the CLI's --add-dep/--remove-dep for a task session: the
// same rules (tasks exist, no cycle), only inside the session's task tree, and a clear
// refusal that changes nothing otherwise.
func TestUpdateTaskDependencies(t *testing.T) {
	s, st := newTestServer(t)
	owner := filestore.Actor{ID: "alice", Via: filestore.ViaCLI}
	tasks, err := st.Tasks(filestore.TaskFilter{AssigneeID: "w1"})
	if err != nil || len(tasks) != 1 {
		t.Fatalf("tasks %v, %v", tasks, err)
	}
	main := tasks[0]
	sub := func(title string, deps ...string) *filestore.Task {
		tk, err := st.CreateTask(owner, filestore.NewTask{Title: title, Status: filestore.StatusTodo, AssigneeID: "w1", ParentID: main.ID, Dependencies: deps})
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	a := sub("a")
	b := sub("b", a.ID)
	outside, err := st.CreateTask(owner, filestore.NewTask{Title: "elsewhere", Status: filestore.StatusTodo})
	if err != nil {
		t.Fatal(err)
	}
	if _, isErr := invoke(t, s, s.tools["authenticate"], map[string]any{"agent_id": "w1", "passkey": "w1-passkey"}); isErr {
		t.Fatal("authenticate failed")
	}
	call := func(args map[string]any) (map[string]any, bool) {
		return invoke(t, s, s.tools["update_task_dependencies"], args)
	}
	for _, c := range []struct {
		name string
		args map[string]any
		code string
	}{
		{"nothing to change", map[string]any{"task_id": b.ID}, "invalid_argument"},
		{"not a dependency", map[string]any{"task_id": b.ID, "remove": []any{outside.ID}}, "invalid_argument"},
		{"a cycle", map[string]any{"task_id": a.ID, "add": []any{b.ID}}, "dependency_cycle"},
		{"outside the session's tree", map[string]any{"task_id": outside.ID, "add": []any{a.ID}}, "unauthorized"},
	} {
		out, isErr := call(c.args)
		if !isErr || out["error"] != c.code {
			t.Errorf("%s: %v, want error %s", c.name, out, c.code)
		}
	}
	if got, _ := st.Task(b.ID); len(got.Dependencies) != 1 || got.Dependencies[0] != a.ID {
		t.Fatalf("a refusal changed the dependencies: %v", got.Dependencies)
	}
	out, isErr := call(map[string]any{"task_id": b.ID, "remove": []any{a.ID}})
	if isErr || out["success"] != true {
		t.Fatalf("remove: %v", out)
	}
	if got, _ := st.Task(b.ID); len(got.Dependencies) != 0 {
		t.Errorf("dependencies %v after remove, want none", got.Dependencies)
	}
	evs, _ := st.Events(b.ID)
	if last := evs[len(evs)-1]; last.Actor != "w1" || last.Via != filestore.ViaTool || !strings.Contains(strings.Join(last.Fields, ","), "dependencies") {
		t.Errorf("history %+v", last)
	}
}
