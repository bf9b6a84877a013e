package filestore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The queue starts an agent's ready top-level tasks, highest priority first, only while
// the agent has room under max_parallel_tasks, records the system as the actor and why,
// and leaves alone what a rule holds back.
func TestStartQueued(t *testing.T) {
	s := newTestStore(t)
	low := mustTask(t, s, NewTask{Title: "low", Priority: "low", Status: StatusTodo, AssigneeID: "w1"})
	high := mustTask(t, s, NewTask{Title: "high", Priority: "high", Status: StatusTodo, AssigneeID: "w1"})
	dep := mustTask(t, s, NewTask{Title: "dep", Status: StatusTodo, AssigneeID: "w2"})
	waits := mustTask(t, s, NewTask{Title: "waits", Priority: "urgent", Status: StatusTodo, AssigneeID: "w2", Dependencies: []string{dep.ID}})
	backlog := mustTask(t, s, NewTask{Title: "backlog", AssigneeID: "w2"})
	nobody := mustTask(t, s, NewTask{Title: "nobody", Status: StatusTodo})
	pending := mustTask(t, s, NewTask{Title: "pending", Status: StatusTodo, AssigneeID: "mgr", Approval: ApprovalPending})
	byHuman := mustTask(t, s, NewTask{Title: "human", Status: StatusTodo, AssigneeID: "owner"})
	parent := mustTask(t, s, NewTask{Title: "parent", Status: StatusTodo, AssigneeID: "mgr"})
	child := mustTask(t, s, NewTask{Title: "child", Status: StatusTodo, AssigneeID: "w2", ParentID: parent.ID})

	all := func() []*Task {
		ts, err := s.Tasks(TaskFilter{})
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	status := func(id string) string {
		tk, err := s.Task(id)
		if err != nil {
			t.Fatal(err)
		}
		return tk.Status
	}
	started, err := s.StartQueued(all())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tk := range started {
		ids = append(ids, tk.Title)
	}
	// w1 has room for one: the high one. w2's dependent waits; its dependency starts.
	// The parent starts for mgr (top level); its child is the manager's to dispatch.
	if got := strings.Join(ids, ","); got != "parent,high,dep" {
		t.Fatalf("started %q, want parent,high,dep", got)
	}
	for id, want := range map[string]string{low.ID: StatusTodo, high.ID: StatusInProgress, dep.ID: StatusInProgress, waits.ID: StatusTodo,
		backlog.ID: StatusBacklog, nobody.ID: StatusTodo, pending.ID: StatusTodo, byHuman.ID: StatusTodo, child.ID: StatusTodo} {
		if got := status(id); got != want {
			t.Errorf("task %s: %s, want %s", id, got, want)
		}
	}
	evs, err := s.Events(high.ID)
	if err != nil {
		t.Fatal(err)
	}
	last := evs[len(evs)-1]
	if last.Actor != "system" || last.Via != ViaCoordinator || last.To != StatusInProgress ||
		!strings.Contains(last.Reason, "w1 has room (0 of max_parallel_tasks 1 in progress)") {
		t.Errorf("history: %+v", last)
	}

	// Nothing more while the agents are full.
	if started, _ := s.StartQueued(all()); len(started) != 0 {
		t.Fatalf("started %d more while full", len(started))
	}
	// A finished task makes room for the next; a done dependency lets its dependent go.
	if _, err := s.SetTaskStatus(human, high.ID, StatusDone, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetTaskStatus(human, dep.ID, StatusDone, ""); err != nil {
		t.Fatal(err)
	}
	started, _ = s.StartQueued(all())
	if len(started) != 2 || status(low.ID) != StatusInProgress || status(waits.ID) != StatusInProgress {
		t.Fatalf("after done: started %d; low %s, waits %s", len(started), status(low.ID), status(waits.ID))
	}
	evs, _ = s.Events(waits.ID)
	if r := evs[len(evs)-1].Reason; !strings.Contains(r, "its dependencies are done") {
		t.Errorf("reason %q does not say the dependencies are done", r)
	}
}

// settings.manual_task_start and a paused project start nothing.
func TestStartQueuedOff(t *testing.T) {
	for _, c := range []string{"manual", "paused"} {
		s := newTestStore(t)
		tk := mustTask(t, s, NewTask{Title: "t", Status: StatusTodo, AssigneeID: "w1"})
		if c == "manual" {
			writeSetting(t, s, `"manual_task_start": true,`)
		} else if _, err := s.SetProjectStatus(human, ProjectPaused); err != nil {
			t.Fatal(err)
		}
		ts, _ := s.Tasks(TaskFilter{})
		started, err := s.StartQueued(ts)
		if err != nil || len(started) != 0 {
			t.Fatalf("%s: started %d, err %v", c, len(started), err)
		}
		if got, _ := s.Task(tk.ID); got.Status != StatusTodo {
			t.Fatalf("%s: task %s", c, got.Status)
		}
	}
}

// writeSetting adds a line to the settings of project.json, as a human would.
func writeSetting(t *testing.T, s *Store, line string) {
	t.Helper()
	path := s.path("project.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := strings.Replace(string(data), `"settings": {`, `"settings": {`+"\n    "+line, 1)
	if out == string(data) {
		t.Fatal("project.json has no settings")
	}
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A blocked reason or a summary naming a path of this machine is committed relative.
func TestScrubPaths(t *testing.T) {
	s := newTestStore(t)
	root := s.Root()
	wt := filepath.Join(filepath.Dir(root), filepath.Base(root)+".worktrees", "w1", "x.txt")
	tk := mustTask(t, s, NewTask{Title: "t", Status: StatusTodo, AssigneeID: "w1"})
	if _, err := s.SetTaskStatus(human, tk.ID, StatusBlocked, "open "+wt+": no such file or directory; see "+filepath.Join(root, "a.txt")); err != nil {
		t.Fatal(err)
	}
	got, err := s.Task(tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := "open " + filepath.Join("..", filepath.Base(root)+".worktrees", "w1", "x.txt") + ": no such file or directory; see a.txt"
	if got.BlockedReason != want {
		t.Errorf("blocked_reason %q, want %q", got.BlockedReason, want)
	}
	data, _ := os.ReadFile(filepath.Join(s.Dir(), "events.jsonl"))
	if strings.Contains(string(data), filepath.Dir(root)) {
		t.Errorf("the history holds a path of this machine")
	}
}

// A block under a blocked ancestor is listed once, at the topmost blocked ancestor.
func TestBlockRoots(t *testing.T) {
	mk := func(id, parent, status string) *Task { return &Task{ID: id, ParentID: parent, Status: status} }
	byID := map[string]*Task{}
	for _, tk := range []*Task{mk("a", "", StatusBlocked), mk("b", "a", StatusBlocked), mk("c", "b", StatusBlocked),
		mk("d", "a", StatusTodo), mk("e", "", StatusInProgress), mk("f", "e", StatusBlocked)} {
		byID[tk.ID] = tk
	}
	got := BlockRoots(byID)
	if len(got) != 2 || got["b"] != "a" || got["c"] != "a" {
		t.Errorf("roots %v, want b and c under a (f's own block stands alone)", got)
	}
}
