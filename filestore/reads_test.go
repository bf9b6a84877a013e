package filestore

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// clone copies s's committed files (not runtime/) to a new root, as another machine's
// clone holds them after a sync, and opens it.
func cloneStore(t *testing.T, s *Store) *Store {
	t.Helper()
	root := t.TempDir()
	err := filepath.WalkDir(s.Dir(), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(s.Dir(), p)
		if rel == "runtime" || strings.HasPrefix(rel, "runtime"+string(filepath.Separator)) {
			return filepath.SkipDir
		}
		dst := filepath.Join(root, DirName, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	o, err := Open(root, Options{Now: s.now})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func unreadContents(t *testing.T, s *Store, agent string) string {
	t.Helper()
	msgs, _, err := s.Unread(agent)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range msgs {
		out = append(out, m.Content)
	}
	return strings.Join(out, ",")
}

// TestReadStateTravelsWithTheAgent: what an agent read on one machine is read on the
// machine that takes it over, whose cursor starts empty; and marks made elsewhere after
// this machine's cursor count too, once they arrive.
func TestReadStateTravelsWithTheAgent(t *testing.T) {
	s := newTestStore(t)
	for _, c := range []string{"one", "two"} {
		if _, err := s.SendMessage(human, SendRequest{To: "w1", Content: c}); err != nil {
			t.Fatal(err)
		}
	}
	msgs, next, err := s.Unread("w1")
	if err != nil || len(msgs) != 2 {
		t.Fatalf("unread: %v, %v", msgs, err)
	}
	if err := s.MarkRead("w1", next); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SendMessage(human, SendRequest{To: "w1", Content: "three"}); err != nil {
		t.Fatal(err)
	}

	// Machine B takes w1 over: it has no cursor, but the agent's read log came along.
	b := cloneStore(t, s)
	if got := unreadContents(t, b, "w1"); got != "three" {
		t.Fatalf("unread on the machine that took it over: %q, want three", got)
	}
	if n, err := b.UnreadCount("w1"); err != nil || n != 1 {
		t.Fatalf("count on B: %d, %v", n, err)
	}
	// A reads "three" too; B's copy gets A's new marks (a merge appends them): B's
	// cursor, written before, is rebuilt.
	_, next, _ = s.Unread("w1")
	if err := s.MarkRead("w1", next); err != nil {
		t.Fatal(err)
	}
	_, bnext, _ := b.Unread("w1")
	if err := b.MarkRead("w1", bnext-1); err != nil { // B's cursor is written, short of "three"
		t.Fatal(err)
	}
	data, err := os.ReadFile(s.readLogOf("w1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b.readLogOf("w1"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := unreadContents(t, reopen(t, b), "w1"); got != "" {
		t.Fatalf("unread on B after A's marks arrived: %q, want none", got)
	}
	if got := unreadContents(t, b, "w1"); got != "" {
		t.Fatalf("unread on B (same process) after A's marks arrived: %q, want none", got)
	}
	if StatePath("agents/w1/reads.jsonl") != nil {
		t.Errorf("the read log is not a file a sync takes in: %v", StatePath("agents/w1/reads.jsonl"))
	}
}
