package filestore

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// historyOf is an entity's history as EventsTail gives it, and as a scan of the whole
// file does.
func historyOf(t *testing.T, s *Store, id string) (got, want string) {
	t.Helper()
	evs, total, err := s.EventsTail(id, -1)
	if err != nil {
		t.Fatal(err)
	}
	all, err := s.Events("")
	if err != nil {
		t.Fatal(err)
	}
	var g, w []string
	for _, e := range evs {
		g = append(g, e.Change+":"+e.To)
	}
	for _, e := range all {
		if e.ID == id {
			w = append(w, e.Change+":"+e.To)
		}
	}
	return fmt.Sprint(total, g), fmt.Sprint(len(w), w)
}

func baseOpen(s *Store) bool {
	s.history.mu.Lock()
	defer s.history.mu.Unlock()
	return s.history.base != nil
}

// The history index file answers as the history does: lines appended after it, a
// history rewritten under it, an index file spoiled or of another history.
func TestEventsIndexFile(t *testing.T) {
	s := newTestStore(t)
	var ids []string
	for i := range 5 {
		tk := mustTask(t, s, NewTask{Title: fmt.Sprint("T", i), AssigneeID: "w1"})
		ids = append(ids, tk.ID)
	}
	check := func(s *Store, when string) {
		t.Helper()
		for _, id := range ids {
			if got, want := historyOf(t, s, id); got != want {
				t.Errorf("%s: %s: history %s, want %s", when, id, got, want)
			}
		}
	}
	check(s, "first look")
	p := s.path(EventsIndexPath)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("no index file written: %v", err)
	}
	// A new process uses it, and finds what was appended since in the history.
	if _, err := s.SetTaskStatus(human, ids[1], StatusTodo, ""); err != nil {
		t.Fatal(err)
	}
	o := reopen(t, s)
	check(o, "from the index file")
	if !baseOpen(o) {
		t.Error("the index file was not used")
	}
	// Spoiled index files are not used, and answers stay the history's.
	data, _ := os.ReadFile(p)
	for name, spoilt := range map[string]string{
		"truncated":      string(data[:len(data)/2]),
		"hand-edited":    strings.Replace(string(data), "aipm-events-index\t1\t", "aipm-events-index\t1\t1", 1),
		"other format":   strings.Replace(string(data), "aipm-events-index\t1", "aipm-events-index\t9", 1),
		"a byte changed": string(data[:len(data)-20]) + "x" + string(data[len(data)-19:]),
	} {
		os.WriteFile(p, []byte(spoilt), 0o644)
		o := reopen(t, s)
		check(o, name)
		if !baseOpen(o) { // written anew
			t.Errorf("%s: not rebuilt", name)
		}
	}
	// The history rewritten (another inode, as a merge leaves it), with lines moved: the
	// index file of the old one is not used.
	hist := s.path("events.jsonl")
	data, _ = os.ReadFile(hist)
	lines := strings.SplitAfter(string(data), "\n")
	rewritten := strings.Join(append(lines[len(lines)/2:], lines[:len(lines)/2]...), "")
	os.WriteFile(hist+".tmp", []byte(rewritten), 0o644)
	os.Rename(hist+".tmp", hist)
	check(reopen(t, s), "history rewritten")
	// Rewritten in place (same inode and size, lines moved), as a new file that got the
	// old one's inode would be: the last bytes before the end of what the index covers
	// differ, and it is not used. (Were they alike, a line found through the index is
	// still read and its id compared: no other entity's line is answered.)
	o = reopen(t, s)
	check(o, "before the edit in place")
	data, _ = os.ReadFile(hist)
	lines = strings.SplitAfter(string(data), "\n")
	f, err := os.OpenFile(hist, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(strings.Join(append(lines[len(lines)/2:], lines[:len(lines)/2]...), ""))
	f.Close()
	n := reopen(t, s)
	check(n, "rewritten in place")
	for _, id := range ids {
		evs, _, err := n.EventsTail(id, -1)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.ID != id {
				t.Errorf("history of %s answered with a line of %s", id, e.ID)
			}
		}
	}
}

// Many lines after the index file make a process write it again, and hold it instead.
func TestEventsIndexFileFollows(t *testing.T) {
	s := newTestStore(t)
	a := mustTask(t, s, NewTask{Title: "A", AssigneeID: "w1"})
	s.EventsTail(a.ID, -1)
	appendEdits(t, s, a.ID, eventsIndexEvery+10)
	if got, want := historyOf(t, s, a.ID); got != want {
		t.Fatalf("history %.200s, want %.200s", got, want)
	}
	s.history.mu.Lock()
	held := len(s.history.pairs)
	s.history.mu.Unlock()
	if held != 0 || !baseOpen(s) {
		t.Errorf("after %d lines: %d lines held in memory, index file open %v", eventsIndexEvery+10, held, baseOpen(s))
	}
	if got, want := historyOf(t, reopen(t, s), a.ID); got != want {
		t.Fatalf("next process: history %.200s, want %.200s", got, want)
	}
}

// Processes that index the same lines write the history index file once between them:
// the one that comes second takes up the file the first wrote, and answers from it.
func TestEventsIndexFileTakenUp(t *testing.T) {
	s := newTestStore(t)
	a := mustTask(t, s, NewTask{Title: "A", AssigneeID: "w1"})
	o := reopen(t, s)
	s.EventsTail(a.ID, -1)
	o.EventsTail(a.ID, -1)
	appendEdits(t, s, a.ID, eventsIndexEvery+10)
	if got, want := historyOf(t, s, a.ID); got != want {
		t.Fatalf("first process: history %.200s, want %.200s", got, want)
	}
	p := s.path(EventsIndexPath)
	written, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := historyOf(t, o, a.ID); got != want {
		t.Fatalf("second process: history %.200s, want %.200s", got, want)
	}
	now, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(written, now) {
		t.Error("the second process wrote the index file again")
	}
	o.history.mu.Lock()
	held := len(o.history.pairs)
	o.history.mu.Unlock()
	if held != 0 || !baseOpen(o) {
		t.Errorf("second process: %d lines held in memory, index file open %v", held, baseOpen(o))
	}
}

// appendEdits appends n history lines about id to events.jsonl, as another writer would.
func appendEdits(t *testing.T, s *Store, id string, n int) {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"at":"2026-01-02T03:04:05Z","actor":"owner","via":"cli","entity":"task","id":"%s","change":"edited","to":"%d"}`+"\n", id, i)
	}
	f, err := os.OpenFile(s.path("events.jsonl"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(b.String()); err != nil {
		t.Fatal(err)
	}
}

// TestHistoryPassesOverALongLine: one line longer than any event (a hand edit, a hostile
// push) costs neither the task before it nor the one after it their history, whether the
// index is built in this process or by another.
func TestHistoryPassesOverALongLine(t *testing.T) {
	s := newTestStore(t)
	before := mustTask(t, s, NewTask{Title: "Before", Status: StatusTodo})
	f, err := os.OpenFile(s.path("events.jsonl"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"id":"` + strings.Repeat("x", 3<<20) + "\"}\n")
	f.Close()
	after := mustTask(t, s, NewTask{Title: "After", Status: StatusTodo})
	for name, st := range map[string]*Store{"this process": s, "another": reopen(t, s)} {
		for _, tk := range []*Task{before, after} {
			evs, err := st.Events(tk.ID)
			if err != nil || len(evs) != 1 || evs[0].Change != "created" {
				t.Errorf("%s: history of %s: %+v, %v", name, tk.Title, evs, err)
			}
		}
	}
}
