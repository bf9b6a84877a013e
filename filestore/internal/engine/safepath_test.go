package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestOpenSafeRefusesLinksAndSpecialFiles(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, DirName)
	outside := filepath.Join(root, "outside")
	for _, d := range []string{filepath.Join(dir, "agents", "a"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	victim := filepath.Join(outside, "victim")
	os.WriteFile(victim, []byte("keep"), 0o644)
	link := filepath.Join(dir, "agents", "a", "chat.jsonl")
	os.Symlink(victim, link)
	os.Symlink(outside, filepath.Join(dir, "tasks"))
	fifo := filepath.Join(dir, "events.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no fifo:", err)
	}

	var ue *UnsafePathError
	if err := AppendLine(link, map[string]int{"x": 1}, false); !errors.As(err, &ue) || ue.Path != ".ai-pm/agents/a/chat.jsonl" {
		t.Errorf("append through a linked file: %v", err)
	}
	if _, err := ReadLines(link, 0); !errors.As(err, &ue) {
		t.Errorf("read through a linked file: %v", err)
	}
	if err := WriteJSON(filepath.Join(dir, "tasks", "t.json"), 1, 0o644); !errors.As(err, &ue) || ue.Path != ".ai-pm/tasks" {
		t.Errorf("write into a linked directory: %v", err)
	}
	if err := WriteJSON(link, 1, 0o644); !errors.As(err, &ue) {
		t.Errorf("replace a link: %v", err)
	}
	if _, err := ReadLines(fifo, 0); !errors.As(err, &ue) || ue.Problem != "a named pipe" {
		t.Errorf("read a fifo: %v", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("victim changed: %q", b)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Errorf("files appeared outside: %v", ents)
	}
	// a plain path works, and its missing directories are made
	if err := AppendLine(filepath.Join(dir, "agents", "b", "chat.jsonl"), 1, false); err != nil {
		t.Errorf("plain append: %v", err)
	}
}

func TestReadFileSafeLimit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), DirName)
	os.MkdirAll(dir, 0o755)
	p := filepath.Join(dir, "big.json")
	os.WriteFile(p, make([]byte, 2048), 0o644)
	var te *TooLargeError
	if _, err := ReadFile(p, 1024); !errors.As(err, &te) || te.Size != 2048 {
		t.Errorf("oversized read: %v", err)
	}
	if b, err := ReadFile(p, 4096); err != nil || len(b) != 2048 {
		t.Errorf("read under the limit: %d %v", len(b), err)
	}
}

// The .ai-pm directory a process holds open is used only while its path still leads to
// it: a store moved away and made anew is read and written anew, and one swapped for a
// link is refused, however often the old one was used before.
func TestHeldStoreRootFollowsItsPath(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, DirName)
	file := filepath.Join(dir, "tasks", "t.json")
	if err := WriteJSON(file, "old", 0o644); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if b, err := ReadFile(file, MaxEntityFile); err != nil || !strings.Contains(string(b), "old") {
			t.Fatalf("read before the move: %q, %v", b, err)
		}
	}

	// Moved away and made anew: the new directory is the store now.
	moved := filepath.Join(root, "moved")
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(file, MaxEntityFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("read after the store moved away: %v, want not found", err)
	}
	if err := WriteJSON(file, "new", 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(file); err != nil || !strings.Contains(string(b), "new") {
		t.Errorf("the new store's file: %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(moved, "tasks", "t.json")); err != nil || !strings.Contains(string(b), "old") {
		t.Errorf("the moved store's file was written: %q, %v", b, err)
	}

	// Swapped for a link to the moved one: refused, though that directory was held.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, dir); err != nil {
		t.Fatal(err)
	}
	var ue *UnsafePathError
	if _, err := ReadFile(filepath.Join(moved, "tasks", "t.json"), MaxEntityFile); err != nil {
		t.Fatalf("read of the moved store by its own path: %v", err)
	}
	if _, err := ReadFile(file, MaxEntityFile); !errors.As(err, &ue) || ue.Path != DirName {
		t.Errorf("read through a store swapped for a link: %v", err)
	}
	if err := WriteJSON(file, "through the link", 0o644); !errors.As(err, &ue) {
		t.Errorf("write through a store swapped for a link: %v", err)
	}
}

// A directory below .ai-pm that a process holds open is used only while every directory
// on its path is a real one with the identity it was opened with: swapped for a link to
// the very directory held, at its own level or above, it is refused; made anew, the new
// one is used.
func TestHeldStoreDirFollowsItsPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), DirName)
	file := filepath.Join(dir, "agents", "w1", "chat.jsonl")
	read := func() (string, error) {
		b, err := ReadFile(file, MaxJSONLFile)
		return string(b), err
	}
	if err := WriteJSON(file, "first", 0o644); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if b, err := read(); err != nil || !strings.Contains(b, "first") {
			t.Fatalf("read while held: %q, %v", b, err)
		}
	}
	var ue *UnsafePathError
	swap := func(from, to string) {
		t.Helper()
		if err := os.Rename(from, to); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Base(to), from); err != nil {
			t.Fatal(err)
		}
	}
	// The agent's directory swapped for a link to itself, moved aside.
	swap(filepath.Join(dir, "agents", "w1"), filepath.Join(dir, "agents", "w1-moved"))
	if _, err := read(); !errors.As(err, &ue) || ue.Path != DirName+"/agents/w1" {
		t.Errorf("read through a directory swapped for a link: %v", err)
	}
	if f, err := Open(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644, 0); !errors.As(err, &ue) {
		if f != nil {
			f.Close()
		}
		t.Errorf("append through a directory swapped for a link: %v", err)
	}
	// Put back, then agents/ swapped for a link to itself, moved aside.
	os.Remove(filepath.Join(dir, "agents", "w1"))
	if err := os.Rename(filepath.Join(dir, "agents", "w1-moved"), filepath.Join(dir, "agents", "w1")); err != nil {
		t.Fatal(err)
	}
	if b, err := read(); err != nil || !strings.Contains(b, "first") {
		t.Fatalf("read once put back: %q, %v", b, err)
	}
	swap(filepath.Join(dir, "agents"), filepath.Join(dir, "agents-moved"))
	if _, err := read(); !errors.As(err, &ue) || ue.Path != DirName+"/agents" {
		t.Errorf("read through a parent swapped for a link: %v", err)
	}
	// Made anew: the new directory is read.
	os.Remove(filepath.Join(dir, "agents"))
	if err := WriteJSON(file, "second", 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := read(); err != nil || !strings.Contains(b, "second") {
		t.Errorf("read of the directory made anew: %q, %v", b, err)
	}
}

// A store path is what filepath.Join makes of the store's directory and the elements,
// built in one piece when they are clean already.
func TestStorePathAsJoin(t *testing.T) {
	s := NewDir(filepath.Join(t.TempDir(), DirName))
	for _, elem := range [][]string{
		{"tasks", "tsk_1.json"},
		{JournalPath},
		{"agents", "w1", "chat.jsonl"},
		{},
		{""},
		{"tasks", ""},
		{"tasks/", "x"},
		{"a//b"},
		{"./tasks"},
		{"tasks", "..", "x"},
		{"a/./b"},
		{"/abs"},
		{"a/b/"},
		{".."},
		{"...", ".x", "x."},
	} {
		if got, want := s.Path(elem...), filepath.Join(append([]string{s.dir}, elem...)...); got != want {
			t.Errorf("path(%q) = %q, want %q", elem, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = s.Path("tasks", "tsk_1.json") }); n > 1 {
		t.Errorf("a clean path: %v allocations, want 1", n)
	}
}
