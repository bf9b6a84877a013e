package gitstate

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aipm/aipm/filestore"
)

// gitEnv gives the test's git a known identity and no user or system configuration.
func gitEnv(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	dir := t.TempDir()
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(dir, "gitconfig"))
	t.Setenv("HOME", dir)
	for _, k := range []string{"GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"} {
		t.Setenv(k, "Tester")
	}
	for _, k := range []string{"GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"} {
		t.Setenv(k, "tester@example.com")
	}
}

func mustGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := gitCmd{dir: dir}.run(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// twoClones makes a bare origin, clone a with a new project on the state branch (pushed),
// and clone b made ready from it as `git clone && aipm init` does.
func twoClones(t *testing.T) (a, b *filestore.Store) {
	t.Helper()
	gitEnv(t)
	dir := t.TempDir()
	origin := filepath.Join(dir, "origin.git")
	mustGit(t, dir, "init", "-q", "--bare", origin)
	ra := filepath.Join(dir, "a")
	mustGit(t, dir, "clone", "-q", origin, ra)
	mustGit(t, ra, "commit", "-q", "--allow-empty", "-m", "code")
	a, err := filestore.Init(ra, filestore.InitOptions{Name: "p", OwnerID: "owner"}, filestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := Adopt(ra); err != nil {
		t.Fatal(err)
	}
	if !Attached(ra) || TrackedOnCode(ra) {
		t.Fatalf("after Adopt: attached %v, tracked on code %v", Attached(ra), TrackedOnCode(ra))
	}
	if _, err := (&Syncer{Store: a, Remote: "origin"}).Once(context.Background()); err != nil {
		t.Fatal(err)
	}
	rb := filepath.Join(dir, "b")
	mustGit(t, dir, "clone", "-q", origin, rb)
	ok, err := Checkout(rb)
	if err != nil || !ok {
		t.Fatalf("Checkout = %v, %v", ok, err)
	}
	b, err = filestore.Open(rb, filestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return a, b
}

var owner = filestore.Actor{ID: "owner", Via: filestore.ViaCLI}

func TestOnceHooksAndMerge(t *testing.T) {
	a, b := twoClones(t)
	ctx := context.Background()
	tk, err := a.CreateTask(owner, filestore.NewTask{Title: "From A"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (&Syncer{Store: a, Remote: "origin"}).Once(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CreateTask(owner, filestore.NewTask{Title: "From B"}); err != nil {
		t.Fatal(err)
	}
	var merged []string
	var rounds []*Round
	sb := &Syncer{Store: b, Remote: "origin",
		AfterMerge: func(_ context.Context, changed []string) error {
			merged = append(merged, changed...)
			return nil
		},
		AfterRound: func(_ context.Context, r *Round) error {
			rounds = append(rounds, r)
			return nil
		}}
	r, err := sb.Once(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Committed || !r.Pushed || r.Rejected != 0 {
		t.Errorf("round = %+v, want committed and pushed", r)
	}
	rel := "tasks/" + tk.ID + ".json"
	if !slices.Contains(merged, rel) || !slices.Contains(merged, "events.jsonl") {
		t.Errorf("AfterMerge saw %q, want %s and events.jsonl", merged, rel)
	}
	if len(rounds) != 1 || rounds[0] != r {
		t.Errorf("AfterRound ran %d times", len(rounds))
	}
	if got, err := b.Task(tk.ID); err != nil || got.Title != "From A" {
		t.Errorf("B's store: Task = %+v, %v", got, err)
	}
	// The merge is a commit with both sides as parents, and the working copy is clean.
	parents := mustGit(t, b.Dir(), "log", "-1", "--format=%P")
	if len(strings.Fields(parents)) != 2 {
		t.Errorf("merge commit parents %q", parents)
	}
	if st := mustGit(t, b.Dir(), "status", "--porcelain"); st != "" {
		t.Errorf("working copy not clean after the round:\n%s", st)
	}
	// A fast-forwards: no commit of its own, the branch is B's.
	r, err = (&Syncer{Store: a, Remote: "origin"}).Once(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.Committed || r.Pushed || len(r.Merged) == 0 {
		t.Errorf("A's round = %+v, want a fast-forward", r)
	}
	if ha, hb := mustGit(t, a.Dir(), "rev-parse", "HEAD"), mustGit(t, b.Dir(), "rev-parse", "HEAD"); ha != hb {
		t.Errorf("A at %s, B at %s", ha, hb)
	}
	// Machine-local state is on no commit.
	if files := mustGit(t, a.Dir(), "ls-tree", "-r", "--name-only", "HEAD"); strings.Contains(files, "runtime/") {
		t.Errorf("runtime/ committed:\n%s", files)
	}
}

func TestOnceNotAttached(t *testing.T) {
	gitEnv(t)
	s, err := filestore.Init(t.TempDir(), filestore.InitOptions{Name: "p", OwnerID: "owner"}, filestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = (&Syncer{Store: s}).Once(context.Background())
	if err == nil || !strings.Contains(err.Error(), "aipm migrate") {
		t.Errorf("Once on a plain directory: %v, want a hint to run aipm migrate", err)
	}
}

func TestMerge3(t *testing.T) {
	gitEnv(t)
	g := gitCmd{dir: t.TempDir()}
	obj := func(s string) object { return object{ok: true, typ: "blob", data: []byte(s)} }
	none := object{}
	task := func(title, prio string) object {
		return obj(`{
  "id": "tsk_01jd0000000000000000000000",
  "title": "` + title + `",
  "status": "todo",
  "priority": "` + prio + `",
  "version": 1,
  "created_at": "2026-01-01T00:00:00Z",
  "updated_at": "2026-01-01T00:00:00Z"
}
`)
	}
	line := func(id, at string) string {
		return `{"id":"` + id + `","senderId":"a","content":"x","createdAt":"2026-01-01T00:00:0` + at + `Z"}` + "\n"
	}
	cases := []struct {
		name          string
		path          string
		b, o, t       object
		write, remove bool
		conflict      bool
		has           []string
	}{
		{name: "theirs removed, ours as base", path: "notes.txt", b: obj("x\n"), o: obj("x\n"), t: none, remove: true},
		{name: "theirs removed, ours changed", path: "notes.txt", b: obj("x\n"), o: obj("y\n"), t: none},
		{name: "only theirs changed", path: "notes.txt", b: obj("x\n"), o: obj("x\n"), t: obj("z\n"), write: true, has: []string{"z"}},
		{name: "added by theirs", path: "notes.txt", b: none, o: none, t: obj("z\n"), write: true, has: []string{"z"}},
		{name: "same on both", path: "notes.txt", b: obj("x\n"), o: obj("z\n"), t: obj("z\n")},
		{name: "mailbox on both", path: "agents/a/chat.jsonl", b: obj(line("m1", "1")), o: obj(line("m1", "1") + line("m3", "3")),
			t: obj(line("m1", "1") + line("m2", "2")), write: true, has: []string{`"m2"`, `"m3"`}},
		{name: "task fields on both", path: "tasks/tsk_01jd0000000000000000000000.json", b: task("T", "medium"),
			o: task("T2", "medium"), t: task("T", "high"), write: true, has: []string{`"T2"`, `"high"`}},
		{name: "task title on both", path: "tasks/tsk_01jd0000000000000000000000.json", b: task("T", "medium"),
			o: task("Ours", "medium"), t: task("Theirs", "medium"), write: true, conflict: true, has: []string{"<<<<<<<", "Ours", "Theirs"}},
		{name: "other file on both", path: "notes.txt", b: obj("a\n"), o: obj("b\n"), t: obj("c\n"), write: true, conflict: true,
			has: []string{"<<<<<<< ours", "b", "c", ">>>>>>> theirs"}},
	}
	for _, c := range cases {
		data, write, remove, conflict, err := merge3(g, c.path, c.b, c.o, c.t)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if write != c.write || remove != c.remove || conflict != c.conflict {
			t.Errorf("%s: write %v remove %v conflict %v, want %v %v %v", c.name, write, remove, conflict, c.write, c.remove, c.conflict)
		}
		for _, h := range c.has {
			if !strings.Contains(string(data), h) {
				t.Errorf("%s: result lacks %q:\n%s", c.name, h, data)
			}
		}
	}
}

func TestExcludeOnce(t *testing.T) {
	gitEnv(t)
	dir := t.TempDir()
	mustGit(t, dir, "init", "-q")
	for range 2 {
		if err := exclude(dir); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, ".git", "info", "exclude"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n/.ai-pm/\n"); n != 1 {
		t.Errorf("exclude holds /.ai-pm/ %d times:\n%s", n, data)
	}
}

func TestLoopWakesOnLocalChange(t *testing.T) {
	a, _ := twoClones(t)
	ctx, cancel := context.WithCancel(context.Background())
	wake := make(chan struct{}, 1)
	reports := make(chan *Round, 10)
	done := make(chan struct{})
	go func() {
		defer close(done)
		// An hour between ticks: only the wake can start the second round.
		(&Syncer{Store: a, Remote: "origin"}).Loop(ctx, time.Hour, wake, func(r *Round, err error) {
			if err != nil {
				t.Error(err)
			}
			reports <- r
		})
	}()
	next := func() *Round {
		select {
		case r := <-reports:
			return r
		case <-time.After(30 * time.Second):
			t.Fatal("no round within 30 s")
			return nil
		}
	}
	next() // the first round, at once
	if _, err := a.CreateTask(owner, filestore.NewTask{Title: "Woken"}); err != nil {
		t.Fatal(err)
	}
	wake <- struct{}{}
	if r := next(); !r.Committed || !r.Pushed {
		t.Errorf("round after the wake: %+v, want the change committed and pushed", r)
	}
	cancel()
	<-done
	if r := next(); r == nil || r.Pushed {
		t.Errorf("last round: %+v, want nothing left to push", r)
	}
}

func TestPushRefusedIsNotForced(t *testing.T) {
	a, b := twoClones(t)
	ctx := context.Background()
	if _, err := b.CreateTask(owner, filestore.NewTask{Title: "From B"}); err != nil {
		t.Fatal(err)
	}
	if _, err := (&Syncer{Store: b, Remote: "origin"}).Once(ctx); err != nil {
		t.Fatal(err)
	}
	remote := mustGit(t, b.Dir(), "rev-parse", "origin/"+Branch)
	// A commits without fetching first, as when B's push lands between A's fetch and
	// A's push: git refuses a non-fast-forward, and push says so rather than forcing.
	if _, err := a.CreateTask(owner, filestore.NewTask{Title: "From A"}); err != nil {
		t.Fatal(err)
	}
	if _, err := (gitCmd{dir: a.Dir()}).run("add", "-A", "."); err != nil {
		t.Fatal(err)
	}
	if _, err := commitStaged(gitCmd{dir: a.Dir()}, "", signOpts{}); err != nil {
		t.Fatal(err)
	}
	rejected, err := push(a.Root(), "origin")
	if err != nil || !rejected {
		t.Fatalf("push = %v, %v; want refused", rejected, err)
	}
	if now := mustGit(t, b.Dir(), "ls-remote", "origin", ref); !strings.HasPrefix(now, remote) {
		t.Errorf("origin moved to %s after a refused push, want %s", now, remote)
	}
	// The next round fetches, merges and pushes: both tasks on origin.
	r, err := (&Syncer{Store: a, Remote: "origin"}).Once(ctx)
	if err != nil || !r.Pushed {
		t.Fatalf("round after the refusal: %+v, %v", r, err)
	}
	if !g(t, a.Dir()).ok("merge-base", "--is-ancestor", remote, "HEAD") {
		t.Error("B's commit is not in A's pushed history")
	}
}

func g(t *testing.T, dir string) gitCmd { t.Helper(); return gitCmd{dir: dir} }
