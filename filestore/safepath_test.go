package filestore

import (
	"errors"
	"os"
	"path/filepath"
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
	if err := appendLine(link, map[string]int{"x": 1}, false); !errors.As(err, &ue) || ue.Path != ".ai-pm/agents/a/chat.jsonl" {
		t.Errorf("append through a linked file: %v", err)
	}
	if _, err := readLines(link, 0); !errors.As(err, &ue) {
		t.Errorf("read through a linked file: %v", err)
	}
	if err := writeJSON(filepath.Join(dir, "tasks", "t.json"), 1, 0o644); !errors.As(err, &ue) || ue.Path != ".ai-pm/tasks" {
		t.Errorf("write into a linked directory: %v", err)
	}
	if err := writeJSON(link, 1, 0o644); !errors.As(err, &ue) {
		t.Errorf("replace a link: %v", err)
	}
	if _, err := readLines(fifo, 0); !errors.As(err, &ue) || ue.Problem != "a named pipe" {
		t.Errorf("read a fifo: %v", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("victim changed: %q", b)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Errorf("files appeared outside: %v", ents)
	}
	// a plain path works, and its missing directories are made
	if err := appendLine(filepath.Join(dir, "agents", "b", "chat.jsonl"), 1, false); err != nil {
		t.Errorf("plain append: %v", err)
	}
}

func TestReadFileSafeLimit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), DirName)
	os.MkdirAll(dir, 0o755)
	p := filepath.Join(dir, "big.json")
	os.WriteFile(p, make([]byte, 2048), 0o644)
	var te *TooLargeError
	if _, err := readFileSafe(p, 1024); !errors.As(err, &te) || te.Size != 2048 {
		t.Errorf("oversized read: %v", err)
	}
	if b, err := readFileSafe(p, 4096); err != nil || len(b) != 2048 {
		t.Errorf("read under the limit: %d %v", len(b), err)
	}
}
