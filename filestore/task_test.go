package filestore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aipm/aipm/filestore/internal/engine"
	"github.com/fsnotify/fsnotify"
)

var human = Actor{ID: "owner", Via: ViaCLI}

func newTestStore(t *testing.T) *Store {
	t.Helper()
	// A ticking test clock, shared by the Stores of a test (which may run in parallel
	// goroutines standing in for processes).
	var mu sync.Mutex
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s, err := Init(t.TempDir(), InitOptions{Name: "test", OwnerID: "owner"}, Options{Now: func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(time.Millisecond)
		return clock
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []NewAgent{
		{ID: "mgr", Hierarchy: HierarchyManager, ParentID: "owner", Passkey: "mgr-passkey"},
		{ID: "w1", ParentID: "mgr", Passkey: "w1-passkey"},
		{ID: "w2", ParentID: "mgr", Passkey: "w2-passkey"},
	} {
		if _, _, err := s.AddAgent(human, n); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func mustTask(t *testing.T, s *Store, n NewTask) *Task {
	t.Helper()
	tk, err := s.CreateTask(human, n)
	if err != nil {
		t.Fatalf("CreateTask(%+v): %v", n, err)
	}
	return tk
}

func code(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if err != nil {
		return "other: " + err.Error()
	}
	return ""
}

// writeTaskStatus puts a task into a status directly on disk, bypassing the rules, to set
// up each cell of the table.
func writeTaskStatus(t *testing.T, s *Store, id, status string) {
	t.Helper()
	tk, err := s.Task(id)
	if err != nil {
		t.Fatal(err)
	}
	tk.Status = status
	if err := engine.WriteJSON(s.taskPath(id), tk, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestTransitionTable(t *testing.T) {
	want := map[string]map[string]bool{
		StatusBacklog:    {StatusTodo: true, StatusCancelled: true},
		StatusTodo:       {StatusBacklog: true, StatusInProgress: true, StatusBlocked: true, StatusCancelled: true},
		StatusInProgress: {StatusBlocked: true, StatusDone: true, StatusCancelled: true},
		StatusBlocked:    {StatusTodo: true, StatusInProgress: true, StatusCancelled: true},
		StatusDone:       {},
		StatusCancelled:  {},
	}
	s := newTestStore(t)
	for _, from := range Statuses {
		for _, to := range Statuses {
			if got := CanTransition(from, to); got != want[from][to] {
				t.Errorf("CanTransition(%s, %s) = %v, want %v", from, to, got, want[from][to])
			}
			// The same verdict through the store, on a task that meets every entry rule.
			tk := mustTask(t, s, NewTask{Title: from + " to " + to, AssigneeID: "w1"})
			writeTaskStatus(t, s, tk.ID, from)
			_, err := s.SetTaskStatus(human, tk.ID, to, "test")
			switch {
			case want[from][to] && err != nil:
				t.Errorf("%s → %s refused: %v", from, to, err)
			case !want[from][to] && code(err) != "invalid_status_transition":
				t.Errorf("%s → %s: got %q, want invalid_status_transition", from, to, code(err))
			}
			// Free the assignee's parallel slot for the next cell.
			if tk, _ := s.Task(tk.ID); tk.Status == StatusInProgress {
				writeTaskStatus(t, s, tk.ID, StatusCancelled)
			}
		}
	}
}

func TestInProgressRules(t *testing.T) {
	s := newTestStore(t)
	dep := mustTask(t, s, NewTask{Title: "dep", Status: StatusTodo, AssigneeID: "w2"})
	tk := mustTask(t, s, NewTask{Title: "main", Status: StatusTodo, Dependencies: []string{dep.ID}})

	if _, err := s.SetTaskStatus(human, tk.ID, StatusInProgress, ""); code(err) != "assignee_required" {
		t.Fatalf("no assignee: got %q", code(err))
	}
	if _, err := s.AssignTask(human, tk.ID, "w1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetTaskStatus(human, tk.ID, StatusInProgress, ""); code(err) != "dependencies_not_done" {
		t.Fatalf("open dependency: got %q", code(err))
	}
	for _, st := range []string{StatusInProgress, StatusDone} {
		if _, err := s.SetTaskStatus(human, dep.ID, st, ""); err != nil {
			t.Fatal(err)
		}
	}
	other := mustTask(t, s, NewTask{Title: "other", Status: StatusTodo, AssigneeID: "w1"})
	if _, err := s.SetTaskStatus(human, other.ID, StatusInProgress, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetTaskStatus(human, tk.ID, StatusInProgress, ""); code(err) != "max_parallel_tasks_reached" {
		t.Fatalf("w1 busy: got %q", code(err))
	}
	if _, err := s.SetTaskStatus(human, other.ID, StatusBlocked, "wait"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetTaskStatus(human, tk.ID, StatusInProgress, ""); err != nil {
		t.Fatalf("all rules met: %v", err)
	}

	for approval, want := range map[string]string{ApprovalPending: "approval_required", ApprovalRejected: "task_rejected"} {
		req := mustTask(t, s, NewTask{Title: "req " + approval, Status: StatusTodo, AssigneeID: "w2", Approval: approval})
		if _, err := s.SetTaskStatus(human, req.ID, StatusInProgress, ""); code(err) != want {
			t.Errorf("approval %s: got %q, want %s", approval, code(err), want)
		}
	}
}

func TestDoneNeedsFinishedSubtasks(t *testing.T) {
	s := newTestStore(t)
	parent := mustTask(t, s, NewTask{Title: "parent", Status: StatusTodo, AssigneeID: "w1"})
	child := mustTask(t, s, NewTask{Title: "child", Status: StatusTodo, ParentID: parent.ID, AssigneeID: "w1"})
	if _, err := s.SetTaskStatus(human, parent.ID, StatusInProgress, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetTaskStatus(human, parent.ID, StatusDone, ""); code(err) != "subtasks_not_finished" {
		t.Fatalf("open child: got %q", code(err))
	}
	if _, err := s.SetTaskStatus(human, child.ID, StatusCancelled, ""); err != nil {
		t.Fatal(err)
	}
	ch, err := s.SetTaskStatus(human, parent.ID, StatusDone, "")
	if err != nil {
		t.Fatal(err)
	}
	if ch.Task.CompletedAt == nil {
		t.Error("done task has no completed_at")
	}
}

func TestBlockCascadesAndAttributes(t *testing.T) {
	s := newTestStore(t)
	root := mustTask(t, s, NewTask{Title: "root", Status: StatusTodo, AssigneeID: "mgr"})
	a := mustTask(t, s, NewTask{Title: "a", Status: StatusTodo, ParentID: root.ID, AssigneeID: "w1"})
	aa := mustTask(t, s, NewTask{Title: "aa", Status: StatusTodo, ParentID: a.ID, AssigneeID: "w1"})
	b := mustTask(t, s, NewTask{Title: "b", Status: StatusTodo, ParentID: root.ID, AssigneeID: "w2"})
	backlog := mustTask(t, s, NewTask{Title: "later", ParentID: root.ID})
	for _, id := range []string{root.ID, b.ID} {
		if _, err := s.SetTaskStatus(human, id, StatusInProgress, ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.SetTaskStatus(human, b.ID, StatusDone, ""); err != nil {
		t.Fatal(err)
	}

	mgr := Actor{ID: "mgr", Via: ViaTool}
	ch, err := s.SetTaskStatus(mgr, root.ID, StatusBlocked, "waiting for the API key")
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Cascaded) != 2 {
		t.Fatalf("cascaded %d tasks, want 2 (a, aa)", len(ch.Cascaded))
	}
	for _, tc := range []struct {
		id, status string
	}{{root.ID, StatusBlocked}, {a.ID, StatusBlocked}, {aa.ID, StatusBlocked}, {b.ID, StatusDone}, {backlog.ID, StatusBacklog}} {
		got, err := s.Task(tc.id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != tc.status {
			t.Errorf("%s: status %s, want %s", got.Title, got.Status, tc.status)
		}
		if tc.status == StatusBlocked {
			if got.StatusChangedBy != "mgr" {
				t.Errorf("%s: status_changed_by %q, want mgr (the real actor)", got.Title, got.StatusChangedBy)
			}
			if !strings.Contains(got.BlockedReason, "waiting for the API key") {
				t.Errorf("%s: blocked_reason %q lacks the reason", got.Title, got.BlockedReason)
			}
		}
	}
	evs, err := s.Events(aa.ID)
	if err != nil {
		t.Fatal(err)
	}
	last := evs[len(evs)-1]
	if last.Actor != "mgr" || last.Via != ViaTool || last.From != StatusTodo || last.To != StatusBlocked {
		t.Errorf("history of cascaded task: %+v", last)
	}
	// Leaving blocked clears the reason.
	ch, err = s.SetTaskStatus(human, root.ID, StatusInProgress, "")
	if err != nil {
		t.Fatal(err)
	}
	if ch.Task.BlockedReason != "" || ch.Task.StatusChangedBy != "owner" {
		t.Errorf("after unblock: reason %q, changed by %q", ch.Task.BlockedReason, ch.Task.StatusChangedBy)
	}
}

func TestDependencyValidation(t *testing.T) {
	s := newTestStore(t)
	a := mustTask(t, s, NewTask{Title: "a"})
	b := mustTask(t, s, NewTask{Title: "b", Dependencies: []string{a.ID}})
	c := mustTask(t, s, NewTask{Title: "c", Dependencies: []string{b.ID}})

	if _, err := s.SetDependencies(human, a.ID, []string{c.ID}); code(err) != "dependency_cycle" {
		t.Fatalf("a→c→b→a: got %q", code(err))
	} else if !strings.Contains(err.Error(), a.ID+" → "+c.ID+" → "+b.ID+" → "+a.ID) {
		t.Errorf("cycle message does not show the loop: %v", err)
	}
	if _, err := s.SetDependencies(human, a.ID, []string{a.ID}); code(err) != "invalid_dependency" {
		t.Errorf("self dependency: got %q", code(err))
	}
	if _, err := s.CreateTask(human, NewTask{Title: "x", Dependencies: []string{"tsk_missing"}}); code(err) != "task_not_found" {
		t.Errorf("unknown dependency: got %q", code(err))
	}
	if _, err := s.CreateTask(human, NewTask{Title: "x", Dependencies: []string{"../../etc/passwd"}}); code(err) != "invalid_id" {
		t.Errorf("path-like dependency: got %q", code(err))
	}
	got, err := s.SetDependencies(human, c.ID, []string{a.ID, b.ID, a.ID})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.Dependencies, ",") != a.ID+","+b.ID {
		t.Errorf("duplicates kept: %v", got.Dependencies)
	}
	a2, _ := s.Task(a.ID)
	if len(a2.Dependencies) != 0 {
		t.Errorf("a refused change was written: %v", a2.Dependencies)
	}
}

func TestIDValidation(t *testing.T) {
	bad := []string{"", ".", "..", "../x", "a/b", `a\b`, "/etc", ".hidden", "-x", "UPPER", "a b", "a\x00b",
		strings.Repeat("a", 64), "ü"}
	for _, id := range bad {
		if ValidateAgentID(id) == nil {
			t.Errorf("ValidateAgentID(%q) accepted", id)
		}
		if ValidateEntityID(PrefixTask, "tsk_"+id) == nil && id != "" && !strings.HasPrefix(id, "-") {
			t.Errorf("ValidateEntityID(tsk_%q) accepted", id)
		}
	}
	for _, id := range []string{"w1", "worker-frontend-01", "a.b_c", strings.Repeat("a", 63)} {
		if err := ValidateAgentID(id); err != nil {
			t.Errorf("ValidateAgentID(%q): %v", id, err)
		}
	}
	if ValidateEntityID(PrefixTask, "cnv_abc") == nil {
		t.Error("a conversation id passed as a task id")
	}
	now := time.Now()
	for range 100 {
		id := NewID(PrefixTask, now)
		if err := ValidateEntityID(PrefixTask, id); err != nil {
			t.Fatalf("generated id %q rejected: %v", id, err)
		}
	}

	// Hostile ids through the store never reach the file system.
	s := newTestStore(t)
	for _, id := range []string{"../../../etc/passwd", "../agents/w1/agent", "tsk_../../x"} {
		if _, err := s.Task(id); code(err) != "invalid_id" {
			t.Errorf("Task(%q): got %q", id, code(err))
		}
		if _, err := s.SetTaskStatus(human, id, StatusTodo, ""); code(err) != "invalid_id" {
			t.Errorf("SetTaskStatus(%q): got %q", id, code(err))
		}
	}
	for _, id := range []string{"../owner", "x/../../y"} {
		if _, err := s.Agent(id); code(err) != "invalid_id" {
			t.Errorf("Agent(%q): got %q", id, code(err))
		}
		if _, _, err := s.AddAgent(human, NewAgent{ID: id}); code(err) != "invalid_id" {
			t.Errorf("AddAgent(%q): got %q", id, code(err))
		}
	}
}

func TestIDsSortByTime(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	prev := ""
	for i := range 1000 {
		id := NewID(PrefixTask, t0.Add(time.Duration(i/10)*time.Millisecond)) // ten per millisecond
		if id <= prev {
			t.Fatalf("id %d %q does not sort after %q", i, id, prev)
		}
		prev = id
	}
}

func TestStableEncoding(t *testing.T) {
	s := newTestStore(t)
	dep := mustTask(t, s, NewTask{Title: "dep"})
	tk := mustTask(t, s, NewTask{Title: "日本語のタスク <&>", Description: "line1\nline2", Dependencies: []string{dep.ID}, AssigneeID: "w1"})
	for _, path := range []string{s.taskPath(tk.ID), s.agentPath("w1"), s.path("project.json")} {
		orig, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		switch {
		case strings.Contains(path, "tasks"):
			v = &Task{}
		case strings.Contains(path, "agents"):
			v = &Agent{}
		default:
			v = &Project{}
		}
		if err := s.readJSON(path, v); err != nil {
			t.Fatal(err)
		}
		again, err := engine.EncodeJSON(v)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(orig, again) {
			t.Errorf("%s: rewrite differs:\n%s\n---\n%s", s.Rel(path), orig, again)
		}
		if !bytes.HasSuffix(orig, []byte("}\n")) || !bytes.Contains(orig, []byte("\n  \"")) {
			t.Errorf("%s: not indented JSON with trailing newline", s.Rel(path))
		}
	}
	data, _ := os.ReadFile(s.taskPath(tk.ID))
	if !bytes.Contains(data, []byte(`"title": "日本語のタスク <&>"`)) {
		t.Errorf("text is escaped instead of readable:\n%s", data)
	}
	if !bytes.Contains(data, []byte(`"created_at": "2026-01-02T03:04:05.`)) {
		t.Errorf("times are not UTC RFC 3339:\n%s", data)
	}
}

func TestCorruptTaskIsReportedNotOverwritten(t *testing.T) {
	s := newTestStore(t)
	tk := mustTask(t, s, NewTask{Title: "t", Status: StatusTodo, AssigneeID: "w1"})
	path := s.taskPath(tk.ID)
	data, _ := os.ReadFile(path)
	broken := bytes.Replace(data, []byte(`"status": "todo",`), []byte(`"status": "todo"`), 1)
	if err := os.WriteFile(path, broken, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := s.SetTaskStatus(human, tk.ID, StatusInProgress, "")
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Line != 7 || ce.Path != ".ai-pm/tasks/"+tk.ID+".json" {
		t.Fatalf("got %v, want a CorruptError at .ai-pm/tasks/%s.json:7 (where the parser stops)", err, tk.ID)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, broken) {
		t.Error("the broken file was overwritten")
	}
	probs, err := s.Check()
	if err != nil {
		t.Fatal(err)
	}
	if len(probs) != 1 || probs[0].Line != 7 || !strings.HasPrefix(probs[0].String(), ".ai-pm/tasks/"+tk.ID+".json:7: invalid JSON") {
		t.Errorf("Check() = %v", probs)
	}
	// The rest of the project keeps working.
	if _, err := s.CreateTask(human, NewTask{Title: "still works"}); err != nil {
		t.Fatal(err)
	}
}

func TestJSONLTornTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.jsonl")
	if err := os.WriteFile(path, []byte("{\"a\":1}\n{\"a\":2}\n{\"a\":3,\"b\":\"tor"), 0o644); err != nil {
		t.Fatal(err)
	}
	lines, err := engine.ReadLines(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 2 || lines[1].Next != 16 {
		t.Fatalf("got %d lines, next %d; want 2 lines, next 16", len(lines), lines[len(lines)-1].Next)
	}
	if neg, _ := engine.ReadLines(path, -5); len(neg) != 2 || neg[0].Next != 8 || neg[1].Next != 16 {
		t.Errorf("a negative offset (hand-edited cursor) must read from the start with true positions: %+v", neg)
	}
	if err := engine.AppendLine(path, map[string]int{"a": 4}, true); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if string(data) != "{\"a\":1}\n{\"a\":2}\n{\"a\":4}\n" {
		t.Errorf("after repair and append: %q", data)
	}
}

func TestCleanTemp(t *testing.T) {
	s := newTestStore(t)
	stale := filepath.Join(s.Dir(), "tasks", ".tsk_x.json.123.tmp")
	fresh := filepath.Join(s.Dir(), "tasks", ".tsk_y.json.456.tmp")
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, []byte("{"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-time.Hour)
	os.Chtimes(stale, old, old)
	if _, err := Open(s.Root(), Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Error("stale temp file survived Open")
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Error("a fresh temp file (a writer in progress) was removed")
	}
}

// An atomic write makes its temp file in runtime/tmp, which watchers leave out: a
// watcher of tasks/ sees the task file appear and nothing else.
func TestAtomicWriteTempFileOutOfWatchedDirectories(t *testing.T) {
	s := newTestStore(t)
	w := watchDir(t, s.path("tasks"))
	tk := mustTask(t, s, NewTask{Title: "watched"})
	timeout := time.After(5 * time.Second)
	for {
		select {
		case ev := <-w.Events:
			if base := filepath.Base(ev.Name); base != tk.ID+".json" {
				t.Fatalf("a watcher of tasks/ saw %s %s: a temp file in a watched directory", ev.Op, base)
			}
			if ev.Has(fsnotify.Create) {
				if !slices.Contains(UnwatchedDirs, TempDir) {
					t.Errorf("%s is not among the unwatched directories", TempDir)
				}
				return
			}
		case err := <-w.Errors:
			t.Fatal(err)
		case <-timeout:
			t.Fatal("the task file's creation was not seen")
		}
	}
}

// watchDir is an fsnotify watcher of dir alone, closed when the test ends.
func watchDir(t *testing.T, dir string) *fsnotify.Watcher {
	t.Helper()
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	if err := w.Add(dir); err != nil {
		t.Fatal(err)
	}
	return w
}

func TestCleanTempAtMostOnceAMinute(t *testing.T) {
	s := newTestStore(t)
	if _, err := Open(s.Root(), Options{}); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(s.Dir(), "tasks", ".tsk_x.json.123.tmp")
	os.WriteFile(stale, []byte("{"), 0o644)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(stale, old, old)
	// Swept a moment ago: opening again does not walk the store.
	if _, err := Open(s.Root(), Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); err != nil {
		t.Fatal("swept twice within a minute")
	}
	marker := filepath.Join(s.Dir(), "runtime", "locks", "temp-swept.lock")
	os.Chtimes(marker, old, old)
	if _, err := Open(s.Root(), Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Error("stale temp file survived the next sweep")
	}
}

// Unblocking a task lifts the blocks its own block cascaded, back to the status each
// sub-task had; a sub-task blocked for its own reason, or blocked by a deeper cascade
// whose cause still holds, stays blocked. The history records the block and the lift.
func TestUnblockLiftsItsCascade(t *testing.T) {
	s := newTestStore(t)
	root := mustTask(t, s, NewTask{Title: "root", Status: StatusTodo, AssigneeID: "mgr"})
	a := mustTask(t, s, NewTask{Title: "a", Status: StatusTodo, ParentID: root.ID, AssigneeID: "w1"})
	aa := mustTask(t, s, NewTask{Title: "aa", Status: StatusTodo, ParentID: a.ID, AssigneeID: "w1"})
	b := mustTask(t, s, NewTask{Title: "b", Status: StatusTodo, ParentID: root.ID, AssigneeID: "w2"})
	own := mustTask(t, s, NewTask{Title: "own", Status: StatusTodo, ParentID: root.ID, AssigneeID: "w2"})
	for _, id := range []string{root.ID, a.ID} {
		if _, err := s.SetTaskStatus(human, id, StatusInProgress, ""); err != nil {
			t.Fatal(err)
		}
	}
	w2 := Actor{ID: "w2", Via: ViaTool}
	if _, err := s.SetTaskStatus(w2, own.ID, StatusBlocked, "the disk is full"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetTaskStatus(human, root.ID, StatusBlocked, "hold on"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{a.ID, aa.ID, b.ID} {
		got, _ := s.Task(id)
		if got.Status != StatusBlocked || got.CascadeFrom != root.ID {
			t.Fatalf("%s after the block: status %s, cascade_from %q", got.Title, got.Status, got.CascadeFrom)
		}
	}
	ch, err := s.SetTaskStatus(human, root.ID, StatusInProgress, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Cascaded) != 3 {
		t.Errorf("lifted %d tasks, want 3 (a, aa, b)", len(ch.Cascaded))
	}
	for _, tc := range []struct {
		id, status string
	}{{a.ID, StatusInProgress}, {aa.ID, StatusTodo}, {b.ID, StatusTodo}, {own.ID, StatusBlocked}} {
		got, err := s.Task(tc.id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != tc.status || got.CascadeFrom != "" || got.StatusBeforeCascade != "" {
			t.Errorf("%s: status %s (cascade_from %q, before %q), want %s with no cascade", got.Title, got.Status,
				got.CascadeFrom, got.StatusBeforeCascade, tc.status)
		}
	}
	evs, err := s.Events(a.ID)
	if err != nil {
		t.Fatal(err)
	}
	block, lift := evs[len(evs)-2], evs[len(evs)-1]
	if block.To != StatusBlocked || !strings.Contains(block.Reason, "parent task "+root.ID+" blocked") {
		t.Errorf("history of the block: %+v", block)
	}
	if lift.From != StatusBlocked || lift.To != StatusInProgress || lift.Actor != "owner" || !strings.Contains(lift.Reason, root.ID) {
		t.Errorf("history of the lift: %+v", lift)
	}

	// A cascade from a's own block stays while a is blocked, however the root moves.
	if _, err := s.SetTaskStatus(human, a.ID, StatusBlocked, "a's own trouble"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetTaskStatus(human, root.ID, StatusBlocked, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetTaskStatus(human, root.ID, StatusInProgress, ""); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id, status, from string
	}{{a.ID, StatusBlocked, ""}, {aa.ID, StatusBlocked, a.ID}} {
		got, _ := s.Task(tc.id)
		if got.Status != tc.status || got.CascadeFrom != tc.from {
			t.Errorf("%s: status %s cascade_from %q, want %s from %q", got.Title, got.Status, got.CascadeFrom, tc.status, tc.from)
		}
	}
}

// A cascade whose cause was lifted by hand (the ancestor's file edited back to
// in_progress) is lifted by LiftCascades, which the coordinator calls.
func TestLiftCascadesAfterHandEdit(t *testing.T) {
	s := newTestStore(t)
	root := mustTask(t, s, NewTask{Title: "root", Status: StatusTodo, AssigneeID: "mgr"})
	a := mustTask(t, s, NewTask{Title: "a", Status: StatusTodo, ParentID: root.ID, AssigneeID: "w1"})
	if _, err := s.SetTaskStatus(human, root.ID, StatusInProgress, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetTaskStatus(human, root.ID, StatusBlocked, ""); err != nil {
		t.Fatal(err)
	}
	all, _ := s.Tasks(TaskFilter{})
	if n, err := s.LiftCascades(all); err != nil || n != 0 {
		t.Fatalf("LiftCascades while the root is blocked = %d, %v; want 0", n, err)
	}
	writeTaskStatus(t, s, root.ID, StatusInProgress)
	all, _ = s.Tasks(TaskFilter{})
	if n, err := s.LiftCascades(all); err != nil || n != 1 {
		t.Fatalf("LiftCascades = %d, %v; want 1", n, err)
	}
	got, _ := s.Task(a.ID)
	if got.Status != StatusTodo || got.CascadeFrom != "" {
		t.Errorf("a: status %s cascade_from %q, want todo and no cascade", got.Status, got.CascadeFrom)
	}
	evs, _ := s.Events(a.ID)
	if last := evs[len(evs)-1]; last.Via != ViaFile || last.To != StatusTodo {
		t.Errorf("history of the lift: %+v", last)
	}
}

// A write's journal line and a send's delivery record go to runtime/journal, which
// watchers leave out: a watcher of runtime/ itself sees nothing of a task written and a
// message sent before the file made after them.
func TestJournalOutOfWatchedDirectories(t *testing.T) {
	s := newTestStore(t)
	if !slices.Contains(UnwatchedDirs, JournalDir) {
		t.Fatalf("%s is not among the unwatched directories", JournalDir)
	}
	// The first write and send make runtime/'s directories; the ones after change files.
	mustTask(t, s, NewTask{Title: "first"})
	send(t, s, "owner", "w1", "first")
	w := watchDir(t, s.path("runtime"))
	mustTask(t, s, NewTask{Title: "journaled"})
	send(t, s, "owner", "w1", "recorded")
	if fi, err := os.Stat(s.path(JournalPath)); err != nil || fi.Size() == 0 {
		t.Fatalf("the journal at %s is empty or missing: %v", JournalPath, err)
	}
	sentinel := s.path("runtime", "sentinel")
	if err := os.WriteFile(sentinel, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(5 * time.Second)
	for {
		select {
		case ev := <-w.Events:
			if ev.Name != sentinel {
				t.Fatalf("a watcher of runtime/ saw %s %s", ev.Op, ev.Name)
			}
			return
		case err := <-w.Errors:
			t.Fatal(err)
		case <-timeout:
			t.Fatal("the sentinel's creation was not seen")
		}
	}
}

// A large sub-tree's counts, kept between calls and brought up to date from the tasks
// changed since, are what a walk of the sub-tree counts after any sequence of changes:
// sub-tasks created inside and outside it, statuses moved, parents edited by hand into
// it, out of it and into loops, files removed by hand, and the index file written (its
// finished tasks leaving memory). Most calls patch the counts kept rather than walk.
func TestSubtreeSummaryKeptMatchesAWalk(t *testing.T) {
	s := newTestStore(t)
	root := mustTask(t, s, NewTask{Title: "root", Status: StatusTodo, AssigneeID: "w1"})
	ids := []string{root.ID}
	for i := range memoSubtree + 10 {
		parent := root.ID
		if i%5 == 4 {
			parent = ids[len(ids)-1] // a few levels, not only direct sub-tasks
		}
		ids = append(ids, mustTask(t, s, NewTask{Title: fmt.Sprint("sub ", i), Status: StatusTodo, ParentID: parent, AssigneeID: "w1"}).ID)
	}
	for i := range 10 {
		ids = append(ids, mustTask(t, s, NewTask{Title: fmt.Sprint("outside ", i), Status: StatusTodo, AssigneeID: "w2"}).ID)
	}
	walk := func() TaskCounts {
		out := TaskCounts{}
		if err := s.tasks.With(func() {
			s.walkSubtreeKeysLocked(root.ID, false, func(_ string, k []string) { out[k[tkStatus]]++ })
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	check := func(step string) (patched bool) {
		t.Helper()
		s.tasks.Lock()
		before := s.tix.summaries[root.ID]
		s.tasks.Unlock()
		got, err := s.SubtreeSummary(root.ID)
		if err != nil {
			t.Fatal(err)
		}
		if want := walk(); !maps.Equal(got, want) {
			t.Fatalf("after %s: kept counts %v, a walk counts %v", step, got, want)
		}
		s.tasks.Lock()
		after := s.tix.summaries[root.ID]
		s.tasks.Unlock()
		return before != nil && before == after
	}
	check("the first call")
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func() string { return ids[rng.IntN(len(ids))] }
	patches := 0
	for i := range 400 {
		var step string
		switch r := rng.IntN(100); {
		case r < 30:
			parent := pick()
			step = "a task created under " + parent
			if tk, err := s.CreateTask(human, NewTask{Title: fmt.Sprint("new ", i), Status: StatusTodo, ParentID: parent, AssigneeID: "w1"}); err == nil {
				ids = append(ids, tk.ID)
			}
		case r < 65:
			id, to := pick(), Statuses[rng.IntN(len(Statuses))]
			step = fmt.Sprintf("%s set to %s", id, to)
			s.SetTaskStatus(human, id, to, "") // refused moves change nothing
		case r < 80:
			id, parent := pick(), pick()
			if rng.IntN(4) == 0 {
				parent = ""
			}
			step = fmt.Sprintf("%s's parent edited by hand to %q", id, parent)
			if _, err := os.Stat(s.taskPath(id)); err == nil {
				handEdit(t, s, id, func(tk *Task) { tk.ParentID = parent })
			}
		case r < 85:
			id := pick()
			step = id + " removed by hand"
			if id != root.ID {
				os.Remove(s.taskPath(id))
			}
		case r < 90:
			step = "the index file written"
			s.tasks.Lock()
			s.tasks.SetRebuilt()
			s.tasks.Unlock()
			if _, err := s.Tasks(TaskFilter{}); err != nil {
				t.Fatal(err)
			}
		default:
			id := pick()
			step = id + "'s status edited by hand"
			if _, err := os.Stat(s.taskPath(id)); err == nil {
				handEdit(t, s, id, func(tk *Task) { tk.Status = StatusCancelled })
			}
		}
		if check(step) {
			patches++
		}
	}
	if patches < 100 {
		t.Errorf("%d of 400 calls patched the kept counts; the rest walked the sub-tree", patches)
	}
}

// BenchmarkSubtreeSummary counts a task's 400 sub-tasks, 300 of them done and held in the
// index file's cold part (as after a save), in a store a watcher reports on (as a
// server's), beside a no-op floor (the cache brought up to date alone): summary as a
// session asks on each call (the counts kept from the call before, nothing changed
// since), walk as every call did before counts were kept.
func BenchmarkSubtreeSummary(b *testing.B) {
	s, err := Init(b.TempDir(), InitOptions{Name: "bench", OwnerID: "owner"}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	root, err := s.CreateTask(human, NewTask{Title: "root", Status: StatusTodo})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 400 {
		tk, err := s.CreateTask(human, NewTask{Title: fmt.Sprint("sub ", i), Status: StatusTodo, ParentID: root.ID, AssigneeID: "owner"})
		if err != nil {
			b.Fatal(err)
		}
		if i < 300 {
			for _, to := range []string{StatusInProgress, StatusDone} {
				if _, err := s.SetTaskStatus(human, tk.ID, to, ""); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	s.tasks.Lock()
	s.tasks.SetRebuilt()
	s.tasks.Unlock()
	if _, err := s.Tasks(TaskFilter{}); err != nil { // writes the index file: the done ones go cold
		b.Fatal(err)
	}
	s.Watched()
	b.Run("floor_sync", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.TasksGeneration(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("summary", func(b *testing.B) {
		for b.Loop() {
			if c, err := s.SubtreeSummary(root.ID); err != nil || c[StatusDone] != 300 || c[StatusTodo] != 100 {
				b.Fatalf("%v %v", c, err)
			}
		}
	})
	b.Run("walk", func(b *testing.B) {
		for b.Loop() {
			c := TaskCounts{}
			if err := s.tasks.With(func() {
				s.walkSubtreeKeysLocked(root.ID, false, func(_ string, k []string) { c[k[tkStatus]]++ })
			}); err != nil || c[StatusDone] != 300 || c[StatusTodo] != 100 {
				b.Fatalf("%v %v", c, err)
			}
		}
	})
}

// Parents edited by hand into a loop leave every walk of a sub-tree finite, each task in
// it once, and the task the walk starts from out of it.
func TestSubtreeOverALoopOfParents(t *testing.T) {
	s := newTestStore(t)
	a := mustTask(t, s, NewTask{Title: "A", AssigneeID: "w1"})
	b := mustTask(t, s, NewTask{Title: "B", ParentID: a.ID, AssigneeID: "w1"})
	c := mustTask(t, s, NewTask{Title: "C", ParentID: b.ID, AssigneeID: "w1"})
	d := mustTask(t, s, NewTask{Title: "D", ParentID: c.ID, AssigneeID: "w1"})
	self := mustTask(t, s, NewTask{Title: "self", AssigneeID: "w1"})
	handEdit(t, s, a.ID, func(tk *Task) { tk.ParentID = c.ID })
	handEdit(t, s, self.ID, func(tk *Task) { tk.ParentID = self.ID })
	for _, tc := range []struct {
		root *Task
		want string
	}{{a, "B C D"}, {b, "C A D"}, {c, "A D B"}, {d, ""}, {self, ""}} {
		sub, err := s.Subtree(tc.root.ID)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, tk := range sub {
			got = append(got, tk.Title)
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("Subtree(%s) = %q, want %q", tc.root.Title, got, tc.want)
		}
		sum, err := s.SubtreeSummary(tc.root.ID)
		if err != nil {
			t.Fatal(err)
		}
		if n := sum[StatusBacklog]; n != len(sub) {
			t.Errorf("SubtreeSummary(%s) counts %d, want %d", tc.root.Title, n, len(sub))
		}
	}
}

// A block cascades from the deepest sub-task up, the blocked task last, and an unblock
// lifts its cascade from the top down: replaying the writes of both one by one, no task is
// ever in progress under a blocked ancestor, so a writer killed between two of them cannot
// leave one (TestKillDuringWrites found a lift could when the deepest went first).
func TestCascadeWritesNeverRunUnderBlocked(t *testing.T) {
	s := newTestStore(t)
	root := mustTask(t, s, NewTask{Title: "root", Status: StatusTodo, AssigneeID: "w1"})
	parent := root
	var chain []*Task
	for i := range 4 {
		c := mustTask(t, s, NewTask{Title: fmt.Sprint("level ", i+1), Status: StatusTodo, ParentID: parent.ID, AssigneeID: "w1"})
		chain = append(chain, c)
		parent = c
	}
	for _, tk := range append([]*Task{root}, chain...) {
		if _, err := s.SetTaskStatus(human, tk.ID, StatusInProgress, ""); err != nil {
			t.Fatal(err)
		}
	}
	blocked, err := s.SetTaskStatus(human, root.ID, StatusBlocked, "hold on")
	if err != nil || len(blocked.Cascaded) != len(chain) {
		t.Fatalf("block: cascaded %d, %v; want %d", len(blocked.Cascaded), err, len(chain))
	}
	for i, tk := range blocked.Cascaded { // told from the top down, whatever the order written
		if tk.ID != chain[i].ID {
			t.Errorf("block: cascaded[%d] = %s, want %s", i, tk.Title, chain[i].Title)
		}
	}
	ch, err := s.SetTaskStatus(human, root.ID, StatusInProgress, "")
	if err != nil || len(ch.Cascaded) != len(chain) {
		t.Fatalf("unblock: lifted %d, %v; want %d", len(ch.Cascaded), err, len(chain))
	}
	parentOf := map[string]string{}
	status := map[string]string{}
	lines, err := engine.ReadLines(s.path("events.jsonl"), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		var e Event
		if json.Unmarshal(l.Data, &e) != nil || e.Entity != "task" {
			continue
		}
		if e.Change == "created" {
			tk, err := s.Task(e.ID)
			if err != nil {
				t.Fatal(err)
			}
			parentOf[e.ID] = tk.ParentID
		}
		if e.Change == "created" || e.Change == "status" {
			status[e.ID] = e.To
		}
		for id, st := range status {
			if st != StatusInProgress {
				continue
			}
			for a := parentOf[id]; a != ""; a = parentOf[a] {
				if status[a] == StatusBlocked {
					t.Fatalf("after %s %s→%s: %s in progress under blocked %s", e.ID, e.From, e.To, id, a)
				}
			}
		}
	}
	for _, tk := range chain {
		if got, _ := s.Task(tk.ID); got.Status != StatusInProgress {
			t.Errorf("%s: %s after the lift, want in_progress", got.Title, got.Status)
		}
	}
}
