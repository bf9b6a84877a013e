package gitstate

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aipm/aipm/filestore"
	"github.com/aipm/aipm/filestore/merge"
)

// readState reads a file of a clone's state.
func readState(t *testing.T, s *filestore.Store, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(s.Dir(), rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// missingLines counts the records of want that have lacks.
func missingLines(rel, have, want string) int {
	return merge.CountLines(merge.Missing(rel, []byte(have), []byte(want)))
}

// plainClone checks out origin's state branch in a clone of its own, where only git runs.
func plainClone(t *testing.T, a *filestore.Store) string {
	t.Helper()
	origin := mustGit(t, a.Root(), "remote", "get-url", "origin")
	dir := filepath.Join(t.TempDir(), "plain")
	mustGit(t, a.Root(), "clone", "-q", "-b", Branch, origin, dir)
	// A forge's merge knows no merge driver of .gitattributes (*.jsonl merge=union among
	// them): every file is merged as text.
	if err := os.WriteFile(filepath.Join(dir, ".git", "info", "attributes"), []byte("* merge=text\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A pull request merged by a forge with `-X ours`: B's history lines, its message and
// its change of a task's priority lose to A's side of the same hunks. B's next round
// finds the merge is not aipm's and writes back all it dropped; A's round after that has
// nothing left to restore, and both clones end with every record once.
func TestHandMergeRestoresDroppedLinesAndFields(t *testing.T) {
	a, b := twoClones(t)
	ctx := context.Background()
	sa, sb := &Syncer{Store: a, Remote: "origin"}, &Syncer{Store: b, Remote: "origin"}
	if _, _, err := a.AddAgent(owner, filestore.NewAgent{ID: "w1", AIType: "sim"}); err != nil {
		t.Fatal(err)
	}
	tk, err := a.CreateTask(owner, filestore.NewTask{Title: "Shared", Status: filestore.StatusTodo, AssigneeID: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Syncer{sa, sb} {
		if _, err := s.Once(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// aipm's own merge commits are told apart: never checked as a foreign merge.
	if _, err := a.CreateTask(owner, filestore.NewTask{Title: "From A"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CreateTask(owner, filestore.NewTask{Title: "From B"}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Syncer{sa, sb, sa} {
		if _, err := s.Once(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if msg := mustGit(t, b.Dir(), "log", "-1", "--merges", "--format=%B"); !strings.HasSuffix(msg, "\n\n"+aipmMergeTrailer) {
		t.Errorf("aipm's merge commit says %q, want the %s trailer", msg, aipmMergeTrailer)
	}
	if ms, err := foreignMerges(gitCmd{dir: b.Dir()}, "HEAD"); err != nil || len(ms) != 0 {
		t.Errorf("foreignMerges after aipm's merge = %v, %v; want none", ms, err)
	}
	rel := "tasks/" + tk.ID + ".json"
	// A changes the status and writes to w1; B the priority, and writes to w1 too.
	if _, err := a.SetTaskStatus(owner, tk.ID, filestore.StatusInProgress, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := a.SendMessage(owner, filestore.SendRequest{To: "w1", Content: "from A"}); err != nil {
		t.Fatal(err)
	}
	if _, err := sa.Once(ctx); err != nil {
		t.Fatal(err)
	}
	urgent := "urgent"
	if _, _, err := b.EditTask(owner, tk.ID, filestore.TaskEdit{Priority: &urgent}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.SendMessage(owner, filestore.SendRequest{To: "w1", Content: "from B"}); err != nil {
		t.Fatal(err)
	}
	// B commits only, and its commit goes up as a pull request's branch.
	if _, err := (&Syncer{Store: b}).Once(ctx); err != nil {
		t.Fatal(err)
	}
	mustGit(t, b.Dir(), "push", "-q", "origin", "HEAD:refs/heads/pr")
	bEvents, bChat := readState(t, b, "events.jsonl"), readState(t, b, "agents/w1/chat.jsonl")
	// The forge merges the pull request with `-X ours`, and pushes.
	p := plainClone(t, a)
	mustGit(t, p, "merge", "-q", "--no-edit", "-X", "ours", "-m", "Merge pull request #1", "origin/pr")
	mustGit(t, p, "push", "-q", "origin", Branch)
	handEvents := mustGit(t, p, "show", "HEAD:events.jsonl") + "\n"
	handChat := mustGit(t, p, "show", "HEAD:agents/w1/chat.jsonl") + "\n"
	handTask := mustGit(t, p, "show", "HEAD:"+rel)
	lostEvents, lostChat := missingLines("events.jsonl", handEvents, bEvents), missingLines("chat.jsonl", handChat, bChat)
	if lostEvents == 0 || lostChat == 0 || !strings.Contains(handTask, `"priority": "medium"`) {
		t.Fatalf("the hand merge dropped %d history line(s), %d message(s) and the priority: %v; want all three dropped", lostEvents, lostChat, !strings.Contains(handTask, "urgent"))
	}

	r, err := sb.Once(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Pushed || len(r.Restored) != 4 {
		t.Fatalf("B's round = %+v; want four files restored (the history, both copies of the message, the task) and pushed", r)
	}
	for _, want := range []string{"events.jsonl: " + strconv.Itoa(lostEvents) + " line(s) dropped by merge", "agents/w1/chat.jsonl: 1 line(s)", "agents/owner/chat.jsonl: 1 line(s)", rel + ": the change of priority"} {
		if !strings.Contains(strings.Join(r.Restored, "\n"), want) {
			t.Errorf("B's round restored %q, want %q", r.Restored, want)
		}
	}
	ra, err := sa.Once(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ra.Restored) != 0 {
		t.Errorf("A restored %q after B had", ra.Restored)
	}
	for _, s := range []*filestore.Store{a, b} {
		if n := missingLines("events.jsonl", readState(t, s, "events.jsonl"), bEvents); n != 0 {
			t.Errorf("%s lacks %d of B's history lines", s.Root(), n)
		}
		chat := readState(t, s, "agents/w1/chat.jsonl")
		if !strings.Contains(chat, "from A") || strings.Count(chat, "from B") != 1 {
			t.Errorf("%s: w1's mailbox:\n%s", s.Root(), chat)
		}
		got, err := s.Task(tk.ID)
		if err != nil || got.Priority != "urgent" || got.Status != filestore.StatusInProgress {
			t.Errorf("%s: task = %+v, %v; want in_progress and urgent", s.Root(), got, err)
		}
	}
	if ms, err := foreignMerges(gitCmd{dir: a.Dir()}, "HEAD"); err != nil || len(ms) != 1 || ms[0].subject != "Merge pull request #1" {
		t.Errorf("foreignMerges = %+v, %v; want the pull request's merge alone", ms, err)
	}
	// Nothing is left for doctor to name.
	for _, s := range []*filestore.Store{a, b} {
		if losses, err := LostMerges(s, false); err != nil || len(losses) != 0 {
			t.Errorf("LostMerges on %s = %v, %v", s.Root(), losses, err)
		}
	}
}

// A careless force-push rewinds origin's branch by five commits, from the clone that
// made them (its own files rewound too). B, which had merged three of them, keeps them
// and pushes them back; A, which last saw the old head, merges it back: no message is
// lost, and both rounds say what happened.
func TestForcePushRewindLosesNothing(t *testing.T) {
	a, b := twoClones(t)
	ctx := context.Background()
	sa, sb := &Syncer{Store: a, Remote: "origin"}, &Syncer{Store: b, Remote: "origin"}
	if _, _, err := a.AddAgent(owner, filestore.NewAgent{ID: "w1", AIType: "sim"}); err != nil {
		t.Fatal(err)
	}
	if _, err := sa.Once(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		if _, err := a.SendMessage(owner, filestore.SendRequest{To: "w1", Content: "message " + strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
		if r, err := sa.Once(ctx); err != nil || !r.Pushed {
			t.Fatalf("round %d: %+v, %v", i, r, err)
		}
		if i == 3 {
			if _, err := sb.Once(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	mustGit(t, a.Dir(), "reset", "-q", "--hard", "HEAD~5")
	mustGit(t, a.Dir(), "push", "-q", "-f", "origin", Branch)
	if chat, _ := os.ReadFile(filepath.Join(a.Dir(), "agents", "w1", "chat.jsonl")); strings.Contains(string(chat), "message") {
		t.Fatalf("the reset kept the messages:\n%s", chat)
	}

	rb, err := sb.Once(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !rb.Pushed || !strings.Contains(rb.Rewound, "origin's aipm/state was rewound") {
		t.Errorf("B's round = %+v; want the rewind named and B's history pushed", rb)
	}
	ra, err := sa.Once(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !ra.Pushed || !strings.Contains(ra.Rewound, "(2 commit(s) of it gone there)") {
		t.Errorf("A's round = %+v; want the rewind named (2 commits still gone: B pushed back 3) and the old head merged back", ra)
	}
	if _, err := sb.Once(ctx); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*filestore.Store{a, b} {
		chat := readState(t, s, "agents/w1/chat.jsonl")
		for i := 1; i <= 5; i++ {
			if n := strings.Count(chat, "message "+strconv.Itoa(i)); n != 1 {
				t.Errorf("%s: message %d is in w1's mailbox %d times", s.Root(), i, n)
			}
		}
	}
	if ha, hb := mustGit(t, a.Dir(), "rev-parse", "HEAD"), mustGit(t, b.Dir(), "rev-parse", "HEAD"); ha != hb {
		t.Errorf("A at %s, B at %s", ha, hb)
	}
}
