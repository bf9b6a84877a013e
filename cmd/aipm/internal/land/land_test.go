package land

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aipm/aipm/filestore"
)

var owner = filestore.Actor{ID: "owner", Via: filestore.ViaCLI}

// newRepo makes a Git repository with one commit and a store in it with agent w1, whose
// check (the command check, "" for none) this machine approved. It returns the store and
// its queue.
func newRepo(tb testing.TB, check string) (*filestore.Store, *Queue) {
	tb.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		tb.Skip("needs git")
	}
	root := filepath.Join(tb.TempDir(), "repo")
	tb.Setenv("XDG_CONFIG_HOME", filepath.Join(filepath.Dir(root), "config"))
	tb.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	tb.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(filepath.Dir(root), "gitconfig"))
	for _, args := range [][]string{
		{"init", "-q", "-b", "main", root},
		{"-C", root, "config", "user.name", "Test"},
		{"-C", root, "config", "user.email", "test@example.com"},
		{"-C", root, "commit", "-q", "--allow-empty", "-m", "start"},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			tb.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	s, err := filestore.Init(root, filestore.InitOptions{Name: "t", OwnerID: "owner", TargetBranch: "main"}, filestore.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	if _, _, err := s.AddAgent(owner, filestore.NewAgent{ID: "w1", ParentID: "owner", AIType: "sim", MaxParallelTasks: 1000}); err != nil {
		tb.Fatal(err)
	}
	if check != "" {
		if err := s.EditSettings(owner, func(set *filestore.Settings) { set.CheckCommand = check }); err != nil {
			tb.Fatal(err)
		}
		p, err := s.Project()
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := s.ApproveCommands(p.Settings.TrustedCommands(), ""); err != nil {
			tb.Fatal(err)
		}
	}
	q, ok := New(s, nil)
	if !ok {
		tb.Fatal("New: not a repository")
	}
	return s, q
}

// work starts a task for w1 on its own branch, writes file in its worktree and reports it
// done; it returns the task and when it was done.
func work(tb testing.TB, s *filestore.Store, q *Queue, title, file, content string) (*filestore.Task, time.Time) {
	tb.Helper()
	t, err := s.CreateTask(owner, filestore.NewTask{Title: title, Status: filestore.StatusTodo, AssigneeID: "w1"})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := s.SetTaskStatus(owner, t.ID, filestore.StatusInProgress, ""); err != nil {
		tb.Fatal(err)
	}
	t, _ = s.Task(t.ID)
	dir, made, err := q.Workdir(t)
	if err != nil || !made {
		tb.Fatalf("Workdir: %q, %v, %v", dir, made, err)
	}
	if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
	if _, err := s.SetTaskStatus(owner, t.ID, filestore.StatusDone, ""); err != nil {
		tb.Fatal(err)
	}
	return t, time.Now()
}

func gitOut(tb testing.TB, dir string, args ...string) string {
	tb.Helper()
	out, err := git{dir: dir}.run(args...)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// Two tasks from one tip that write the same new file: the first lands as one commit with
// its trailer and leaves no worktree or branch behind; the second conflicts and becomes
// rework whose description is the original's, a blank line, and the conflicting file.
func TestQueueLandsThenReworks(t *testing.T) {
	s, q := newRepo(t, "true")
	a, _ := work(t, s, q, "Write a", "same.txt", "from a\n")
	b, _ := work(t, s, q, "Write b", "same.txt", "from b\n")
	for range 2 {
		if did, _, err := q.Step(nil); err != nil || !did {
			t.Fatalf("Step: %v, %v", did, err)
		}
	}
	if did, _, _ := q.Step(nil); did {
		t.Fatal("a third step did something; the queue should be empty")
	}
	a, _ = s.Task(a.ID)
	if a.Landing.State != filestore.LandLanded || a.Landing.LandedCommit == "" {
		t.Fatalf("first task: landing %+v, want landed", a.Landing)
	}
	if got := gitOut(t, s.Root(), "log", "-1", "--format=%an|%s|%(trailers:key=Aipm-Task,valueonly,separator=)", "main"); got != "w1|Write a|"+a.ID {
		t.Errorf("main's tip: %q", got)
	}
	if _, err := os.Stat(q.Worktree(a.ID)); !os.IsNotExist(err) {
		t.Errorf("the landed task's worktree is still there (%v)", err)
	}
	if gitOut(t, s.Root(), "branch", "--list", Branch(a.ID)) != "" {
		t.Error("the landed task's branch is still there")
	}
	b, _ = s.Task(b.ID)
	if b.Landing.State != filestore.LandConflict || b.Landing.ReworkTaskID == "" || b.Landing.Attempts != 1 {
		t.Fatalf("second task: landing %+v, want a conflict with a rework", b.Landing)
	}
	rw, err := s.Task(b.Landing.ReworkTaskID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rw.Description, b.Description+"\n\nWhat went wrong") || !strings.Contains(rw.Description, "in: same.txt") {
		t.Errorf("rework description %q", rw.Description)
	}
	if rw.ReworkOf != b.ID || rw.AssigneeID != "w1" {
		t.Errorf("rework %+v", rw)
	}
	// The rework lands on the new tip; the original then counts as landed.
	dir, _, err := q.Workdir(rw)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "same.txt")); string(got) != "from a\n" {
		t.Fatalf("the rework's worktree starts from %q, want the target's new tip", got)
	}
	os.WriteFile(filepath.Join(dir, "same.txt"), []byte("from a\nfrom b\n"), 0o644)
	if _, err := s.SetTaskStatus(owner, rw.ID, filestore.StatusDone, ""); err != nil {
		t.Fatal(err)
	}
	if did, _, err := q.Step(nil); err != nil || !did {
		t.Fatalf("Step: %v, %v", did, err)
	}
	if b, _ = s.Task(b.ID); b.Landing.State != filestore.LandLanded || !filestore.DependencyMet(b) {
		t.Errorf("original after its rework landed: %+v", b.Landing)
	}
	if got := gitOut(t, s.Root(), "show", "main:same.txt"); got != "from a\nfrom b" {
		t.Errorf("main:same.txt = %q", got)
	}
	if got := gitOut(t, s.Root(), "log", "--format=%H", "main", "--", ".ai-pm"); got != "" {
		t.Errorf("state entered the code: %s", got)
	}
}

// A failed check's detail keeps the output's tail; its summary is one line ending in the
// output's last line.
func TestCheckFailureDetail(t *testing.T) {
	s, q := newRepo(t, "seq 1 2000; echo 'the last words'; exit 3")
	tk, _ := work(t, s, q, "Anything", "x.txt", "x\n")
	if _, _, err := q.Step(nil); err != nil {
		t.Fatal(err)
	}
	tk, _ = s.Task(tk.ID)
	d := tk.Landing.Detail
	if tk.Landing.State != filestore.LandCheckFailed || !strings.Contains(d, "(exit status 3)") || !strings.HasSuffix(d, "the last words") {
		t.Fatalf("landing %s, detail %q", tk.Landing.State, d)
	}
	if len(d) > checkTail+200 || strings.Contains(d, "\n1\n") {
		t.Errorf("the detail holds more than the output's tail (%d bytes)", len(d))
	}
	if got := Summary(d); strings.Contains(got, "\n") || !strings.HasSuffix(got, ": …the last words") {
		t.Errorf("Summary = %q", got)
	}
	log, err := os.ReadFile(filepath.Join(s.Dir(), "runtime", "landings", tk.ID+".log"))
	if err != nil || !strings.Contains(string(log), "\n1\n2\n") {
		t.Errorf("the whole output is not in the log (%v)", err)
	}
	if got, _ := q.Waiting(); got != 0 {
		t.Errorf("Waiting = %d with the only entry reworked", got)
	}
	needs, _ := q.NeedsYou()
	if len(needs) != 0 {
		t.Errorf("NeedsYou = %d before the attempts are spent", len(needs))
	}
	es, _ := q.Entries()
	if slices.ContainsFunc(es, func(e *filestore.Task) bool { return e.ID == tk.ID }) {
		t.Error("a reworked task is still in the queue")
	}
}
