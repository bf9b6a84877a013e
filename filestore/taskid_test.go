package filestore

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestTaskIDsAreShortAndOrdered(t *testing.T) {
	s := newTestStore(t)
	// A task of an older store, with a time-based id, stays valid and apart.
	legacy := "tsk_01jd0000000000000000000001"
	if err := os.WriteFile(s.taskPath(legacy), []byte(`{"id":"`+legacy+`","title":"old","status":"todo","priority":"medium"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	a := mustTask(t, s, NewTask{Title: "a"})
	b := mustTask(t, s, NewTask{Title: "b", ParentID: a.ID})
	batch, _, err := s.CreateTasks(human, a.ID, []BatchItem{{LocalID: "x", NewTask: NewTask{Title: "x"}}, {LocalID: "y", NewTask: NewTask{Title: "y"}}})
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{a.ID, b.ID, batch[0].ID, batch[1].ID}
	for i, want := range []string{"tsk_8001", "tsk_8002", "tsk_8003", "tsk_8004"} {
		if !strings.HasPrefix(ids[i], want) || len(ids[i]) != len(legacy) {
			t.Errorf("id %d = %s, want %s… of %d characters", i, ids[i], want, len(legacy))
		}
		if err := ValidateEntityID(PrefixTask, ids[i]); err != nil {
			t.Errorf("minted id %s is invalid: %v", ids[i], err)
		}
	}
	if !slices.IsSorted(ids) || legacy > ids[0] {
		t.Errorf("ids do not sort in creation order after the older store's: %v", ids)
	}
	set, err := s.TaskIDSet()
	if err != nil {
		t.Fatal(err)
	}
	if set.Short(batch[0].ID) != "tsk_8003" || set.Short(legacy) != "tsk_01jd" {
		t.Errorf("short ids: %s, %s", set.Short(batch[0].ID), set.Short(legacy))
	}
}

// Ten thousand tasks, the last thousand minted on two clones at the same time from the same
// sequence numbers: every short id has at most 7 characters after "tsk_" (5 here: the
// clones' tags differ).
func TestShortTaskIDsAtTenThousand(t *testing.T) {
	var ids []string
	for i := range 9000 {
		ids = append(ids, seqTaskID(seqMin+i, "k3"))
	}
	for i := 8000; i < 9000; i++ {
		ids = append(ids, seqTaskID(seqMin+i, "m7"))
	}
	slices.Sort(ids)
	short := ShortTaskIDs(ids)
	longest := 0
	for _, id := range ids {
		n := len(short[id]) - len("tsk_")
		longest = max(longest, n)
		if n > 7 {
			t.Fatalf("%s is shown as %s", id, short[id])
		}
	}
	if longest != 5 {
		t.Errorf("longest short id has %d characters, want 5", longest)
	}
}

func TestTaskSeqRunsOut(t *testing.T) {
	s := newTestStore(t)
	last := seqTaskID(seqMax, "aa")
	if err := os.WriteFile(s.taskPath(last), []byte(`{"id":"`+last+`","title":"last","status":"todo","priority":"medium"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tk := mustTask(t, s, NewTask{Title: "after"})
	if !strings.HasPrefix(tk.ID, "tsk_z") || tk.ID <= last || ValidateEntityID(PrefixTask, tk.ID) != nil {
		t.Errorf("after the last sequence number: %s", tk.ID)
	}
}

// A task id is minted from what the journal told of tasks/ since the last mint, without
// listing the directory, when nothing else changed it; a file made beside aipm (a
// checkout, a hand copy) in the meantime is still counted.
func TestMintWithoutListingSeesFilesMadeBesideAipm(t *testing.T) {
	s := newTestStore(t)
	other := reopen(t, s) // another process on the same store
	a := mustTask(t, s, NewTask{Title: "a"})
	b := mustTask(t, other, NewTask{Title: "b"})
	c := mustTask(t, s, NewTask{Title: "c"})
	if !strings.HasPrefix(b.ID, "tsk_8002") || !strings.HasPrefix(c.ID, "tsk_8003") {
		t.Fatalf("minted %s, %s, %s: want tsk_8001…, tsk_8002…, tsk_8003…", a.ID, b.ID, c.ID)
	}
	// s listed the directory for a, then learned of b from the journal and of c as it
	// wrote it: it knows the directory without listing it.
	mint := func(st *Store) (next int) {
		t.Helper()
		err := st.locked(func() error {
			var err error
			next, err = st.nextTaskSeq()
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return next
	}
	if next := mint(s); next != taskSeq(c.ID)+1 {
		t.Errorf("next sequence number %d, want %d", next, taskSeq(c.ID)+1)
	}
	s.seq.mu.Lock()
	known := s.seq.ok
	s.seq.mu.Unlock()
	if !known {
		t.Error("after writes through aipm alone, the directory had to be listed")
	}
	pulled := pullTaskBesideAipm(t, s)
	for _, st := range []*Store{s, other} {
		if next := mint(st); next <= taskSeq(pulled) {
			t.Errorf("next sequence number %d, not after the file made beside aipm %s", next, pulled)
		}
	}
	if d := mustTask(t, s, NewTask{Title: "after the pull"}); d.ID <= pulled {
		t.Errorf("created %s, not after the file made beside aipm %s", d.ID, pulled)
	}
}

// A process started from the index file (a server, which loads its caches as it starts)
// mints its first id from what the index holds, without listing tasks/; once a file is
// made beside aipm, it lists the directory. A process that has not loaded its caches
// lists it (a one-shot command loads them first: TestOneShotCommandComparesOnce).
func TestFirstMintFromTheIndexFile(t *testing.T) {
	s := newTestStore(t)
	for i := range 5 {
		mustTask(t, s, NewTask{Title: fmt.Sprint("t", i)})
	}
	titles(t, s, TaskFilter{}) // leaves the index file
	// Without the file the last mint leaves (TestOneShotAddFromSeqFile).
	if err := os.Remove(s.path(seqFile)); err != nil {
		t.Fatal(err)
	}
	cli := reopen(t, s)
	last := mustTask(t, cli, NewTask{Title: "from the command line"})
	if cli.seq.listings != 1 {
		t.Errorf("a process with no cache loaded listed tasks/ %d times, want once", cli.seq.listings)
	}
	o := reopen(t, s)
	o.Warm()
	next := mustTask(t, o, NewTask{Title: "next"})
	if taskSeq(next.ID) != taskSeq(last.ID)+1 {
		t.Errorf("minted %s after %s", next.ID, last.ID)
	}
	if n := o.seq.listings; n != 0 {
		t.Errorf("a process started from the index file listed tasks/ %d times to mint", n)
	}
	pulled := pullTaskBesideAipm(t, s)
	p := reopen(t, s)
	if d := mustTask(t, p, NewTask{Title: "after the pull"}); d.ID <= pulled {
		t.Errorf("created %s, not after the file made beside aipm %s", d.ID, pulled)
	}
}

// pullTaskBesideAipm makes a task file as a pull would: from elsewhere, with a higher
// sequence number, not in the journal, and the directory's time later than the last write
// through aipm (a file made within the same clock tick keeps the directory's time: the
// watcher reports it). It returns the task's id.
func pullTaskBesideAipm(t *testing.T, s *Store) string {
	t.Helper()
	pulled := seqTaskID(seqMin+40, "zz")
	if err := os.WriteFile(s.taskPath(pulled), []byte(`{"id":"`+pulled+`","title":"pulled","status":"todo","priority":"medium"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Second)
	if err := os.Chtimes(s.path("tasks"), later, later); err != nil {
		t.Fatal(err)
	}
	return pulled
}

// A one-shot command (Store.OneShot) compares its caches with the files at its first
// query only; later queries read the journal, so another process's write through aipm
// is seen and a hand edit in place made meanwhile is left to the next command. Its new
// task's id comes from the index file, not from a listing of tasks/.
func TestOneShotCommandComparesOnce(t *testing.T) {
	s := newTestStore(t)
	a := mustTask(t, s, NewTask{Title: "A"})
	for i := range 5 {
		mustTask(t, s, NewTask{Title: fmt.Sprint("t", i)})
	}
	titles(t, s, TaskFilter{}) // leaves the index file
	edit := func(title string) {
		t.Helper()
		raw, err := os.ReadFile(s.taskPath(a.ID))
		if err != nil {
			t.Fatal(err)
		}
		var tk Task
		if err := json.Unmarshal(raw, &tk); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(s.taskPath(a.ID), os.O_WRONLY|os.O_TRUNC, 0) // in place, as an editor may
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(strings.Replace(string(raw), `"title": "`+tk.Title+`"`, `"title": "`+title+`"`, 1))
		f.Close()
	}
	title := func(st *Store) string {
		t.Helper()
		list, err := st.TasksByID([]string{a.ID})
		if err != nil || len(list) != 1 {
			t.Fatalf("TasksByID: %v, %v", list, err)
		}
		return list[0].Title
	}

	edit("before the command")
	cli, plain := reopen(t, s), reopen(t, s)
	cli.OneShot()
	if got := title(cli); got != "before the command" {
		t.Errorf("one-shot, first query: %q, want the edit made before it", got)
	}
	title(plain)
	edit("while it runs")
	if got := title(plain); got != "while it runs" {
		t.Errorf("a process without a watcher, later query: %q, want the edit", got)
	}
	if got := title(cli); got != "before the command" {
		t.Errorf("one-shot, later query: %q; it compared the files again", got)
	}
	b := mustTask(t, s, NewTask{Title: "B"}) // another process, through aipm
	if list, err := cli.TasksByID([]string{b.ID}); err != nil || len(list) != 1 || list[0].Title != "B" {
		t.Errorf("one-shot, a task another process made since: %v, %v", list, err)
	}
	if got := title(reopen(t, s)); got != "while it runs" {
		t.Errorf("the next command: %q, want the edit", got)
	}

	next := reopen(t, s)
	next.OneShot()
	c := mustTask(t, next, NewTask{Title: "C"})
	if next.seq.listings != 0 {
		t.Errorf("a one-shot command listed tasks/ %d times to mint %s", next.seq.listings, c.ID)
	}
	if taskSeq(c.ID) != taskSeq(b.ID)+1 {
		t.Errorf("minted %s after %s", c.ID, b.ID)
	}
}

// Once a listing has read every finished task into memory, each record of the index file
// is shadowed by a held entry: Short still finds each id's neighbours among all the ids,
// a removed task's record passed over, without scanning the file for a live record (which
// made `aipm task list` quadratic in the finished tasks).
func TestShortAfterEveryFinishedTaskIsRead(t *testing.T) {
	s := newTestStore(t)
	var ids []string
	for i := range 40 {
		tk := mustTask(t, s, NewTask{Title: fmt.Sprint("t", i), AssigneeID: "w1"})
		finish(t, s, tk.ID)
		ids = append(ids, tk.ID)
	}
	titles(t, s, TaskFilter{}) // leaves the index file, the finished tasks in its cold part
	gone := ids[20]
	if err := os.Remove(s.taskPath(gone)); err != nil {
		t.Fatal(err)
	}
	ids = slices.Delete(ids, 20, 21)
	cli := reopen(t, s)
	cli.OneShot()
	titles(t, cli, TaskFilter{}) // reads, and holds, every finished task
	set, err := cli.TaskIDSet()
	if err != nil {
		t.Fatal(err)
	}
	want := ShortTaskIDs(ids)
	for _, id := range ids {
		if got := set.Short(id); got != want[id] {
			t.Errorf("Short(%s) = %s, want %s", id, got, want[id])
		}
	}
	if set.Has(gone) {
		t.Errorf("the removed task %s is still in the set", gone)
	}
}

// A one-shot command creating a task takes the next sequence number from what the last
// mint left (seqFile) and the journal lines since: it neither loads the tasks' index nor
// lists tasks/. Another process's writes through aipm in between are counted; a file made
// beside aipm, or a file that does not parse, sends it back to a listing.
func TestOneShotAddFromSeqFile(t *testing.T) {
	s := newTestStore(t)
	for i := range 5 {
		mustTask(t, s, NewTask{Title: fmt.Sprint("t", i), AssigneeID: "w1"})
	}
	add := func(title string) (*Store, *Task) {
		t.Helper()
		cli := reopen(t, s)
		cli.OneShot()
		return cli, mustTask(t, cli, NewTask{Title: title})
	}
	_, a := add("a")
	cli, b := add("b")
	if taskSeq(b.ID) != taskSeq(a.ID)+1 {
		t.Errorf("minted %s after %s", b.ID, a.ID)
	}
	if cli.seq.listings != 0 || cli.tasks.IsLoaded() {
		t.Errorf("a one-shot add listed tasks/ %d times, loaded the index: %v", cli.seq.listings, cli.tasks.IsLoaded())
	}
	// Writes of other processes in between: a status change, a new task.
	other := reopen(t, s)
	if _, err := other.SetTaskStatus(human, a.ID, StatusTodo, ""); err != nil {
		t.Fatal(err)
	}
	c := mustTask(t, other, NewTask{Title: "c"})
	cli, d := add("d")
	if taskSeq(d.ID) != taskSeq(c.ID)+1 || cli.seq.listings != 0 || cli.tasks.IsLoaded() {
		t.Errorf("minted %s after %s, %d listings, index loaded %v", d.ID, c.ID, cli.seq.listings, cli.tasks.IsLoaded())
	}
	// A file made beside aipm: the directory's time is not one the journal accounts for.
	pulled := pullTaskBesideAipm(t, s)
	if _, e := add("e"); e.ID <= pulled {
		t.Errorf("created %s, not after the file made beside aipm %s", e.ID, pulled)
	}
	// A file that does not parse is not used.
	if err := os.WriteFile(s.path(seqFile), []byte("seq1\t99999999"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, f := add("f")
	cli, g := add("g")
	if taskSeq(g.ID) != taskSeq(f.ID)+1 || cli.seq.listings != 0 {
		t.Errorf("minted %s after %s with %d listings", g.ID, f.ID, cli.seq.listings)
	}
}
