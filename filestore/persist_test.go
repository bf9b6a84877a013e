package filestore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The index files (persist.go) start a process from what an earlier one knew; whatever
// happened to the files or to the index file since, the answers are the files'.

// cancelled creates a task and cancels it: finished work, held as its keys only.
func cancelled(t *testing.T, s *Store, n NewTask) *Task {
	t.Helper()
	tk := mustTask(t, s, n)
	if _, err := s.SetTaskStatus(human, tk.ID, StatusCancelled, ""); err != nil {
		t.Fatal(err)
	}
	return tk
}

// indexState queries a store's tasks and tells whether it started from the index file.
func fromIndex(t *testing.T, s *Store) bool {
	t.Helper()
	var from bool
	if err := s.tasks.with(func() { from = s.tasks.fromIndex }); err != nil {
		t.Fatal(err)
	}
	return from
}

// wantIndexFile checks that the tasks index file is whole and lists n tasks.
func wantIndexFile(t *testing.T, s *Store, n int) {
	t.Helper()
	data, err := os.ReadFile(s.tasks.indexPath())
	if err != nil {
		t.Fatalf("index file: %v", err)
	}
	_, recs, coldPart, err := parseIndex(data, "tasks")
	var cold *coldIndex
	if err == nil {
		cold, err = parseCold(coldPart, 4, tkDeps, true)
	}
	if err != nil || len(recs)+cold.n != n {
		t.Fatalf("index file: %d live records, %v; want %d in all, whole", len(recs), err, n)
	}
}

// saveIndex makes s write its index file now.
func saveIndex(t *testing.T, s *Store) {
	t.Helper()
	s.tasks.mu.Lock()
	s.tasks.rebuilt = true
	s.tasks.mu.Unlock()
	titles(t, s, TaskFilter{})
}

// titles lists the tasks a store answers, "title:status", by id.
func titles(t *testing.T, s *Store, f TaskFilter) string {
	t.Helper()
	all, err := s.Tasks(f)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tk := range all {
		out = append(out, tk.Title+":"+tk.Status)
	}
	return strings.Join(out, " ")
}

func TestIndexFileStartsTheNextProcess(t *testing.T) {
	s := newTestStore(t)
	a := mustTask(t, s, NewTask{Title: "A", Status: StatusTodo, AssigneeID: "w1"})
	mustTask(t, s, NewTask{Title: "B", ParentID: a.ID})
	c := cancelled(t, s, NewTask{Title: "C", ParentID: a.ID, AssigneeID: "w1"})
	if got := titles(t, s, TaskFilter{}); got != "A:todo B:backlog C:cancelled" {
		t.Fatalf("tasks = %s", got)
	}
	saveIndex(t, s)
	wantIndexFile(t, s, 3)

	o := reopen(t, s)
	if !fromIndex(t, o) {
		t.Fatal("a new process did not start from the index file")
	}
	// The finished task is held as its keys, and read whole when asked for.
	held := func() *cacheEntry[Task] {
		o.tasks.mu.Lock()
		defer o.tasks.mu.Unlock()
		return o.tasks.entry(c.ID)
	}
	if e := held(); e == nil || e.v != nil || e.k[tkStatus] != StatusCancelled {
		t.Errorf("cancelled task held as %+v, want its keys only", e)
	}
	o.tasks.mu.Lock()
	lean := o.tasks.cold != nil && o.tasks.cold.f != nil && o.tasks.cold.stamps == ""
	o.tasks.mu.Unlock()
	if !lean {
		t.Error("the finished tasks' identities were read into memory, not left in the file")
	}
	// Unfinished work and counts need no finished task's file.
	if got := titles(t, o, TaskFilter{Unfinished: true}); got != "A:todo B:backlog" {
		t.Errorf("unfinished = %s", got)
	}
	if n, _ := o.TaskStatusCounts(); n[StatusCancelled] != 1 || n[StatusTodo] != 1 || n.Total() != 3 {
		t.Errorf("counts = %v", n)
	}
	if e := held(); e == nil || e.v != nil {
		t.Errorf("cancelled task read by a query that does not need it: %+v", e)
	}
	if got := titles(t, o, TaskFilter{}); got != "A:todo B:backlog C:cancelled" {
		t.Errorf("from the index: tasks = %s", got)
	}
	if e := held(); e == nil || e.v == nil || e.v.Title != "C" {
		t.Errorf("cancelled task once read: held as %+v", e)
	}
	if got := titles(t, o, TaskFilter{AssigneeID: "w1", Status: StatusCancelled}); got != "C:cancelled" {
		t.Errorf("by assignee and status: %s", got)
	}
	if sum, _ := o.SubtreeSummary(a.ID); sum[StatusCancelled] != 1 || sum[StatusBacklog] != 1 {
		t.Errorf("subtree summary = %v", sum)
	}
	if in, _ := o.InSubtree(a.ID, c.ID); !in {
		t.Error("InSubtree(A, C) = false")
	}
}

func TestIndexFileStale(t *testing.T) {
	s := newTestStore(t)
	a := mustTask(t, s, NewTask{Title: "A", Status: StatusTodo, AssigneeID: "w1"})
	b := mustTask(t, s, NewTask{Title: "B", ParentID: a.ID})
	c := cancelled(t, s, NewTask{Title: "C"})
	saveIndex(t, s)
	wantIndexFile(t, s, 3)

	// Writes through aipm after the index file was written are in the journal.
	w := reopen(t, s)
	if _, err := w.SetTaskStatus(human, a.ID, StatusInProgress, ""); err != nil {
		t.Fatal(err)
	}
	d := mustTask(t, w, NewTask{Title: "D", ParentID: a.ID})
	o := reopen(t, s)
	if !fromIndex(t, o) {
		t.Error("writes through aipm alone made the index file untrusted")
	}
	if got := titles(t, o, TaskFilter{ParentID: a.ID}); got != "B:backlog D:backlog" {
		t.Errorf("children after writes through aipm: %s", got)
	}
	if got := titles(t, o, TaskFilter{Status: StatusInProgress}); got != "A:in_progress" {
		t.Errorf("in progress after writes through aipm: %s", got)
	}

	// Changes beside aipm while no process runs: a file removed, one created by hand,
	// an unfinished task edited in place (same size), a finished one edited in place.
	bData, _ := os.ReadFile(s.taskPath(b.ID))
	os.Remove(s.taskPath(b.ID))
	eID := d.ID[:len(d.ID)-4] + "zzzz"
	e := strings.NewReplacer(b.ID, eID, `"B"`, `"E"`).Replace(string(bData))
	os.WriteFile(s.taskPath(eID), []byte(e), 0o644)
	handEdit(t, s, d.ID, func(tk *Task) { tk.Status = "tod" + "o"[:0] + "o" })
	handEdit(t, s, c.ID, func(tk *Task) { tk.Title = "C edited" })
	n := reopen(t, s)
	if got := titles(t, n, TaskFilter{ParentID: a.ID}); got != "D:todo E:backlog" {
		t.Errorf("children after changes beside aipm: %s", got)
	}
	if got, _ := n.TasksByID([]string{c.ID}); len(got) != 1 || got[0].Title != "C edited" {
		t.Errorf("finished task edited in place: %v", got)
	}
	wantIndexFile(t, n, 4)
	// And once more from the index file the last process wrote.
	if got := titles(t, reopen(t, s), TaskFilter{}); got != "A:in_progress C edited:cancelled D:todo E:backlog" {
		t.Errorf("from the rebuilt index: %s", got)
	}
}

func TestIndexFileUntrusted(t *testing.T) {
	cases := map[string]func(data string) string{
		"truncated": func(d string) string { return d[:len(d)/2] },
		"empty":     func(string) string { return "" },
		"other format": func(d string) string {
			return strings.Replace(d, fmt.Sprintf("aipm-index\t%d\t", indexFormat), "aipm-index\t99\t", 1)
		},
		"hand-edited":           func(d string) string { return strings.Replace(d, "cancelled", "cancelleD", 1) },
		"hand-edited live part": func(d string) string { return strings.Replace(d, `"A"`, `"B"`, 1) },
		"cold part grown": func(d string) string {
			i := strings.Index(d, "\ncold\t")
			return d[:i+1] + "cold\t1" + d[i+6:]
		},
		"records lost": func(d string) string {
			i := strings.Index(d, "\ntsk_")
			return d[:i+1] + d[strings.Index(d[i+1:], "\n")+i+2:]
		},
		"last line lost": func(d string) string { return d[:strings.LastIndex(d[:len(d)-1], "\n")+1] },
	}
	for name, spoil := range cases {
		t.Run(name, func(t *testing.T) {
			s := newTestStore(t)
			a := mustTask(t, s, NewTask{Title: "A", Status: StatusTodo})
			cancelled(t, s, NewTask{Title: "C", ParentID: a.ID})
			saveIndex(t, s)
			p := s.tasks.indexPath()
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(p, []byte(spoil(string(data))), 0o644)
			o := reopen(t, s)
			if fromIndex(t, o) {
				t.Fatal("a spoiled index file was trusted")
			}
			if got := titles(t, o, TaskFilter{}); got != "A:todo C:cancelled" {
				t.Errorf("tasks = %s", got)
			}
			if got := titles(t, o, TaskFilter{Status: StatusTodo}); got != "A:todo" {
				t.Errorf("todo = %s", got)
			}
			wantIndexFile(t, o, 2) // rebuilt
			if !fromIndex(t, reopen(t, s)) {
				t.Error("the rebuilt index file is not used")
			}
		})
	}
}

func TestIndexFileOfAnotherClone(t *testing.T) {
	s := newTestStore(t)
	mustTask(t, s, NewTask{Title: "A"})
	titles(t, s, TaskFilter{})
	// A copy of the repository carries runtime/ with it: its tasks directory is another.
	dst := filepath.Join(t.TempDir(), "copy")
	if out, err := exec.Command("cp", "-a", s.Root(), dst).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	c, err := Open(dst, Options{Now: s.now})
	if err != nil {
		t.Fatal(err)
	}
	mustTask(t, s, NewTask{Title: "B"}) // in the original only
	os.Remove(s.eng.journalPath())
	if fromIndex(t, c) {
		t.Error("the copy trusted the original's index file")
	}
	if got := titles(t, c, TaskFilter{}); got != "A:backlog" {
		t.Errorf("copy: %s", got)
	}
}

func TestIndexFileJournalStartedAnew(t *testing.T) {
	s := newTestStore(t)
	a := mustTask(t, s, NewTask{Title: "A", Status: StatusTodo, AssigneeID: "w1"})
	titles(t, s, TaskFilter{})
	// The journal is started anew (it grew too large) after a write the index file does
	// not know: the journal no longer says what changed since.
	if _, err := reopen(t, s).SetTaskStatus(human, a.ID, StatusInProgress, ""); err != nil {
		t.Fatal(err)
	}
	os.Remove(s.eng.journalPath())
	o := reopen(t, s)
	mustTask(t, o, NewTask{Title: "B"}) // a write: a new journal starts
	if fromIndex(t, o) {
		t.Error("an index file older than the journal was trusted")
	}
	for _, p := range []*Store{o, reopen(t, s)} { // the second from the index file o left
		if got := titles(t, p, TaskFilter{}); got != "A:in_progress B:backlog" {
			t.Errorf("tasks = %s", got)
		}
	}
}

// The cache-truth checks of cache_test.go, each answered by a new process started from
// the index file the previous one left.
func TestCacheTruthFromIndexFile(t *testing.T) {
	s := newTestStore(t)
	a := mustTask(t, s, NewTask{Title: "A", Status: StatusTodo, AssigneeID: "w1"})
	b := mustTask(t, s, NewTask{Title: "B", Status: StatusTodo, ParentID: a.ID})
	var ids []string
	for i := range 6 {
		ids = append(ids, mustTask(t, s, NewTask{Title: fmt.Sprint("T", i)}).ID)
	}
	titles(t, s, TaskFilter{})
	next := func() *Store { return reopen(t, s) }

	// In-place edit of the same size.
	handEdit(t, s, a.ID, func(tk *Task) { tk.Status = "backlo" + "g" })
	if got := statusOf(t, next(), a.ID); got != StatusBacklog {
		t.Errorf("in-place edit: status = %s, want backlog", got)
	}
	if got := titles(t, next(), TaskFilter{Status: StatusBacklog, AssigneeID: "w1"}); got != "A:backlog" {
		t.Errorf("in-place edit, by status: %s", got)
	}
	// Deleted, then created again with other content.
	data, _ := os.ReadFile(s.taskPath(b.ID))
	os.Remove(s.taskPath(b.ID))
	if got := titles(t, next(), TaskFilter{ParentID: a.ID}); got != "" {
		t.Errorf("deleted child still a child: %s", got)
	}
	os.WriteFile(s.taskPath(b.ID), []byte(strings.Replace(string(data), `"todo"`, `"blocked"`, 1)), 0o644)
	if got := titles(t, next(), TaskFilter{ParentID: a.ID}); got != "B:blocked" {
		t.Errorf("re-created: %s", got)
	}
	// A rename storm: files swapped pairwise.
	tmp := filepath.Join(t.TempDir(), "x")
	for i := 0; i+1 < len(ids); i += 2 {
		p, q := s.taskPath(ids[i]), s.taskPath(ids[i+1])
		os.Rename(p, tmp)
		os.Rename(q, p)
		os.Rename(tmp, q)
	}
	// A file's id is its name; its content is what was swapped in.
	n := next()
	for i, id := range ids {
		tk, _ := n.TasksByID([]string{id})
		if want := fmt.Sprint("T", i^1); len(tk) != 1 || tk[0].ID != id || tk[0].Title != want {
			t.Fatalf("tasks/%s.json: %v, want id %s with the content of %s (title %s)", id, tk, id, ids[i^1], want)
		}
	}
	// The journal started anew after an edit nobody reported.
	handEdit(t, s, a.ID, func(tk *Task) { tk.Status = StatusTodo })
	os.Remove(s.eng.journalPath())
	mustTask(t, next(), NewTask{Title: "Z"})
	if got := statusOf(t, next(), a.ID); got != StatusTodo {
		t.Errorf("after a new journal: status = %s, want todo", got)
	}
	// The directory replaced wholesale, as a checkout may.
	dir := s.path("tasks")
	os.Rename(dir, dir+".old")
	os.Mkdir(dir, 0o755)
	if got := titles(t, next(), TaskFilter{}); got != "" {
		t.Errorf("tasks after the directory was replaced: %s", got)
	}
}

func TestIsEntityID(t *testing.T) {
	for _, id := range []string{"tsk_01jd2x0k8m3q7v5w9z1b4c6e8f", "tsk_a", "tsk_a.b-c_d", "tsk_", "cnv_01jd", "tsk_-a", "tsk_A1",
		"tsk_../x", "tsk_a/b", "tsk_" + strings.Repeat("a", 63), "tsk_" + strings.Repeat("a", 64), "tsk_a\tb", "tsk_é"} {
		if got, want := isEntityID(PrefixTask)(id), ValidateEntityID(PrefixTask, id) == nil; got != want {
			t.Errorf("isEntityID(%q) = %v, ValidateEntityID says %v", id, got, want)
		}
	}
}

// TaskPage keeps only a page's worth of ids while it counts the matches: every page of
// every listing is the sorted listing cut at the cursor.
func TestTaskPageMatchesTheSortedListing(t *testing.T) {
	s := newTestStore(t)
	top := mustTask(t, s, NewTask{Title: "top"})
	for i := range 23 {
		n := NewTask{Title: fmt.Sprint("t", i), ParentID: top.ID}
		if i%3 == 0 {
			n.AssigneeID, n.Status = "w1", StatusTodo
		}
		if i%4 == 0 {
			cancelled(t, s, n)
		} else {
			mustTask(t, s, n)
		}
	}
	for _, f := range []TaskFilter{{}, {ParentID: top.ID}, {Status: StatusCancelled}, {Status: StatusTodo}, {Status: StatusBacklog}, {AssigneeID: "w1"}, {Status: StatusTodo, AssigneeID: "w1"}, {Unfinished: true}} {
		all := pagesAsListing(t, s, f, 1, 2, 5, 50, maxPartialSort+1)
		if p, err := s.TaskPage(f, "", 0); err != nil || p.Total != len(all) || len(p.Tasks) != 0 || p.Next != "" {
			t.Errorf("%+v limit 0: %+v, %v; want the count alone", f, p, err)
		}
	}
}

// pagesAsListing pages through the tasks of f at each limit and checks the pages, in
// order, and each page's total against the listing of every task; it returns the listing.
func pagesAsListing(t *testing.T, s *Store, f TaskFilter, limits ...int) []*Task {
	t.Helper()
	all, err := s.Tasks(f)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, tk := range all {
		want = append(want, tk.ID)
	}
	for _, limit := range limits {
		var got []string
		after := ""
		for pages := 0; ; pages++ {
			p, err := s.TaskPage(f, after, limit)
			if err != nil || p.Total != len(all) || pages > len(all)+1 {
				t.Fatalf("%+v limit %d page %d: total %d of %d, %v", f, limit, pages, p.Total, len(all), err)
			}
			for _, tk := range p.Tasks {
				got = append(got, tk.ID)
			}
			if p.Next == "" {
				break
			}
			after = p.Next
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%+v limit %d: pages %v, want %v", f, limit, got, want)
		}
	}
	return all
}

// finish moves a task to done (through in_progress, as the status table asks).
func finish(t *testing.T, s *Store, id string) {
	t.Helper()
	for _, st := range []string{StatusTodo, StatusInProgress, StatusDone} {
		if _, err := s.SetTaskStatus(human, id, st, ""); err != nil {
			t.Fatalf("%s → %s: %v", id, st, err)
		}
	}
}

// answers is every task query of a store, as text: listings by each filter, every page of
// them, counts, sub-trees, children and dependents.
func answers(t *testing.T, s *Store, ids []string) string {
	t.Helper()
	var b strings.Builder
	filters := []TaskFilter{{}, {Unfinished: true}, {TopLevel: true}, {Status: StatusDone}, {Status: StatusCancelled},
		{Status: StatusTodo}, {AssigneeID: "w1"}, {AssigneeID: "w1", Status: StatusDone}, {AssigneeID: "w2", Status: StatusCancelled}}
	for _, id := range ids[:3] {
		filters = append(filters, TaskFilter{ParentID: id}, TaskFilter{ParentID: id, Status: StatusDone})
	}
	for _, f := range filters {
		fmt.Fprintf(&b, "%+v: %s\n", f, titles(t, s, f))
		after := ""
		for {
			p, err := s.TaskPage(f, after, 2)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, " page %d:", p.Total)
			for _, tk := range p.Tasks {
				b.WriteString(" " + tk.Title)
			}
			if after = p.Next; after == "" {
				break
			}
		}
		b.WriteString("\n")
	}
	counts, err := s.TaskStatusCounts()
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "counts %v\n", map[string]int(counts))
	for _, id := range ids {
		sub, _ := s.Subtree(id)
		sum, _ := s.SubtreeSummary(id)
		deps, _ := s.Dependents(id)
		kids := cachedTasks{s}.children(id)
		fmt.Fprintf(&b, "%s: subtree %d %v dependents %d children %d\n", id, len(sub), map[string]int(sum), len(deps), len(kids))
	}
	return b.String()
}

// A process started from the index file answers every query as one that read the files,
// after writes through aipm (finished work reopened, unfinished work finished, new work)
// and changes beside it (a finished task's file removed, one edited in place, one added).
func TestIndexFileAnswersAsTheFiles(t *testing.T) {
	s := newTestStore(t)
	var ids []string
	for i := range 3 {
		top := mustTask(t, s, NewTask{Title: fmt.Sprint("top", i), AssigneeID: "w1"})
		ids = append(ids, top.ID)
		for j := range 7 {
			n := NewTask{Title: fmt.Sprintf("t%d.%d", i, j), ParentID: top.ID, AssigneeID: []string{"w1", "w2", ""}[j%3]}
			if j == 4 || j == 5 {
				n.Dependencies = []string{ids[len(ids)-j]} // the family's first, done
			}
			tk := mustTask(t, s, n)
			ids = append(ids, tk.ID)
			switch j % 4 {
			case 0:
				finish(t, s, tk.ID)
			case 1:
				if _, err := s.SetTaskStatus(human, tk.ID, StatusCancelled, ""); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	saveIndex(t, s)
	o := reopen(t, s)
	if !fromIndex(t, o) {
		t.Fatal("not started from the index file")
	}
	fresh := func() *Store {
		os.Remove(s.tasks.indexPath())
		return reopen(t, s)
	}
	if got, want := answers(t, o, ids), answers(t, fresh(), ids); got != want {
		t.Fatalf("from the index file:\n%s\nfrom the files:\n%s", got, want)
	}
	saveIndex(t, s)
	o = reopen(t, s)
	// Through aipm, from another process: unfinished work finished, new finished work.
	w := reopen(t, s)
	finish(t, w, ids[7]) // j == 6: backlog, assigned to w1
	extra := mustTask(t, w, NewTask{Title: "late", ParentID: ids[0], AssigneeID: "w2"})
	finish(t, w, extra.ID)
	ids = append(ids, extra.ID)
	got := answers(t, o, ids)
	if want := answers(t, fresh(), ids); got != want {
		t.Fatalf("after writes through aipm, from the index file:\n%s\nfrom the files:\n%s", got, want)
	}
	if !fromIndex(t, o) {
		t.Error("writes through aipm made the process compare every file")
	}
	// Beside aipm: finished work reopened (a file replaced), a finished task's file
	// removed, another edited in place.
	data, _ := os.ReadFile(s.taskPath(ids[2])) // cancelled
	os.WriteFile(s.taskPath(ids[2])+".tmp", []byte(strings.Replace(string(data), `"cancelled"`, `"todo"`, 1)), 0o644)
	os.Rename(s.taskPath(ids[2])+".tmp", s.taskPath(ids[2]))
	os.Remove(s.taskPath(ids[9]))
	handEdit(t, s, ids[10], func(tk *Task) { tk.AssigneeID = "w9" })
	got = answers(t, o, ids)
	if want := answers(t, fresh(), ids); got != want {
		t.Fatalf("after changes, from the index file:\n%s\nfrom the files:\n%s", got, want)
	}
}

// An index file whose checksum was made to match bytes that are not what aipm writes is
// refused or answered without a panic, whatever byte was changed.
func TestIndexFileColdPartSpoiledWithItsChecksum(t *testing.T) {
	s := newTestStore(t)
	a := mustTask(t, s, NewTask{Title: "A", AssigneeID: "w1"})
	for i := range 3 {
		finish(t, s, mustTask(t, s, NewTask{Title: fmt.Sprint("D", i), ParentID: a.ID, AssigneeID: "w1"}).ID)
	}
	saveIndex(t, s)
	p := s.tasks.indexPath()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	// A live record whose JSON does not decode: the file is read instead.
	end := strings.LastIndex(string(data[:len(data)-1]), "\n")
	spoilt := []byte(strings.Replace(string(data[:end+1]), `"title":"A"`, `"title":123`, 1))
	spoilt = fmt.Appendf(spoilt, "end\t%x\n", crc32.ChecksumIEEE(spoilt))
	os.WriteFile(p, spoilt, 0o644)
	if o := reopen(t, s); !fromIndex(t, o) || !strings.HasPrefix(titles(t, o, TaskFilter{}), "A:backlog D0:done") {
		t.Fatalf("live record spoilt: from the index %v, tasks %s", fromIndex(t, o), titles(t, o, TaskFilter{}))
	}
	start := strings.Index(string(data), "\ncold\t")
	start += strings.IndexByte(string(data[start+1:]), '\n') + 2
	for i := start; i < end; i++ {
		for _, v := range []byte{0, 0xff, data[i] + 1} {
			spoilt := append([]byte(nil), data[:end+1]...)
			spoilt[i] = v
			spoilt = fmt.Appendf(spoilt, "end\t%x\n", crc32.ChecksumIEEE(spoilt))
			os.WriteFile(p, spoilt, 0o644)
			o := reopen(t, s)
			if got := titles(t, o, TaskFilter{}); !strings.HasPrefix(got, "A:backlog") {
				t.Fatalf("byte %d = %#x: tasks %s", i, v, got)
			}
			o.TaskPage(TaskFilter{Status: StatusDone, AssigneeID: "w1"}, "", 2)
			o.TaskStatusCounts()
			o.SubtreeSummary(a.ID)
		}
	}
}

// One process writes the index file at a time: one that finds another writing it leaves
// it to that one, and writes it later if it still must.
func TestIndexFileWrittenByOneProcessAtATime(t *testing.T) {
	s := newTestStore(t)
	for i := range 5 {
		mustTask(t, s, NewTask{Title: fmt.Sprint("t", i)})
	}
	os.Remove(s.tasks.indexPath())
	other := reopen(t, s)
	unlock, ok := other.tasks.lockIndex()
	if !ok {
		t.Fatal("the lock of a fresh store is held")
	}
	o := reopen(t, s)
	saveIndex(t, o)
	if _, err := os.Stat(s.tasks.indexPath()); !os.IsNotExist(err) {
		t.Fatalf("written while another process held the lock: %v", err)
	}
	unlock()
	saveIndex(t, o)
	wantIndexFile(t, s, 5)
}

// An index file far behind a journal grown past what a journal holds (by hand, or a sparse
// file of a gigabyte) is not used: reading that much of the journal would cost more than
// comparing the files, and memory in proportion.
func TestIndexFileBehindAHugeJournal(t *testing.T) {
	s := newTestStore(t)
	mustTask(t, s, NewTask{Title: "a"})
	saveIndex(t, s)
	if err := os.Truncate(s.eng.journalPath(), 1<<30); err != nil {
		t.Fatal(err)
	}
	o := reopen(t, s)
	if got := titles(t, o, TaskFilter{}); got != "a:backlog" {
		t.Fatalf("tasks = %q", got)
	}
	if fromIndex(t, o) {
		t.Error("started from an index file a gigabyte of journal behind")
	}
}

// An index file far behind the journal is written again only once it is older than what
// its entities are worth (indexSavePace), so a team writing without pause does not rebuild
// a large store's file every few hundred writes; one dated in the future is stale.
func TestIndexFreshRule(t *testing.T) {
	for _, c := range []struct {
		lag      int64
		age      time.Duration
		entities int
		want     bool
	}{
		{indexLag - 1, time.Hour, 10, true},
		{indexLag, time.Hour, 100_000, false},
		{indexLag, time.Second, 100_000, true},
		{indexLag, 3 * time.Second, 100_000, false},
		{indexLag, time.Second, 1_000, false},
		{indexLag, -time.Second, 100_000, false},
	} {
		if got := indexFresh(c.lag, c.age, c.entities); got != c.want {
			t.Errorf("indexFresh(lag %d, age %v, %d entities) = %v, want %v", c.lag, c.age, c.entities, got, c.want)
		}
	}
}

// A process that has seen many changes writes an index file that lags far behind the
// journal once the file is older than its pace, and leaves one just written.
func TestIndexFileSavedAtItsPace(t *testing.T) {
	s := newTestStore(t)
	for i := range 5 {
		mustTask(t, s, NewTask{Title: fmt.Sprint("t", i)})
	}
	saveIndex(t, s)
	o := reopen(t, s)
	if got := titles(t, o, TaskFilter{}); !strings.Contains(got, "t4") {
		t.Fatalf("tasks = %q", got)
	}
	h, err := o.tasks.readIndexHeader()
	if err != nil {
		t.Fatal(err)
	}
	saveAt := func(at journalPos) journalPos {
		old := time.Now().Add(-time.Hour)
		if err := os.Chtimes(o.tasks.indexPath(), old, old); err != nil {
			t.Fatal(err)
		}
		o.tasks.mu.Lock()
		o.tasks.since = indexSaveEvery
		o.tasks.maybeSaveLocked(at)
		o.tasks.mu.Unlock()
		h, err := o.tasks.readIndexHeader()
		if err != nil {
			t.Fatal(err)
		}
		return h.journal
	}
	// A process that has just started from the file leaves an hour-old file a little
	// behind alone (its first answers would wait for the save), not one far behind.
	far := journalPos{h.journal.ino, h.journal.off + 2*indexLag}
	if got := saveAt(far); got != h.journal {
		t.Fatalf("a process started a moment ago wrote a file a little behind (header at %v)", got)
	}
	farther := journalPos{h.journal.ino, h.journal.off + 2*indexStartLag}
	if got := saveAt(farther); got != farther {
		t.Fatalf("a process started a moment ago left a file far behind: header at %v, want %v", got, farther)
	}
	// Later, a file a little behind is written too.
	o.tasks.mu.Lock()
	o.tasks.loadedAt = time.Now().Add(-indexStartGrace)
	o.tasks.mu.Unlock()
	later := journalPos{farther.ino, farther.off + 2*indexLag}
	if got := saveAt(later); got != later {
		t.Fatalf("an hour-old file a little behind: header at %v, want it written at %v", got, later)
	}
}

// A task's finished sub-tasks, held in the index file's cold part once it is saved, are
// in its sub-tree and its counts: in the process that saved the file and in one started
// from it.
func TestSubtreeOverTheColdPart(t *testing.T) {
	s := newTestStore(t)
	root := mustTask(t, s, NewTask{Title: "root", Status: StatusTodo})
	var ids []string
	for i := range 6 {
		ids = append(ids, mustTask(t, s, NewTask{Title: fmt.Sprint("sub ", i), Status: StatusTodo, AssigneeID: "w1", ParentID: root.ID}).ID)
	}
	grand := mustTask(t, s, NewTask{Title: "grandchild", Status: StatusTodo, AssigneeID: "w1", ParentID: ids[0]}).ID
	for _, id := range append([]string{grand}, ids[:4]...) {
		for _, to := range []string{StatusInProgress, StatusDone} {
			if _, err := s.SetTaskStatus(human, id, to, ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	saveIndex(t, s)
	check := func(name string, st *Store, done, todo int, want []string) {
		t.Helper()
		sum, err := st.SubtreeSummary(root.ID)
		if err != nil || sum[StatusDone] != done || sum[StatusTodo] != todo || len(sum) != 2 {
			t.Errorf("%s: counts %v, %v; want %d done, %d todo", name, sum, err, done, todo)
		}
		sub, err := st.Subtree(root.ID)
		var got []string
		for _, tk := range sub {
			got = append(got, tk.ID)
		}
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: sub-tree %v, %v; want %v", name, got, err, want)
		}
	}
	all := append(slices.Clone(ids), grand) // breadth first, each level by id
	check("the process that saved the file", s, 5, 2, all)
	if s.tasks.cold == nil || s.tasks.cold.n == 0 {
		t.Fatal("nothing went to the cold part: the test does not test it")
	}
	check("a process started from it", reopen(t, s), 5, 2, all)
	// Two finished sub-tasks change by hand: one removed, one back to todo.
	if err := os.Remove(filepath.Join(s.Root(), DirName, "tasks", ids[1]+".json")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(s.Root(), DirName, "tasks", ids[2]+".json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, bytes.Replace(data, []byte(`"status": "done"`), []byte(`"status": "todo"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	rest := slices.Delete(slices.Clone(all), 1, 2)
	check("after the hand edits", s, 3, 3, rest)
	check("a process started after them", reopen(t, s), 3, 3, rest)
}

// TestColdSectionRoundTrip: what buildCold writes, parseCold reads back record for
// record — id order, identities, keys, and each index's lists — whatever order the
// records come in, with keys shared between records and repeated within one.
func TestColdSectionRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	slot := func(pos int) int { return min(pos, ixDependents) }
	for _, n := range []int{0, 1, 2, 50, 2000} {
		var recs []coldRec
		for i := range n {
			keys := []string{fmt.Sprintf("p%d", rng.IntN(n/3+1)), []string{"", "w1", "w2"}[rng.IntN(3)], []string{StatusDone, StatusCancelled}[rng.IntN(2)]}
			for range rng.IntN(4) {
				keys = append(keys, fmt.Sprintf("d%d", rng.IntN(5))) // a dependency may come twice
			}
			if i%7 == 0 {
				keys[0] = keys[1] // a key filed in two indexes
			}
			recs = append(recs, coldRec{id: fmt.Sprintf("tsk_%06d", rng.IntN(1_000_000)*10+i%10),
				st: Stamp{Ino: rng.Uint64(), Size: rng.Int64(), Mtime: rng.Int64(), Ctime: rng.Int64()}, keys: keys})
		}
		recs = slices.CompactFunc(recs, func(a, b coldRec) bool { return a.id == b.id })
		want := slices.Clone(recs)
		slices.SortFunc(want, cmpRecID)
		want = slices.CompactFunc(want, func(a, b coldRec) bool { return a.id == b.id })
		if len(want) != len(recs) {
			continue // an id drawn twice: not a section aipm writes
		}
		x, err := parseCold(buildCold(recs, 4, slot), 4, 0, true)
		if err != nil {
			t.Fatalf("%d records: %v", n, err)
		}
		if x.n != len(want) {
			t.Fatalf("%d records read back, want %d", x.n, len(want))
		}
		lists := make([]map[string][]string, 4)
		for i := range lists {
			lists[i] = map[string][]string{}
		}
		for i, r := range want {
			if got := x.id(i); got != r.id {
				t.Fatalf("record %d: id %s, want %s", i, got, r.id)
			}
			if got := x.stamp(i); got != r.st {
				t.Fatalf("record %s: identity %v, want %v", r.id, got, r.st)
			}
			if got := x.recKeys(i); !slices.Equal(got, r.keys) {
				t.Fatalf("record %s: keys %q, want %q", r.id, got, r.keys)
			}
			for pos, k := range r.keys {
				l := lists[slot(pos)][k]
				if len(l) == 0 || l[len(l)-1] != r.id {
					lists[slot(pos)][k] = append(l, r.id)
				}
			}
		}
		for idx, m := range lists {
			for k, ids := range m {
				post := x.posting(idx, k)
				var got []string
				for j := range len(post) / 4 {
					got = append(got, x.id(int(u32at(post, j))))
				}
				if !slices.Equal(got, ids) {
					t.Fatalf("%d records, index %d, key %q: %q, want %q", n, idx, k, got, ids)
				}
			}
			if got := x.counts(idx); len(got) != len(m) {
				t.Fatalf("index %d: %d keys with lists, want %d", idx, len(got), len(m))
			}
		}
	}
}

// BenchmarkIndexSave writes the tasks' index file of a store of 100,000 finished tasks,
// all in the file's cold part but 200 held in memory (a team's latest finished work), as
// one process of a team does every few seconds; beside the floor of writing the file's
// bytes alone.
func BenchmarkIndexSave(b *testing.B) {
	s, ids := benchFinishedStore(b, 100_000)
	c := s.tasks
	if err := c.with(func() {}); err != nil { // reads every file and writes the index file
		b.Fatal(err)
	}
	pos := s.eng.pullJournal()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cold == nil || c.cold.n != len(ids) {
		b.Fatalf("cold part: %v", c.cold)
	}
	save := func() {
		for _, id := range ids[:200] {
			c.get(id) // held from now on
		}
		c.rebuilt = true
		c.maybeSaveLocked(pos)
	}
	save()
	data, err := os.ReadFile(c.indexPath())
	if err != nil {
		b.Fatal(err)
	}
	b.Run("floor_write_file", func(b *testing.B) {
		for b.Loop() {
			if err := writeIndexFile(c.indexPath(), data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("save", func(b *testing.B) {
		for b.Loop() {
			save()
		}
	})
}

// benchFinishedStore makes a store of n finished tasks written as files (a tenth of them
// parents of the next nine, one in fifty with a dependency), for the benchmarks of the
// index file's cold part.
func benchFinishedStore(b *testing.B, n int) (*Store, []string) {
	b.Helper()
	s, err := Init(b.TempDir(), InitOptions{Name: "bench", OwnerID: "owner"}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	now := s.Now()
	var ids, parents []string
	for i := range n {
		tk := Task{ID: NewID(PrefixTask, now), Title: fmt.Sprint("task ", i), Status: StatusDone, Priority: "medium",
			AssigneeID: fmt.Sprintf("w%d", i%30), Dependencies: []string{}, Approval: ApprovalApproved, CreatedAt: now, UpdatedAt: now, Version: 3}
		if i%10 == 0 {
			parents = append(parents, tk.ID)
		} else {
			tk.ParentID = parents[len(parents)-1]
		}
		if i%50 == 7 {
			tk.Dependencies = []string{parents[len(parents)-1]}
		}
		data, err := json.Marshal(tk)
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(s.taskPath(tk.ID), data, 0o644); err != nil {
			b.Fatal(err)
		}
		ids = append(ids, tk.ID)
	}
	return s, ids
}

// BenchmarkDonePage reads a page of 20 done tasks, first and from a cursor half-way, in a
// store of 100,000 finished tasks held in the index file's cold part, of which the 2,000
// changed since the file was written are held in memory (a team's latest work); beside
// the floor of a page of unfinished work, which reads no cold part.
func BenchmarkDonePage(b *testing.B) {
	s, ids := benchFinishedStore(b, 100_000)
	if _, err := s.TaskPage(TaskFilter{}, "", 1); err != nil { // reads every file and writes the index file
		b.Fatal(err)
	}
	o, err := Open(s.Root(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	// A server: nothing changes unreported, so a query does not compare files.
	o.Watched()
	// The latest 2,000 are read, and held from now on.
	if _, err := o.TasksByID(ids[len(ids)-2000:]); err != nil {
		b.Fatal(err)
	}
	o.tasks.mu.Lock()
	shadowed := len(o.tasks.shadow)
	o.tasks.mu.Unlock()
	if shadowed != 2000 {
		b.Fatalf("%d records shadowed, want 2000", shadowed)
	}
	page := func(b *testing.B, f TaskFilter, after string, total int) {
		for b.Loop() {
			p, err := o.TaskPage(f, after, 20)
			if err != nil || p.Total != total {
				b.Fatalf("page: total %d, %v; want %d", p.Total, err, total)
			}
		}
	}
	b.Run("floor_unfinished", func(b *testing.B) { page(b, TaskFilter{Unfinished: true}, "", 0) })
	b.Run("first", func(b *testing.B) { page(b, TaskFilter{Status: StatusDone}, "", len(ids)) })
	b.Run("halfway", func(b *testing.B) { page(b, TaskFilter{Status: StatusDone}, ids[len(ids)/2], len(ids)) })
}

// A hand edit in place of a finished task's parent, noticed by a process (its watcher, or
// a later process reading the task), reaches the index file at once: a process that
// starts from it afterwards files the task under its new parent only. Such an edit leaves
// no journal line and keeps the directory's modification time, so nothing else would tell
// the next process.
func TestIndexFileRewrittenAfterAHandEditOfFinishedWork(t *testing.T) {
	for _, how := range []string{"watcher", "read"} {
		t.Run(how, func(t *testing.T) {
			s := newTestStore(t)
			a := mustTask(t, s, NewTask{Title: "A", AssigneeID: "w1"})
			b := mustTask(t, s, NewTask{Title: "B", AssigneeID: "w1"})
			x := mustTask(t, s, NewTask{Title: "X", ParentID: a.ID, AssigneeID: "w1"})
			finish(t, s, x.ID)
			saveIndex(t, s)
			o := reopen(t, s) // holds X in the index file's finished part
			if got := titlesOf(t, o, a.ID); got != "X" {
				t.Fatalf("under A before the edit: %q", got)
			}
			data, err := os.ReadFile(s.taskPath(x.ID))
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(s.taskPath(x.ID), os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(strings.Replace(string(data), a.ID, b.ID, 1))
			f.Close()
			switch how {
			case "watcher":
				o.Changed("tasks/" + x.ID + ".json")
			case "read": // by a process started after the edit, as when none watched
				o = reopen(t, s)
				if tk, err := o.Task(x.ID); err != nil || tk.ParentID != b.ID {
					t.Fatalf("X read: %+v, %v", tk, err)
				}
			}
			// A query compares X with its file (as it reads it); the next one writes the file.
			titlesOf(t, o, a.ID)
			titlesOf(t, o, a.ID)
			n := reopen(t, s)
			if got := titlesOf(t, n, a.ID); got != "" {
				t.Errorf("a process started after the edit files under A: %q", got)
			}
			if got := titlesOf(t, n, b.ID); got != "X" {
				t.Errorf("a process started after the edit files under B: %q, want X", got)
			}
		})
	}
}

// titlesOf lists the titles of a task's sub-tree.
func titlesOf(t *testing.T, s *Store, id string) string {
	t.Helper()
	sub, err := s.Subtree(id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tk := range sub {
		out = append(out, tk.Title)
	}
	return strings.Join(out, " ")
}

// A save writes what the journal named of another process's writes without reading
// their files: unfinished work as "k" records, finished work into the cold part. A
// process that starts from the file reads such a file when first asked for, and
// compares it with the file like the others it holds.
func TestIndexFileSavesWhatTheJournalNamedUnread(t *testing.T) {
	s := newTestStore(t)
	a := mustTask(t, s, NewTask{Title: "A", Status: StatusTodo, AssigneeID: "w2"})
	b := mustTask(t, s, NewTask{Title: "B"})
	o := reopen(t, s)
	titles(t, o, TaskFilter{}) // o holds every task, read

	u := mustTask(t, s, NewTask{Title: "U", Status: StatusTodo, AssigneeID: "w1"})
	d := mustTask(t, s, NewTask{Title: "D", AssigneeID: "w2"})
	finish(t, s, d.ID)
	if _, err := s.SetTaskStatus(human, a.ID, StatusInProgress, ""); err != nil {
		t.Fatal(err)
	}
	held := func(st *Store, id string) *cacheEntry[Task] {
		st.tasks.mu.Lock()
		defer st.tasks.mu.Unlock()
		return st.tasks.entry(id)
	}
	counts := func(st *Store) string {
		n, err := st.TaskStatusCounts()
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("todo %d, in progress %d, done %d", n[StatusTodo], n[StatusInProgress], n[StatusDone])
	}
	if got := counts(o); got != "todo 1, in progress 1, done 1" {
		t.Fatalf("o counts %s", got)
	}
	if e := held(o, u.ID); e == nil || !e.lazy {
		t.Fatalf("U held by o as %+v; want known from the journal only", e)
	}
	o.tasks.mu.Lock()
	o.tasks.rebuilt = true // written at the next query
	o.tasks.mu.Unlock()
	counts(o)
	if e := held(o, u.ID); e == nil || !e.lazy {
		t.Errorf("U held by o after its save as %+v; the save read its file", e)
	}
	data, err := os.ReadFile(o.tasks.indexPath())
	if err != nil {
		t.Fatal(err)
	}
	_, recs, _, err := parseIndex(data, "tasks")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, r := range recs {
		f := strings.Split(r, "\t")
		kinds[f[0]] = f[5]
	}
	if kinds[u.ID] != "k" || kinds[a.ID] != "k" || kinds[b.ID] != "f" || kinds[d.ID] != "" {
		t.Errorf("live records: U %q, A %q, B %q, D %q; want k, k (both written by another process), f (read), and D in the cold part",
			kinds[u.ID], kinds[a.ID], kinds[b.ID], kinds[d.ID])
	}
	wantIndexFile(t, o, 4)

	n := reopen(t, s)
	if got := counts(n); got != "todo 1, in progress 1, done 1" || !fromIndex(t, n) {
		t.Fatalf("a process started from the file: counts %s, from the file %v", got, fromIndex(t, n))
	}
	if e := held(n, u.ID); e == nil || !e.lazy || e.k[tkAssignee] != "w1" {
		t.Errorf("U held from the file as %+v; want its keys, to be read", e)
	}
	if got := titles(t, n, TaskFilter{AssigneeID: "w1", Status: StatusTodo}); got != "U:todo" {
		t.Errorf("w1's todo: %q", got)
	}
	if got := titles(t, n, TaskFilter{}); got != "A:in_progress B:backlog U:todo D:done" {
		t.Errorf("all: %q", got)
	}

	// A hand edit in place since the save: a process without a watcher compares the
	// task with its file as it does every unfinished one.
	path := s.taskPath(u.ID)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(strings.Replace(string(raw), `"U"`, `"U2"`, 1), `"todo"`, `"in_progress"`, 1)
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	e := reopen(t, s)
	if got := titles(t, e, TaskFilter{Status: StatusInProgress}); got != "A:in_progress U2:in_progress" {
		t.Errorf("in progress after the hand edit: %q", got)
	}
}

// A "k" record is only of unfinished work, with its keys whole: anything else is not what
// aipm writes, and the file is not trusted.
func TestIndexKRecordParse(t *testing.T) {
	s := newTestStore(t)
	c := s.tasks
	id := mustTask(t, s, NewTask{Title: "T"}).ID
	for rec, ok := range map[string]bool{
		"T-1\t1\t2\t3\t4\tk\t3\t\tw1\ttodo":       true,
		"T-1\t1\t2\t3\t4\tk\t4\tT-9\t\ttodo\tT-8": true,
		"T-1\t1\t2\t3\t4\tk\t3\t\tw1\tdone":       false, // finished work belongs in the cold part
		"T-1\t1\t2\t3\t4\tk\t3\t\tw1\ttodo\t{}":   false, // a JSON where none goes
		"T-1\t1\t2\t3\t4\tk\t3\t\tw1":             false, // a key short
		"T-1\t1\t2\t3\t4\tk\t2\t\tw1":             false, // fewer than the fixed keys
		"T-1\t1\t2\t3\t4\tk":                      false,
		"T-1\t1\t2\t3\t4\tf\t3\t\tw1\ttodo\t{}":   true,
		"T-1\t1\t2\t3\t4\tf\t3\t\tw1\ttodo":       false, // no JSON
		"T-1\t1\t2\t3\t4\tx":                      true,
		"T-1\t1\t2\t3\t4\tx\tmore":                false,
	} {
		rec = strings.Replace(rec, "T-1", id, 1)
		_, e, got := c.parseRecord(rec)
		if got != ok {
			t.Errorf("parseRecord(%q) = %v, want %v", rec, got, ok)
		}
		if got && strings.Contains(rec, "\tk\t") && (!e.lazy || e.v != nil || e.raw != "") {
			t.Errorf("parseRecord(%q): entry %+v, want one to read when asked for", rec, e)
		}
	}
}

// Pages of finished work come from the index file's posting lists where they lie, the
// records that memory shadows (changed or removed since the file was written) skipped and
// not counted: the same pages and totals as a listing of every task.
func TestTaskPageOverTheColdPartAsTheListing(t *testing.T) {
	for _, shadowed := range []int{3, 40} {
		t.Run(fmt.Sprint(shadowed, " shadowed"), func(t *testing.T) {
			s := newTestStore(t)
			top := mustTask(t, s, NewTask{Title: "top"})
			var gone []*Task
			for i := range 60 {
				n := NewTask{Title: fmt.Sprint("t", i), ParentID: top.ID}
				if i%3 == 0 {
					n.AssigneeID, n.Status = "w1", StatusTodo
				}
				if i%5 == 4 {
					mustTask(t, s, n)
					continue
				}
				gone = append(gone, cancelled(t, s, n))
			}
			saveIndex(t, s)
			o := reopen(t, s)
			if !fromIndex(t, o) {
				t.Fatal("not started from the index file")
			}
			// Change or remove some finished tasks by hand, as a watcher reports it.
			for i, tk := range gone[:shadowed] {
				path := s.taskPath(tk.ID)
				switch i % 3 {
				case 0:
					os.Remove(path)
				default:
					raw, err := os.ReadFile(path)
					if err != nil {
						t.Fatal(err)
					}
					edited := strings.Replace(string(raw), `"cancelled"`, `"todo"`, 1)
					if i%3 == 2 {
						edited = strings.Replace(edited, `"assignee_id": ""`, `"assignee_id": "w1"`, 1)
					}
					if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				o.Changed("tasks/" + tk.ID + ".json")
			}
			for _, f := range []TaskFilter{{}, {ParentID: top.ID}, {Status: StatusCancelled}, {Status: StatusTodo},
				{Status: StatusCancelled, AssigneeID: "w1"}, {AssigneeID: "w1"}, {Unfinished: true}} {
				pagesAsListing(t, o, f, 1, 2, 7, 100)
			}
		})
	}
}
