package tools

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aipm/aipm/filestore"
	"github.com/aipm/aipm/watch"
)

// A server whose store is fed by a real watcher answers from its caches, and a file
// changed behind its back — by an editor, by git, by another process — is what the next
// call after the watcher's report sees.
func TestWatchedServerSeesChangesBehindItsBack(t *testing.T) {
	s, st := newTestServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hub := &watch.Hub{}
	if err := Watch(ctx, st, hub, t.Logf); err != nil {
		t.Fatal(err)
	}
	s.hub = hub
	owner := filestore.Actor{ID: "alice", Via: filestore.ViaCLI}
	top, err := st.Tasks(filestore.TaskFilter{AssigneeID: "w1"})
	if err != nil || len(top) != 1 {
		t.Fatalf("tasks of w1: %v, %v", top, err)
	}
	id := top[0].ID
	kid, err := st.CreateTask(owner, filestore.NewTask{Title: "kid", ParentID: id})
	if err != nil {
		t.Fatal(err)
	}
	if _, isErr := invoke(t, s, s.tools["authenticate"], map[string]any{"agent_id": "w1", "passkey": "w1-passkey"}); isErr {
		t.Fatal("authenticate failed")
	}
	getTask := func() map[string]any {
		out, isErr := invoke(t, s, s.tools["get_task"], map[string]any{"task_id": id})
		if isErr {
			t.Fatalf("get_task: %v", out)
		}
		return out
	}
	rows := func(out map[string]any) string {
		var b strings.Builder
		for _, r := range out["subtasks"].([]any) {
			row := r.(map[string]any)
			b.WriteString(row["title"].(string) + "=" + row["status"].(string) + " ")
		}
		return strings.TrimSpace(b.String())
	}
	if got := rows(getTask()); got != "kid=backlog" {
		t.Fatalf("sub-tasks = %q", got)
	}
	// after runs change and waits until the watcher has reported a change under tasks/.
	after := func(what string, change func()) {
		t.Helper()
		sub := hub.Subscribe("tasks/")
		defer sub.Close()
		// Reports of earlier changes still on their way must not count for this one.
		time.Sleep(20 * time.Millisecond)
		select {
		case <-sub.C:
		default:
		}
		change()
		wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
		defer wcancel()
		if err := sub.Wait(wctx); err != nil {
			t.Fatalf("%s: the watcher reported nothing", what)
		}
	}
	path := filepath.Join(st.Dir(), "tasks", kid.ID+".json")
	data, _ := os.ReadFile(path)

	// An editor writing in place.
	after("in-place edit", func() {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(strings.Replace(string(data), `"title": "kid"`, `"title": "edited"`, 1)))
		f.Close()
	})
	if got := rows(getTask()); got != "edited=backlog" {
		t.Errorf("after an in-place edit: %q", got)
	}
	// Deleted and created again (vim's save, or a checkout).
	after("delete", func() { os.Remove(path) })
	if got := rows(getTask()); got != "" {
		t.Errorf("after a delete: %q", got)
	}
	after("re-create", func() {
		os.WriteFile(path, []byte(strings.Replace(string(data), `"status": "backlog"`, `"status": "todo"`, 1)), 0o644)
	})
	if got := rows(getTask()); got != "kid=todo" {
		t.Errorf("after a re-create: %q", got)
	}
	// git: commit, change through aipm, then check the old files out again.
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = st.Root()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	git("add", ".ai-pm/tasks")
	git("commit", "-qm", "tasks")
	if _, err := st.SetTaskStatus(owner, kid.ID, filestore.StatusBlocked, "wait"); err != nil {
		t.Fatal(err)
	}
	if got := rows(getTask()); got != "kid=blocked" {
		t.Errorf("after a change through aipm: %q", got)
	}
	after("git checkout", func() { git("checkout", "-q", "--", ".ai-pm/tasks") })
	if got := rows(getTask()); got != "kid=todo" {
		t.Errorf("after git checkout: %q", got)
	}
	// Lost events: a rescan, as after a kernel queue overflow.
	os.WriteFile(path, data, 0o644)
	st.Changed("")
	if got := rows(getTask()); got != "kid=backlog" {
		t.Errorf("after a rescan: %q", got)
	}
}
