package ui

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aipm/aipm/filestore"
)

// A task file's content is a stranger's commit: an "id" inside it that names another task,
// or a path, must not steer a button. The page gets each task's id from its file name, so
// Approve on "update the changelog" approves that task and nothing else.
func TestTaskIDsComeFromFileNames(t *testing.T) {
	ts, st, _, _ := newTestServer(t)
	w1 := filestore.Actor{ID: "w1", Via: filestore.ViaTool}
	request := func(title string) string {
		t.Helper()
		r, err := st.RequestTask(w1, "", filestore.TaskRequest{Title: title})
		if err != nil {
			t.Fatal(err)
		}
		if r.Task.Approval != filestore.ApprovalPending {
			t.Fatalf("%s: approval %s, want pending", title, r.Task.Approval)
		}
		return r.Task.ID
	}
	changelog := request("update the changelog")
	deploy := request("deploy to production")
	other := request("tidy the docs")
	setID := func(file, id string) {
		t.Helper()
		path := filepath.Join(st.Dir(), "tasks", file+".json")
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		data = []byte(strings.Replace(string(data), `"id": "`+file+`"`, `"id": "`+id+`"`, 1))
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	setID(changelog, deploy)
	setID(other, "../project/paused#")

	code, body := do(t, ts, "GET", "/api/state", "", testToken, "")
	if code != http.StatusOK {
		t.Fatalf("state: %d %s", code, body)
	}
	var state struct {
		Tasks []struct{ ID, Title string } `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(body), &state); err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, tk := range state.Tasks {
		ids[tk.Title] = tk.ID
	}
	if ids["update the changelog"] != changelog || ids["deploy to production"] != deploy || ids["tidy the docs"] != other {
		t.Fatalf("the page's task ids %v, want the file names %s, %s, %s", ids, changelog, deploy, other)
	}
	if code, body := do(t, ts, "POST", "/api/tasks/"+ids["update the changelog"]+"/approve", "", testToken, ""); code != http.StatusOK {
		t.Fatalf("approve: %d %s", code, body)
	}
	if code, body := do(t, ts, "POST", "/api/tasks/"+ids["tidy the docs"]+"/approve", "", testToken, ""); code != http.StatusOK {
		t.Fatalf("approve: %d %s", code, body)
	}
	for id, want := range map[string]string{changelog: filestore.ApprovalApproved, deploy: filestore.ApprovalPending, other: filestore.ApprovalApproved} {
		tk, err := st.Task(id)
		if err != nil {
			t.Fatal(err)
		}
		if tk.Approval != want {
			t.Errorf("task %s (%s): approval %s, want %s", id, tk.Title, tk.Approval, want)
		}
	}
	if p, err := st.Project(); err != nil || p.Status != filestore.ProjectActive {
		t.Errorf("project: %+v %v, want it still active", p, err)
	}
}

// A client that keeps connections open without sending anything, or idle after a request
// (without a token), has them closed; and no more than the limit are open at once.
func TestIdleConnectionsClosed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	host := ln.Addr().String()
	srv := HTTPServer(ctx, New(Options{Store: nil, Hosts: []string{host}, Token: testToken}), 300*time.Millisecond)
	go srv.Serve(LimitListener(ln, 1))
	defer srv.Close()

	// One connection: a request without a token is answered, then the idle connection is
	// closed by the server.
	c1, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	io.WriteString(c1, "GET /api/state HTTP/1.1\r\nHost: "+host+"\r\n\r\n")
	r1 := bufio.NewReader(c1)
	resp, err := http.ReadResponse(r1, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		t.Fatalf("no token: %d", resp.StatusCode)
	}
	// A second connection is not served while the first is open (limit 1): its answer
	// comes once the idle first one is closed.
	c2, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	io.WriteString(c2, "GET / HTTP/1.1\r\nHost: "+host+"\r\n\r\n")
	c1.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := r1.ReadByte(); err != io.EOF {
		t.Fatalf("the idle connection was not closed by the server: %v", err)
	}
	c2.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err = http.ReadResponse(bufio.NewReader(c2), nil)
	if err != nil {
		t.Fatalf("the waiting connection was never served: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET / on the second connection: %d", resp.StatusCode)
	}
}
