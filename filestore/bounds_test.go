package filestore

import (
	"os"
	"runtime"
	"testing"
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
	if err := os.Truncate(s.journalPath(), 64<<30); err != nil {
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
