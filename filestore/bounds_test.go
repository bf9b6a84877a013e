package filestore

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// allocated returns the bytes fn allocates.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A journal grown by gigabytes at once (here a 64 GB sparse file of no newlines) is not
// read into memory: the caches are rescanned instead, and still see what changed.
func TestJournalGrowthBounded(t *testing.T) {
	s := newTestStore(t)
	a := mustTask(t, s, NewTask{Title: "A", Status: StatusTodo, AssigneeID: "w1"})
	s.Watched()
	if got := statusOf(t, s, a.ID); got != StatusTodo {
		t.Fatalf("status %s", got)
	}
	o := reopen(t, s)
	if _, err := o.SetTaskStatus(human, a.ID, StatusInProgress, ""); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(s.eng.JournalFile(), 64<<30); err != nil {
		t.Skipf("no sparse 64 GB file here: %v", err)
	}
	var got string
	n := allocated(func() { got = statusOf(t, s, a.ID) })
	if n > 16<<20 {
		t.Errorf("a query after 64 GB of journal growth allocated %d MB", n>>20)
	}
	if got != StatusInProgress {
		t.Errorf("after the growth: %s, want in_progress (the rescan sees the write)", got)
	}
}

// A sweep marker dated in the future does not stop the cleaning of temp files for good.
func TestSweepMarkerFromTheFuture(t *testing.T) {
	s := newTestStore(t)
	now := s.Now()
	tmp := s.path("tasks", ".tsk_x.json.123.tmp")
	if err := os.WriteFile(tmp, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := now.Add(-time.Hour)
	if err := os.Chtimes(tmp, old, old); err != nil {
		t.Fatal(err)
	}
	marker := s.path("runtime", "locks", "temp-swept.lock")
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	future := now.Add(24 * 365 * time.Hour)
	if err := os.Chtimes(marker, future, future); err != nil {
		t.Fatal(err)
	}
	reopen(t, s)
	if _, err := os.Lstat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an hour-old temp file survived a sweep under a marker from the future: %v", err)
	}
}

// A mailbox that is a hard link to a file elsewhere is refused for appending: the message
// would land in the other file.
func TestHardLinkedMailboxRefused(t *testing.T) {
	s := newTestStore(t)
	outside := filepath.Join(t.TempDir(), "outside.jsonl")
	if err := os.WriteFile(outside, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(s.mailboxPath("w1")), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(outside, s.mailboxPath("w1")); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	_, err := s.SendMessage(human, SendRequest{To: "w1", Content: "hello"})
	var ue *UnsafePathError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "hard link") || !strings.Contains(err.Error(), "agents/w1/chat.jsonl") {
		t.Errorf("send to a hard-linked mailbox: %v, want an error naming the file and the hard link", err)
	}
	if data, _ := os.ReadFile(outside); len(data) != 0 {
		t.Errorf("the outside file was written: %q", data)
	}
}

// An edit in place that keeps the file's size and sets its modification time back is still
// seen by the next listing of a process without a watcher.
func TestInPlaceEditKeepingSizeAndMtimeSeen(t *testing.T) {
	s := newTestStore(t)
	a := mustTask(t, s, NewTask{Title: "AAAA"})
	if list, _ := s.TasksByID([]string{a.ID}); len(list) != 1 || list[0].Title != "AAAA" {
		t.Fatalf("before: %v", list)
	}
	path := s.taskPath(a.ID)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte(strings.Replace(string(data), `"title": "AAAA"`, `"title": "BBBB"`, 1)))
	f.Close()
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if nfi, _ := os.Stat(path); nfi.Size() != fi.Size() || !nfi.ModTime().Equal(fi.ModTime()) {
		t.Fatal("the edit changed the size or the mtime")
	}
	if list, _ := s.TasksByID([]string{a.ID}); len(list) != 1 || list[0].Title != "BBBB" {
		t.Errorf("after an in-place edit keeping size and mtime: %v, want the title BBBB", list)
	}
}

// Reading a file backward past a line over MaxLine skips it at the cost of its length,
// not its length squared (a 64 MiB line once took minutes), and still finds the lines on
// both sides of it.
func TestScanBackSkipsOverLongLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chat.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("first\n")
	f.WriteString(strings.Repeat("x", 64<<20))
	f.WriteString("\nlast\n")
	f.Close()
	var got []string
	start := time.Now()
	alloc := allocated(func() {
		if err := scanBack(path, func(line []byte) bool { got = append(got, string(line)); return true }); err != nil {
			t.Fatal(err)
		}
	})
	if strings.Join(got, ",") != "last,first" {
		t.Fatalf("lines %q", got)
	}
	if alloc > 16<<20 {
		t.Errorf("scanBack allocated %d bytes past a 64 MiB line", alloc)
	}
	t.Logf("%v, %d bytes allocated", time.Since(start), alloc)
}
