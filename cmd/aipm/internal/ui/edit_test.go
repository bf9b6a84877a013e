package ui

import (
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/aipm/aipm/filestore"
)

// TestCreateAndEditTask: New task and Edit are the store's CreateTask and EditTask by the
// acting human, via ui: their rules refuse what the CLI's refuse, short ids resolve as on
// the command line, and they need the token in the header.
func TestCreateAndEditTask(t *testing.T) {
	ts, st, _, ship := newTestServer(t)
	short := ship[:len("tsk_")+4]
	code, body := do(t, ts, "POST", "/api/tasks", "", testToken,
		`{"title":"  Write the docs ","description":"all of them","priority":"high","status":"todo","assignee":"w1","parent":"`+short+`","dependencies":["`+strings.TrimPrefix(short, "tsk_")+`"]}`)
	if code != http.StatusOK {
		t.Fatalf("create: %d %s", code, body)
	}
	var made filestore.Task
	if err := json.Unmarshal([]byte(body), &made); err != nil {
		t.Fatal(err)
	}
	got, err := st.Task(made.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Title != "Write the docs" || got.Description != "all of them" || got.Priority != "high" || got.Status != filestore.StatusTodo ||
		got.AssigneeID != "w1" || got.ParentID != ship || !slices.Equal(got.Dependencies, []string{ship}) || got.CreatedBy != "alice" {
		t.Errorf("created task %+v, want the fields sent, the short ids expanded, created by alice", got)
	}
	evs, err := st.Events(made.ID)
	if err != nil {
		t.Fatal(err)
	}
	if evs[0].Actor != "alice" || evs[0].Via != filestore.ViaUI {
		t.Errorf("creation event %+v, want alice via ui", evs[0])
	}
	// The store's rules: an empty title, a priority it does not know, a status a new task
	// cannot have, an unknown dependency.
	for _, c := range []struct{ body, code string }{
		{`{"title":"   "}`, "invalid_argument"},
		{`{"title":"x","priority":"whenever"}`, "invalid_argument"},
		{`{"title":"x","status":"done"}`, "invalid_argument"},
		{`{"title":"x","dependencies":["tsk_9zzz"]}`, "task_not_found"},
		{`{"title":"x","assignee":"nobody"}`, ""},
	} {
		code, body := do(t, ts, "POST", "/api/tasks", "", testToken, c.body)
		if code < 400 || (c.code != "" && !strings.Contains(body, `"error":"`+c.code+`"`)) || !strings.Contains(body, `"message"`) {
			t.Errorf("create %s: %d %s, want refused with %q and a message", c.body, code, body, c.code)
		}
	}
	// Edit: the fields given change, in one history event; the others stay.
	code, body = do(t, ts, "POST", "/api/tasks/"+made.ID+"/edit", "", testToken, `{"title":"Write the user docs","priority":"low","dependencies":[]}`)
	if code != http.StatusOK || !strings.Contains(body, `"updated_fields":["title","priority","dependencies"]`) {
		t.Fatalf("edit: %d %s, want title, priority and dependencies changed", code, body)
	}
	if got, _ = st.Task(made.ID); got.Title != "Write the user docs" || got.Priority != "low" || got.Description != "all of them" || len(got.Dependencies) != 0 {
		t.Errorf("after edit: %+v", got)
	}
	if evs, _ = st.Events(made.ID); evs[len(evs)-1].Actor != "alice" || evs[len(evs)-1].Via != filestore.ViaUI || evs[len(evs)-1].Change != "updated" {
		t.Errorf("edit event %+v, want alice via ui, updated", evs[len(evs)-1])
	}
	// A cycle is refused as aipm task edit refuses it.
	if code, body := do(t, ts, "POST", "/api/tasks/"+ship+"/edit", "", testToken, `{"dependencies":["`+made.ID+`"]}`); code != http.StatusOK {
		t.Fatalf("edit deps: %d %s", code, body)
	}
	if code, body := do(t, ts, "POST", "/api/tasks/"+made.ID+"/edit", "", testToken, `{"dependencies":["`+ship+`"]}`); code != http.StatusBadRequest || !strings.Contains(body, "dependency_cycle") {
		t.Errorf("a cycle: %d %s, want 400 dependency_cycle", code, body)
	}
	if code, body := do(t, ts, "POST", "/api/tasks/"+made.ID+"/edit", "", testToken, `{}`); code != http.StatusBadRequest || !strings.Contains(body, "nothing to change") {
		t.Errorf("an empty edit: %d %s, want 400 nothing to change", code, body)
	}
	// Without the token in the header (a form on another site cannot send one): refused,
	// and nothing written.
	for _, p := range []string{"/api/tasks?token=" + testToken, "/api/tasks/" + made.ID + "/edit?token=" + testToken} {
		if code, _ := do(t, ts, "POST", p, "", "", `{"title":"forged"}`); code != http.StatusForbidden {
			t.Errorf("POST %s without the header: %d, want 403", p, code)
		}
	}
	if code, _ := do(t, ts, "POST", "/api/tasks", "evil.example", testToken, `{"title":"forged"}`); code != http.StatusForbidden {
		t.Errorf("POST /api/tasks under a foreign Host: %d, want 403", code)
	}
	all, err := st.Tasks(filestore.TaskFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range all {
		if tk.Title == "forged" {
			t.Errorf("a refused request created %s", tk.ID)
		}
	}
}

// TestMovesFollowStoreRules: the details and /moves list the table's moves, each allowed
// or with the store's refusal.
func TestMovesFollowStoreRules(t *testing.T) {
	ts, st, _, ship := newTestServer(t)
	loose, err := st.CreateTask(filestore.Actor{ID: "alice", Via: filestore.ViaCLI}, filestore.NewTask{Title: "Loose end", Status: filestore.StatusTodo})
	if err != nil {
		t.Fatal(err)
	}
	var ms []move
	code, body := do(t, ts, "GET", "/api/tasks/"+loose.ID+"/moves", "", testToken, "")
	if code != http.StatusOK || json.Unmarshal([]byte(body), &ms) != nil {
		t.Fatalf("moves: %d %s", code, body)
	}
	want := map[string]bool{"backlog": true, "in_progress": false, "blocked": true, "cancelled": true}
	if len(ms) != len(want) {
		t.Errorf("moves %+v, want %v", ms, want)
	}
	for _, m := range ms {
		if ok, in := want[m.Status]; !in || ok != m.OK || (!m.OK && (m.Reason == "" || m.Hint == "")) {
			t.Errorf("move %+v, want ok %v (a refusal with its reason and hint)", m, ok)
		}
	}
	// The refused move is refused by the action too, with the same words.
	_, refusal := do(t, ts, "POST", "/api/tasks/"+loose.ID+"/status", "", testToken, `{"status":"in_progress"}`)
	for _, m := range ms {
		if m.Status == "in_progress" && !strings.Contains(refusal, m.Reason) {
			t.Errorf("POST status in_progress: %s, want the reason offered %q", refusal, m.Reason)
		}
	}
	var d struct {
		Moves []move `json:"moves"`
	}
	code, body = do(t, ts, "GET", "/api/tasks/"+ship, "", testToken, "")
	if code != http.StatusOK || json.Unmarshal([]byte(body), &d) != nil {
		t.Fatalf("details: %d %s", code, body)
	}
	if len(d.Moves) != 4 || !slices.ContainsFunc(d.Moves, func(m move) bool { return m.Status == "in_progress" && m.OK }) {
		t.Errorf("the details' moves %+v, want in_progress allowed for an assigned todo task", d.Moves)
	}
	if code, _ := do(t, ts, "GET", "/api/tasks/"+ship+"/moves", "", "", ""); code != http.StatusForbidden {
		t.Errorf("moves without the token: %d, want 403", code)
	}
}

// TestNeedsYouOneApproval: a task request is one item in Needs you (not also the store's
// message asking for it), and none once approved.
func TestNeedsYouOneApproval(t *testing.T) {
	ts, st, _, _ := newTestServer(t)
	res, err := st.RequestTask(filestore.Actor{ID: "w1", Via: filestore.ViaTool}, "", filestore.TaskRequest{Title: "Add search"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Notified) != 1 {
		t.Fatalf("the request notified %v, want alice", res.Notified)
	}
	items := func() []attention {
		t.Helper()
		return readState(t, func() (int, string) { return do(t, ts, "GET", "/api/state", "", testToken, "") }).Attention
	}
	got := items()
	var about []string
	for _, a := range got {
		if a.TaskID == res.Task.ID {
			about = append(about, a.Kind)
		}
	}
	if !slices.Equal(about, []string{"approval"}) {
		t.Errorf("Needs you about the request: %v, want one approval item (%+v)", about, got)
	}
	if code, body := do(t, ts, "POST", "/api/tasks/"+res.Task.ID+"/approve", "", testToken, ""); code != http.StatusOK {
		t.Fatalf("approve: %d %s", code, body)
	}
	for _, a := range items() {
		if a.TaskID == res.Task.ID {
			t.Errorf("after Approve Needs you still has %+v", a)
		}
	}
	// A message from an agent is still an item.
	if _, err := st.SendMessage(filestore.Actor{ID: "w1", Via: filestore.ViaTool}, filestore.SendRequest{To: "alice", Content: "done?"}); err != nil {
		t.Fatal(err)
	}
	if got := items(); len(got) != 1 || got[0].Kind != "message" {
		t.Errorf("after w1's message: %+v, want it", got)
	}
}

// A task whose file holds a merge conflict stays on the board as this clone's side, with
// the conflict on its card and one Needs-you item that says how to settle it.
func TestConflictedTaskOnTheBoard(t *testing.T) {
	ts, st, _, _ := newTestServer(t)
	tk, err := st.CreateTask(filestore.Actor{ID: "alice", Via: filestore.ViaCLI}, filestore.NewTask{Title: "Before"})
	if err != nil {
		t.Fatal(err)
	}
	o, th := *tk, *tk
	o.Title, th.Title = "Named in B", "Named in A"
	od, _ := json.MarshalIndent(&o, "", "  ")
	td, _ := json.MarshalIndent(&th, "", "  ")
	if err := os.WriteFile(st.TaskFile(tk.ID), filestore.MarkConflicts(append(od, '\n'), append(td, '\n')), 0o644); err != nil {
		t.Fatal(err)
	}
	st.Changed("tasks/" + tk.ID + ".json")
	state := readState(t, func() (int, string) { return do(t, ts, "GET", "/api/state", "", testToken, "") })
	var row *taskRow
	for i := range state.Tasks {
		if state.Tasks[i].ID == tk.ID {
			row = &state.Tasks[i]
		}
	}
	if row == nil || row.Title != "Named in B" || row.Conflict != `title (ours "Named in B", theirs "Named in A")` {
		t.Fatalf("the board's row: %+v", row)
	}
	var kinds []string
	for _, a := range state.Attention {
		if a.TaskID == tk.ID {
			kinds = append(kinds, a.Kind)
			if !strings.Contains(a.Text, "aipm resolve .ai-pm/tasks/"+tk.ID+".json --ours") {
				t.Errorf("the item does not say how to settle it: %s", a.Text)
			}
		}
	}
	if !slices.Equal(kinds, []string{"conflict"}) {
		t.Errorf("Needs you about the conflicted task: %v", kinds)
	}
}
