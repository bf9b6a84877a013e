package gitstate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aipm/aipm/filestore"
)

// longLineIn finds the first line over the limit in a blob, read as a stream, with its
// full length.
func TestOverLongLine(t *testing.T) {
	gitEnv(t)
	dir := t.TempDir()
	mustGit(t, dir, "init", "-q")
	limit := filestore.MaxLine()
	long := strings.Repeat("a", limit+1)
	for _, c := range []struct {
		data    string
		n, size int
	}{
		{"", 0, 0},
		{"a\nb\n", 0, 0},
		{strings.Repeat("a", limit) + "\n", 0, 0},
		{"a\n" + long + "\nb\n", 2, limit + 1},
		{"a\nb\n" + long, 3, limit + 1}, // a torn last line counts too
	} {
		g := gitCmd{dir: dir, stdin: []byte(c.data)}
		id, err := g.run("hash-object", "-w", "--stdin")
		if err != nil {
			t.Fatal(err)
		}
		n, size, err := gitCmd{dir: dir}.longLineIn(id)
		if err != nil || n != c.n || size != c.size {
			t.Errorf("longLineIn(%d bytes) = %d, %d, %v; want %d, %d", len(c.data), n, size, err, c.n, c.size)
		}
	}
}

// A round takes in at most MaxRoundFiles of another clone's changed paths and leaves the
// rest for the next rounds, which take it: nothing of theirs is dropped, and this clone's
// own work is pushed once all of theirs is in.
func TestRoundFileCountBound(t *testing.T) {
	a, b := twoClones(t)
	ctx := context.Background()
	theirs := addTasks(t, a, 5, "From A")
	if _, err := (&Syncer{Store: a, Remote: "origin"}).Once(ctx); err != nil {
		t.Fatal(err)
	}
	mine, err := b.CreateTask(owner, filestore.NewTask{Title: "From B"})
	if err != nil {
		t.Fatal(err)
	}
	defer func(n int) { MaxRoundFiles = n }(MaxRoundFiles)
	MaxRoundFiles = 3
	sb := &Syncer{Store: b, Remote: "origin"}
	r, err := sb.Once(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Merged) > 3 || r.Left == 0 || r.Pushed {
		t.Fatalf("first round: merged %q, left %d, pushed %v; want at most 3 merged, some left, no push", r.Merged, r.Left, r.Pushed)
	}
	rounds := 1
	for r.Left > 0 && rounds < 10 {
		if r, err = sb.Once(ctx); err != nil {
			t.Fatal(err)
		}
		if len(r.Merged) > 3 {
			t.Errorf("round %d merged %d paths, over the bound of 3", rounds+1, len(r.Merged))
		}
		rounds++
	}
	if !r.Pushed || r.Left > 0 {
		t.Fatalf("after %d rounds: %+v; want everything taken and pushed", rounds, r)
	}
	for _, id := range theirs {
		if _, err := b.Task(id); err != nil {
			t.Errorf("task %s of the other clone never taken in: %v", id, err)
		}
	}
	if files := mustGit(t, b.Dir(), "ls-tree", "-r", "--name-only", "origin/"+Branch); !strings.Contains(files, mine.ID) {
		t.Errorf("the remote lacks this clone's task %s:\n%s", mine.ID, files)
	}
	if _, err := (&Syncer{Store: a, Remote: "origin"}).Once(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Task(mine.ID); err != nil {
		t.Errorf("the other clone lacks this clone's task: %v", err)
	}
}

// Paths a round refuses after reading them count against its bounds, but do not stall
// the rounds that follow: those refuse the same versions unread, take the rest, and the
// last pushes. With a round of 3 files and 4 task files that do not decode ahead of the
// sound ones, the rounds get through them all (a round that read them again would take
// the same 3 each time, and never push).
func TestRefusedPathsDoNotStallTheRounds(t *testing.T) {
	a, b := twoClones(t)
	ctx := context.Background()
	bad := func(i int) {
		p := filepath.Join(a.Dir(), "tasks", fmt.Sprintf("tsk_0000bad%018d.json", i))
		if err := os.WriteFile(p, []byte("not a task\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 4 {
		bad(i)
	}
	theirs := addTasks(t, a, 2, "From A")
	if _, err := (&Syncer{Store: a, Remote: "origin"}).Once(ctx); err != nil {
		t.Fatal(err)
	}
	mine, err := b.CreateTask(owner, filestore.NewTask{Title: "From B"})
	if err != nil {
		t.Fatal(err)
	}
	defer func(n int) { MaxRoundFiles = n }(MaxRoundFiles)
	MaxRoundFiles = 3
	sb := &Syncer{Store: b, Remote: "origin"}
	var rounds []*Round
	for len(rounds) < 5 {
		r, err := sb.Once(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rounds = append(rounds, r)
		if r.Left == 0 {
			break
		}
	}
	last := rounds[len(rounds)-1]
	if last.Left > 0 || !last.Pushed {
		for i, r := range rounds {
			t.Logf("round %d: merged %d, left %d, refused %q, pushed %v", i+1, len(r.Merged), r.Left, r.Refused, r.Pushed)
		}
		t.Fatalf("after %d rounds: left %d, pushed %v; want all taken and pushed", len(rounds), last.Left, last.Pushed)
	}
	if !slices.ContainsFunc(last.Refused, func(l string) bool {
		return strings.Contains(l, "4 path(s) refused by the earlier rounds of this take-in (named there): not read again")
	}) {
		t.Errorf("the last round refused %q; want the 4 refused before, unread", last.Refused)
	}
	for _, id := range theirs {
		if _, err := b.Task(id); err != nil {
			t.Errorf("task %s of the other clone never taken in: %v", id, err)
		}
	}
	files := mustGit(t, b.Dir(), "ls-tree", "-r", "--name-only", "origin/"+Branch)
	if !strings.Contains(files, mine.ID) || strings.Contains(files, "tsk_0000bad") {
		t.Errorf("the remote: %s\nwant this clone's task %s, and none of the files it refused", files, mine.ID)
	}
	forgotten := func(when string) {
		t.Helper()
		if p := refusedFile(gitCmd{dir: b.Dir()}, "origin"); p == "" {
			t.Error("no git directory for the remembered refusals")
		} else if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s: the refusals are still remembered: %v", when, err)
		}
	}
	forgotten("after the take-in ended")
	// A round that takes everything in refuses what it reads, and remembers none of it.
	MaxRoundFiles = 20000
	bad(4)
	if _, err := (&Syncer{Store: a, Remote: "origin"}).Once(ctx); err != nil {
		t.Fatal(err)
	}
	if r, err := sb.Once(ctx); err != nil || r.Left > 0 || len(r.Refused) != 1 {
		t.Fatalf("a round of one bad file: %+v, %v; want it refused and nothing left", r, err)
	}
	forgotten("after a round that merged theirs")
}

// Another clone's changes may not bring this store over MaxUnfinished unfinished tasks:
// new task files over it are refused unread, a cancelled task reopened over it is
// refused, the refusals are named in one line, and this clone's own work is pushed by the
// same round, without what it refused.
func TestUnfinishedWorkFromAnotherCloneIsBounded(t *testing.T) {
	a, b := twoClones(t)
	ctx := context.Background()
	shared, err := a.CreateTask(owner, filestore.NewTask{Title: "Shared"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.SetTaskStatus(owner, shared.ID, filestore.StatusCancelled, "not needed"); err != nil {
		t.Fatal(err)
	}
	if _, err := (&Syncer{Store: a, Remote: "origin"}).Once(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := (&Syncer{Store: b, Remote: "origin"}).Once(ctx); err != nil {
		t.Fatal(err)
	}
	defer func(n int) { MaxUnfinished = n }(MaxUnfinished)
	MaxUnfinished = 4
	mine, err := b.CreateTask(owner, filestore.NewTask{Title: "From B"})
	if err != nil {
		t.Fatal(err)
	}
	theirs := addTasks(t, a, 6, "From A")
	// The cancelled task reopened by hand on A.
	p := filepath.Join(a.Dir(), "tasks", shared.ID+".json")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(data), `"status": "cancelled"`, `"status": "todo"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := (&Syncer{Store: a, Remote: "origin"}).Once(ctx); err != nil {
		t.Fatal(err)
	}

	r, err := (&Syncer{Store: b, Remote: "origin"}).Once(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Pushed || r.Left > 0 {
		t.Fatalf("round: %+v; want this clone's work pushed", r)
	}
	if n, err := b.UnfinishedCount(filestore.KindTask); err != nil || n != 4 {
		t.Errorf("B holds %d unfinished tasks (%v), want the bound of 4", n, err)
	}
	var took []string
	for _, id := range theirs {
		if _, err := b.Task(id); err == nil {
			took = append(took, id)
		}
	}
	if len(took) != 3 {
		t.Errorf("B took %d of A's 6 new tasks, want 3 (its own 1 and these make 4)", len(took))
	}
	if got, err := b.Task(shared.ID); err != nil || got.Status != filestore.StatusCancelled {
		t.Errorf("the reopened task on B: %+v, %v; want it still cancelled", got, err)
	}
	if len(r.Refused) != 1 || !strings.Contains(r.Refused[0], "4 task file(s) that would bring this machine over the 4 unfinished tasks") {
		t.Errorf("refused: %q; want one line for the 4 task files (3 new, 1 reopened)", r.Refused)
	}
	files := mustGit(t, b.Dir(), "ls-tree", "-r", "--name-only", "origin/"+Branch)
	if !strings.Contains(files, mine.ID) {
		t.Errorf("the remote lacks this clone's task %s", mine.ID)
	}
	for _, id := range theirs {
		if !slices.Contains(took, id) && strings.Contains(files, id) {
			t.Errorf("the remote still holds task %s, which B refused", id)
		}
	}
	// As the refusal says: A, which made them, drops them when it takes in B's merge,
	// and the branch's history keeps them.
	if _, err := (&Syncer{Store: a, Remote: "origin"}).Once(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range theirs {
		if slices.Contains(took, id) {
			continue
		}
		if _, err := a.Task(id); err == nil {
			t.Errorf("A still holds task %s, which B refused", id)
		}
		if mustGit(t, a.Dir(), "log", "--full-history", "--format=%H", "--", "tasks/"+id+".json") == "" {
			t.Errorf("the history of A's branch has no commit of task %s", id)
		}
	}
}

// The store lock is not held while another clone's files are read and merged: a file this
// clone changes meanwhile is merged again against what it holds when the batch is
// written, and neither change is lost.
func TestLocalWriteDuringTheMergeIsKept(t *testing.T) {
	a, b := twoClones(t)
	ctx := context.Background()
	tk, err := a.CreateTask(owner, filestore.NewTask{Title: "Shared"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (&Syncer{Store: a, Remote: "origin"}).Once(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := (&Syncer{Store: b, Remote: "origin"}).Once(ctx); err != nil {
		t.Fatal(err)
	}
	high, title := "high", "Renamed on B while the round merged"
	if _, _, err := a.EditTask(owner, tk.ID, filestore.TaskEdit{Priority: &high}); err != nil {
		t.Fatal(err)
	}
	if _, err := (&Syncer{Store: a, Remote: "origin"}).Once(ctx); err != nil {
		t.Fatal(err)
	}
	wrote := false
	beforeBatchWrite = func() {
		if wrote {
			return
		}
		wrote = true
		if _, _, err := b.EditTask(owner, tk.ID, filestore.TaskEdit{Title: &title}); err != nil {
			t.Error(err)
		}
	}
	defer func() { beforeBatchWrite = nil }()
	if _, err := (&Syncer{Store: b, Remote: "origin"}).Once(ctx); err != nil {
		t.Fatal(err)
	}
	if !wrote {
		t.Fatal("the round wrote no batch")
	}
	got, err := b.Task(tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Title != title || got.Priority != high {
		t.Errorf("task after the round: title %q, priority %q; want %q and %q (both sides' changes)", got.Title, got.Priority, title, high)
	}
	// What B wrote during its round leaves with its next one.
	for _, s := range []*filestore.Store{b, a} {
		if _, err := (&Syncer{Store: s, Remote: "origin"}).Once(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := a.Task(tk.ID); err != nil || got.Title != title {
		t.Errorf("the other clone has %+v, %v; want the title changed on B", got, err)
	}
}

// A mailbox over the size a merge holds is merged as a stream: both sides' messages end up
// once each on both clones, and a message this clone sends during the round is kept.
func TestLargeMailboxMergesAsAStream(t *testing.T) {
	defer func(n, m int64) { jsonlInMemory, stageOutside = n, m }(jsonlInMemory, stageOutside)
	jsonlInMemory, stageOutside = 2<<10, 2<<10
	a, b := twoClones(t)
	ctx := context.Background()
	if _, _, err := a.AddAgent(owner, filestore.NewAgent{ID: "w1", ParentID: "owner", AIType: "manual"}); err != nil {
		t.Fatal(err)
	}
	send := func(s *filestore.Store, text string) {
		t.Helper()
		if _, err := s.SendMessage(owner, filestore.SendRequest{To: "w1", Content: text + strings.Repeat(" padding", 10)}); err != nil {
			t.Fatal(err)
		}
	}
	send(a, "first")
	for _, s := range []*filestore.Store{a, b} {
		if _, err := (&Syncer{Store: s, Remote: "origin"}).Once(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 30 {
		send(a, fmt.Sprintf("from A %d", i))
		send(b, fmt.Sprintf("from B %d", i))
	}
	if _, err := (&Syncer{Store: a, Remote: "origin"}).Once(ctx); err != nil {
		t.Fatal(err)
	}
	streamed := false
	beforeBatchWrite = func() {
		if !streamed {
			streamed = true
			send(b, "during the round")
		}
	}
	defer func() { beforeBatchWrite = nil }()
	r, err := (&Syncer{Store: b, Remote: "origin"}).Once(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !streamed || !r.Pushed {
		t.Fatalf("round %+v: streamed %v; want a streamed merge, pushed", r, streamed)
	}
	beforeBatchWrite = nil
	if _, err := (&Syncer{Store: b, Remote: "origin"}).Once(ctx); err != nil { // what was sent during the round
		t.Fatal(err)
	}
	if _, err := (&Syncer{Store: a, Remote: "origin"}).Once(ctx); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*filestore.Store{a, b} {
		data := readState(t, s, "agents/w1/chat.jsonl")
		for _, want := range []string{"first", "from A 0 ", "from A 29 ", "from B 0 ", "from B 29 ", "during the round"} {
			if n := strings.Count(data, `"`+want); n != 1 {
				t.Errorf("%s: %q is there %d times, want once", s.Root(), want, n)
			}
		}
		if n := strings.Count(data, "\n"); n != 62 {
			t.Errorf("%s: %d lines, want 62", s.Root(), n)
		}
	}
	if pushed := mustGit(t, a.Dir(), "show", "origin/"+Branch+":agents/w1/chat.jsonl"); pushed+"\n" != readState(t, a, "agents/w1/chat.jsonl") {
		t.Errorf("the remote's mailbox is not A's:\n%s", pushed)
	}
}

// TestLargeLogIsStagedAsTheLockFoundIt: a log over stageOutside is not hashed under the
// store lock; it is staged after, as it stood under the lock, though lines were appended
// since; and once staged, an unchanged log is not staged again by the next round.
func TestLargeLogIsStagedAsTheLockFoundIt(t *testing.T) {
	defer func(n int64) { stageOutside = n }(stageOutside)
	stageOutside = 2 << 10
	a, _ := twoClones(t)
	g := gitCmd{dir: a.Dir()}
	if _, _, err := a.AddAgent(owner, filestore.NewAgent{ID: "w1", ParentID: "owner", AIType: "manual"}); err != nil {
		t.Fatal(err)
	}
	send := func(text string) {
		t.Helper()
		if _, err := a.SendMessage(owner, filestore.SendRequest{To: "w1", Content: text + strings.Repeat(" padding", 10)}); err != nil {
			t.Fatal(err)
		}
	}
	// The mailbox, small, is committed; then it grows past stageOutside. (A log Git does
	// not know yet is staged under the lock: telling it would walk the store.)
	send("first")
	if _, err := (&Syncer{Store: a, Remote: "origin"}).Once(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		send(fmt.Sprintf("before %d", i))
	}
	const box = "agents/w1/chat.jsonl"
	var held heldLogs
	var atLock string
	err := a.Exclusive(func(*filestore.Files) error {
		var err error
		held, err = stageLocked(g)
		atLock = readState(t, a, box)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(held, func(h heldLog) bool { return h.rel == box }) {
		t.Fatalf("held %v, want the mailbox", held)
	}
	if staged := mustGit(t, a.Dir(), "diff", "--cached", "--name-only"); strings.Contains(staged, box) {
		t.Fatalf("staged under the lock: %q; want not the mailbox", staged)
	}
	send("after the lock")
	if err := held.stage(g, a.TempFile); err != nil {
		t.Fatal(err)
	}
	if got := mustGit(t, a.Dir(), "show", ":"+box) + "\n"; got != atLock {
		t.Errorf("staged mailbox of %d bytes, want the %d the lock found", len(got), len(atLock))
	}
	if ok, err := commitStaged(g, "", signOpts{}); err != nil || !ok {
		t.Fatalf("commitStaged = %v, %v", ok, err)
	}
	// The next staging takes the line appended since, and after it, with nothing new, no
	// log is held again: the index knows the file as it is.
	for round, wantHeld := range []int{len(held), 0} {
		if err := a.Exclusive(func(*filestore.Files) error {
			var err error
			held, err = stageLocked(g)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if len(held) != wantHeld {
			t.Fatalf("staging %d held %d log(s), want %d", round+2, len(held), wantHeld)
		}
		if err := held.stage(g, a.TempFile); err != nil {
			t.Fatal(err)
		}
		if _, err := commitStaged(g, "", signOpts{}); err != nil {
			t.Fatal(err)
		}
	}
	if got := mustGit(t, a.Dir(), "show", "HEAD:"+box) + "\n"; got != readState(t, a, box) || !strings.Contains(got, "after the lock") {
		t.Errorf("committed mailbox is not the file (%d bytes, file %d)", len(got), len(readState(t, a, box)))
	}
}

// A log from another clone is taken only while it leaves room below the store's limit for
// this clone's own lines; one over that is refused and named, and the round goes on.
func TestLogNearTheLimitIsRefused(t *testing.T) {
	defer func(n int64) { jsonlTakeLimit = n }(jsonlTakeLimit)
	a, b := twoClones(t)
	ctx := context.Background()
	if _, _, err := a.AddAgent(owner, filestore.NewAgent{ID: "w1", ParentID: "owner", AIType: "manual"}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*filestore.Store{a, b} {
		if _, err := (&Syncer{Store: s, Remote: "origin"}).Once(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 {
		if _, err := a.SendMessage(owner, filestore.SendRequest{To: "w1", Content: fmt.Sprintf("message %d %s", i, strings.Repeat("x", 100))}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := (&Syncer{Store: a, Remote: "origin"}).Once(ctx); err != nil {
		t.Fatal(err)
	}
	jsonlTakeLimit = 2 << 10
	mine, err := b.CreateTask(owner, filestore.NewTask{Title: "From B"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := (&Syncer{Store: b, Remote: "origin"}).Once(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range r.Refused {
		if strings.HasPrefix(l, `"agents/w1/chat.jsonl": `) && strings.Contains(l, "over the 2048 a log from another clone may have (its limit less 16 MiB left for this clone's own lines): not read") {
			found = true
		}
	}
	if !found || !r.Pushed {
		t.Errorf("round %+v: want w1's mailbox refused by its size and the round pushed", r)
	}
	if data, _ := os.ReadFile(filepath.Join(b.Dir(), "agents", "w1", "chat.jsonl")); strings.Contains(string(data), "message 19") {
		t.Error("the mailbox over the bound was taken")
	}
	if files := mustGit(t, b.Dir(), "ls-tree", "-r", "--name-only", "origin/"+Branch); !strings.Contains(files, mine.ID) {
		t.Errorf("the remote lacks this clone's task %s", mine.ID)
	}
}

// addTasks adds n tasks titled title to s, and returns their ids.
func addTasks(t *testing.T, s *filestore.Store, n int, title string) []string {
	t.Helper()
	var ids []string
	for range n {
		tk, err := s.CreateTask(owner, filestore.NewTask{Title: title})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tk.ID)
	}
	return ids
}
