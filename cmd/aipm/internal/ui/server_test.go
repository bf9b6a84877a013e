package ui

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aipm/aipm/filestore"
	"github.com/aipm/aipm/watch"
)

const testToken = "0123456789abcdef"

// newTestServer serves a fresh project (owner alice, worker w1, a task pending approval)
// the way `aipm ui` does, on httptest's address.
func newTestServer(t *testing.T) (*httptest.Server, *filestore.Store, *watch.Hub, string) {
	t.Helper()
	return newTestServerWith(t, func(*filestore.Store) Queue { return nil })
}

// newTestServerWith is newTestServer with the merge queue queue returns for the store.
func newTestServerWith(t *testing.T, queue func(*filestore.Store) Queue) (*httptest.Server, *filestore.Store, *watch.Hub, string) {
	t.Helper()
	st, err := filestore.Init(t.TempDir(), filestore.InitOptions{Name: "shop", OwnerID: "alice"}, filestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	owner := filestore.Actor{ID: "alice", Via: filestore.ViaCLI}
	if _, _, err := st.AddAgent(owner, filestore.NewAgent{ID: "w1", ParentID: "alice"}); err != nil {
		t.Fatal(err)
	}
	task, err := st.CreateTask(owner, filestore.NewTask{Title: "Ship it", AssigneeID: "w1", Status: filestore.StatusTodo})
	if err != nil {
		t.Fatal(err)
	}
	hub := &watch.Hub{}
	ts := httptest.NewUnstartedServer(nil)
	host := ts.Listener.Addr().String()
	ts.Config.Handler = New(Options{Store: st, Hub: hub, Human: "alice", Token: testToken, Hosts: []string{host}, Heartbeat: time.Hour, Queue: queue(st)})
	ts.Start()
	t.Cleanup(ts.Close)
	return ts, st, hub, task.ID
}

func do(t *testing.T, ts *httptest.Server, method, path, host, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if token != "" {
		req.Header.Set("X-Aipm-Token", token)
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sb strings.Builder
	bufio.NewReader(resp.Body).WriteTo(&sb)
	return resp.StatusCode, sb.String()
}

func TestForeignHostRefused(t *testing.T) {
	ts, _, _, _ := newTestServer(t)
	port := ts.URL[strings.LastIndex(ts.URL, ":"):]
	for _, host := range []string{"evil.example" + port, "evil.example", "127.0.0.1:1", "localhost" + port} {
		code, body := do(t, ts, "GET", "/", host, "", "")
		if code != http.StatusForbidden || !strings.Contains(body, "refused") {
			t.Errorf("GET / with Host %q: %d %q, want 403 refused", host, code, body)
		}
		if code, _ := do(t, ts, "GET", "/api/state?token="+testToken, host, "", ""); code != http.StatusForbidden {
			t.Errorf("GET /api/state with Host %q and the token: %d, want 403", host, code)
		}
	}
	if code, body := do(t, ts, "GET", "/", "", "", ""); code != http.StatusOK || !strings.Contains(body, "<title>aipm</title>") {
		t.Errorf("GET / with the served Host: %d %.80q, want the page", code, body)
	}
	resp, err := ts.Client().Get(ts.URL + "/app.js")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("Content-Security-Policy %q, want the page's own files only", csp)
	}
}

func TestTokenRequired(t *testing.T) {
	ts, st, _, task := newTestServer(t)
	cases := []struct {
		method, path, token string
		want                int
	}{
		{"GET", "/api/state", "", http.StatusForbidden},
		{"GET", "/api/state", "wrong", http.StatusForbidden},
		{"GET", "/api/state?token=" + testToken, "", http.StatusOK},
		{"GET", "/api/state", testToken, http.StatusOK},
		{"POST", "/api/project/paused", "", http.StatusForbidden},
		{"POST", "/api/project/paused?token=" + testToken, "", http.StatusForbidden}, // a POST needs the header
		{"POST", "/api/tasks/" + task + "/status", "nope", http.StatusForbidden},
		{"POST", "/api/chat/w1/send", "", http.StatusForbidden},
	}
	for _, c := range cases {
		body := ""
		if c.method == "POST" {
			body = `{"status":"cancelled","content":"hi"}`
		}
		if code, out := do(t, ts, c.method, c.path, "", c.token, body); code != c.want {
			t.Errorf("%s %s with token %q: %d %q, want %d", c.method, c.path, c.token, code, out, c.want)
		}
	}
	// None of the refused requests changed anything.
	p, err := st.Project()
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != filestore.ProjectActive {
		t.Errorf("project status %s after refused requests, want active", p.Status)
	}
	tk, err := st.Task(task)
	if err != nil {
		t.Fatal(err)
	}
	if tk.Status != filestore.StatusTodo {
		t.Errorf("task status %s after refused requests, want todo", tk.Status)
	}
}

// TestActionsFollowStoreRules: the buttons go through the store as the acting human, via
// "ui", and a refusal carries the store's code and hint.
func TestActionsFollowStoreRules(t *testing.T) {
	ts, st, _, task := newTestServer(t)
	code, body := do(t, ts, "POST", "/api/tasks/"+task+"/status", "", testToken, `{"status":"done"}`)
	if code != http.StatusConflict || !strings.Contains(body, `"invalid_status_transition"`) || !strings.Contains(body, `"hint"`) {
		t.Errorf("todo → done: %d %s, want 409 with the store's code and hint", code, body)
	}
	if code, body := do(t, ts, "POST", "/api/tasks/"+task+"/status", "", testToken, `{"status":"in_progress"}`); code != http.StatusOK {
		t.Fatalf("todo → in_progress: %d %s", code, body)
	}
	if code, body := do(t, ts, "POST", "/api/chat/w1/send", "", testToken, `{"content":"hello from the page"}`); code != http.StatusOK {
		t.Fatalf("send: %d %s", code, body)
	}
	if code, body := do(t, ts, "POST", "/api/tasks/tsk_nope/assign", "", testToken, `{"assignee":"w1"}`); code != http.StatusBadRequest && code != http.StatusNotFound {
		t.Errorf("assign of a bad id: %d %s, want 400 or 404", code, body)
	}
	if code, body := do(t, ts, "POST", "/api/project/sleeping", "", testToken, ``); code != http.StatusBadRequest {
		t.Errorf("project sleeping: %d %s, want 400", code, body)
	}
	evs, err := st.Events(task)
	if err != nil {
		t.Fatal(err)
	}
	last := evs[len(evs)-1]
	if last.Actor != "alice" || last.Via != filestore.ViaUI || last.To != filestore.StatusInProgress {
		t.Errorf("last event %+v, want alice via ui → in_progress", last)
	}
	page, err := st.MessagesWith("w1", "alice", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Messages) != 1 || page.Messages[0].Content != "hello from the page" {
		t.Errorf("w1's mailbox with alice: %+v, want the message", page.Messages)
	}
}

// TestEventStream: a change reported to the hub reaches an open stream as a change event
// naming the path.
func TestEventStream(t *testing.T) {
	ts, st, hub, task := newTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/events?token="+testToken, nil)
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	r := bufio.NewReader(resp.Body)
	readEvent := func() (string, string) {
		var name, data string
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("reading the stream: %v", err)
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case line == "" && name != "":
				return name, data
			case strings.HasPrefix(line, "event: "):
				name = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				data = line[len("data: "):]
			}
		}
	}
	if name, _ := readEvent(); name != "hello" {
		t.Fatalf("first event %q, want hello", name)
	}
	hub.Notify("tasks/tsk_x.json")
	name, data := readEvent()
	var got changeEvent
	if err := json.Unmarshal([]byte(data), &got); err != nil {
		t.Fatal(err)
	}
	if name != "change" || len(got.Paths) != 1 || got.Paths[0] != "tasks/tsk_x.json" {
		t.Errorf("event %q %s, want change naming tasks/tsk_x.json", name, data)
	}
	// A file that is gone is a removed row; the first change carries the meta.
	if len(got.Removed) != 1 || got.Removed[0] != "tsk_x" || len(got.Tasks) != 0 || len(got.Meta) == 0 {
		t.Errorf("change for a missing task file: %s, want it removed, with the meta", data)
	}
	// A changed task comes as its row alone; the meta, unchanged, is not sent again.
	if _, _, err := st.EditTask(filestore.Actor{ID: "alice", Via: filestore.ViaCLI}, task, filestore.TaskEdit{Priority: ptr("high")}); err != nil {
		t.Fatal(err)
	}
	hub.Notify("tasks/" + task + ".json")
	_, data = readEvent()
	got = changeEvent{}
	if err := json.Unmarshal([]byte(data), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Tasks) != 1 || got.Tasks[0].ID != task || got.Tasks[0].Priority != "high" || len(got.Meta) != 0 {
		t.Errorf("change of task %s: %s, want its row alone", task, data)
	}
	// A rescan says reset: the page reads the state again.
	hub.Notify("")
	if _, data = readEvent(); !strings.Contains(data, `"reset":true`) {
		t.Errorf("after a rescan: %s, want reset", data)
	}
}

func ptr[T any](v T) *T { return &v }

// TestInvalidTaskReported: a task file whose status a hand edit put outside the table is on
// the board with the words of aipm doctor, and waits for the human.
func TestInvalidTaskReported(t *testing.T) {
	ts, st, _, task := newTestServer(t)
	path := filepath.Join(st.Dir(), "tasks", task+".json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), `"status": "todo"`, `"status": "wip"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	st.Changed("tasks/" + task + ".json") // what the watcher of aipm ui reports
	code, body := do(t, ts, "GET", "/api/state", "", testToken, "")
	if code != http.StatusOK {
		t.Fatalf("GET /api/state: %d %s", code, body)
	}
	var got state
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Tasks) != 1 || !strings.Contains(got.Tasks[0].Problem, `invalid status "wip"`) {
		t.Errorf("tasks %+v, want the task with its problem", got.Tasks)
	}
	found := false
	for _, a := range got.Attention {
		found = found || a.Kind == "invalid" && a.TaskID == task
	}
	if !found {
		t.Errorf("attention %+v, want the invalid task", got.Attention)
	}
}

// "Needs you" lists a chat request an agent acted on that its messages do not show (seed
// 000's audit warning: the request went ahead, and the human may ask the superior).
func TestNeedsYouUnverifiedRequest(t *testing.T) {
	ts, st, _, task := newTestServer(t)
	w1 := filestore.Actor{ID: "w1", Via: filestore.ViaTool}
	if _, err := st.StartTaskFromChat(w1, task, "alice", ""); err != nil { // alice never wrote to w1
		t.Fatal(err)
	}
	code, body := do(t, ts, "GET", "/api/state", "", testToken, "")
	if code != http.StatusOK {
		t.Fatalf("GET /api/state: %d %s", code, body)
	}
	var got state
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	var warned []attention
	for _, a := range got.Attention {
		if a.Kind == "unverified_request" {
			warned = append(warned, a)
		}
	}
	if len(warned) != 1 || warned[0].AgentID != "w1" || warned[0].TaskID != task ||
		!strings.Contains(warned[0].Text, "w1 started task "+task+" at the request of alice, who may not have asked: requester alice sent w1 no message") {
		t.Errorf("unverified requests %+v, want w1's start", warned)
	}
}

// "Needs you" lists what keeps agents from starting: a start that really failed, with its
// log, and a command this machine has not approved — not a stop by Ctrl-C or shutdown.
func TestNeedsYouStarts(t *testing.T) {
	ts, st, _, task := newTestServer(t)
	owner := filestore.Actor{ID: "alice", Via: filestore.ViaCLI}
	if _, _, err := st.AddAgent(owner, filestore.NewAgent{ID: "w2", ParentID: "alice"}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(st.Dir(), "project.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b = []byte(strings.Replace(string(b), `"agent_commands": null`, `"agent_commands": {"claude": {"description": "", "command": ["claude"]}}`, 1))
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	end := func(agent, outcome string, code int) *filestore.Spawn {
		sp, _, err := st.CreateSpawn(filestore.NewSpawn{AgentID: agent, Purpose: filestore.PurposeTask, TaskID: task, AIType: "claude"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.EndSpawn(sp.ID, code, outcome); err != nil {
			t.Fatal(err)
		}
		return sp
	}
	failed := end("w1", "failed", 127)
	end("w2", filestore.OutcomeShutdown, -1) // Ctrl-C
	code, body := do(t, ts, "GET", "/api/state", "", testToken, "")
	if code != http.StatusOK {
		t.Fatalf("GET /api/state: %d %s", code, body)
	}
	var got state
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	var starts, unapproved []attention
	for _, a := range got.Attention {
		switch a.Kind {
		case "failing_start":
			starts = append(starts, a)
		case "unapproved_command":
			unapproved = append(unapproved, a)
		}
	}
	if len(starts) != 1 || starts[0].AgentID != "w1" || !strings.Contains(starts[0].Text, "(exit code 127); log .ai-pm/runtime/spawns/"+failed.ID+".log") {
		t.Errorf("failing starts %+v, want w1's only, with its log", starts)
	}
	if len(unapproved) != 1 || !strings.Contains(unapproved[0].Text, "settings.agent_commands.claude (used by w1, w2) is not approved") {
		t.Errorf("unapproved %+v, want claude's", unapproved)
	}
	// the task's details show the failed start it has instead of a bare "no runs"
	code, body = do(t, ts, "GET", "/api/tasks/"+task, "", testToken, "")
	if code != http.StatusOK {
		t.Fatalf("GET /api/tasks: %d %s", code, body)
	}
	var d struct {
		FailedStarts []filestore.Spawn `json:"failed_starts"`
	}
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		t.Fatal(err)
	}
	if len(d.FailedStarts) != 1 || d.FailedStarts[0].ID != failed.ID {
		t.Errorf("failed starts %+v, want w1's", d.FailedStarts)
	}
}

// "Needs you" lists an agent another clone brought that waits for this machine's
// approval, with the commit and its author and the command that approves it; once
// approved, it is gone from the list.
func TestNeedsYouHeldAgent(t *testing.T) {
	ts, st, _, _ := newTestServer(t)
	agent := `{"id": "w9", "name": "w9", "type": "ai", "hierarchy": "worker", "parent_id": "alice", "status": "active",
		"max_parallel_tasks": 1, "ai_type": "sim", "version": 1}`
	err := st.Exclusive(func(f *filestore.Files) error {
		f.Origin = func(string) filestore.AgentOrigin {
			return filestore.AgentOrigin{Commit: "0123456789abcdef", Author: "Mallory <m@example.com>"}
		}
		return f.Replace("agents/w9/agent.json", []byte(agent))
	})
	if err != nil {
		t.Fatal(err)
	}
	st.Changed("agents/w9/agent.json")
	held := func() []attention {
		code, body := do(t, ts, "GET", "/api/state", "", testToken, "")
		if code != http.StatusOK {
			t.Fatalf("GET /api/state: %d %s", code, body)
		}
		var got state
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatal(err)
		}
		var out []attention
		for _, a := range got.Attention {
			if a.Kind == "held_agent" {
				out = append(out, a)
			}
		}
		return out
	}
	got := held()
	if len(got) != 1 || got[0].AgentID != "w9" ||
		!strings.Contains(got[0].Text, "new agent w9 with ai_type sim came from another clone, in commit 0123456789 by Mallory <m@example.com>") ||
		!strings.Contains(got[0].Text, "`aipm trust --agent w9`") {
		t.Fatalf("held agents %+v, want w9 with its commit and author", got)
	}
	if _, err := st.ApproveAgents([]string{"w9"}); err != nil {
		t.Fatal(err)
	}
	if got := held(); len(got) != 0 {
		t.Errorf("after the approval: %+v", got)
	}
}
