package engine

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func newStoreDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), DirName)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Two processes making a key at once agree on one, and neither sees half a file.
func TestCreateOnceAgrees(t *testing.T) {
	path := filepath.Join(t.TempDir(), "key")
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = CreateOnce(path, bytes.Repeat([]byte{byte('a' + i)}, 32), 0o600)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil || len(data) != 32 || !bytes.Equal(data, bytes.Repeat(data[:1], 32)) {
		t.Fatalf("key = %q, %v; want 32 bytes of one writer", data, err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".key*"))
	if len(left) != 0 {
		t.Errorf("temp files left: %q", left)
	}
}

// Under a store, a listing, a removal and a rename do not go through a link.
func TestStoreOpsRefuseLinks(t *testing.T) {
	dir := newStoreDir(t)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "victim"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "tasks")); err != nil {
		t.Fatal(err)
	}
	var ue *UnsafePathError
	if _, err := ReadDir(filepath.Join(dir, "tasks")); !errors.As(err, &ue) {
		t.Errorf("ReadDir through a link: %v, want an UnsafePathError", err)
	}
	if _, err := ReadDirNames(filepath.Join(dir, "tasks")); !errors.As(err, &ue) {
		t.Errorf("ReadDirNames through a link: %v, want an UnsafePathError", err)
	}
	if err := Remove(filepath.Join(dir, "tasks", "victim")); !errors.As(err, &ue) {
		t.Errorf("Remove through a link: %v, want an UnsafePathError", err)
	}
	if err := Rename(filepath.Join(dir, "tasks", "victim"), filepath.Join(dir, "moved")); err == nil {
		t.Error("Rename through a link succeeded")
	}
	if _, err := os.Stat(filepath.Join(outside, "victim")); err != nil {
		t.Errorf("the file outside the store was touched: %v", err)
	}
}

func TestStoreOps(t *testing.T) {
	dir := newStoreDir(t)
	sub := filepath.Join(dir, "runtime", "spawns")
	if err := MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"c", "a", "b"} {
		if err := WriteCache(filepath.Join(sub, n), []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := ReadDir(sub)
	if err != nil || len(entries) != 3 || entries[0].Name() != "a" || entries[2].Name() != "c" {
		t.Fatalf("ReadDir = %v, %v; want a, b, c", entries, err)
	}
	if err := Rename(filepath.Join(sub, "a"), filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	if err := Remove(filepath.Join(dir, "a")); err != nil || Exists(filepath.Join(dir, "a")) {
		t.Fatalf("Remove: %v", err)
	}
	if _, err := ReadDir(filepath.Join(dir, "none")); !errors.Is(err, os.ErrNotExist) || !Missing(filepath.Join(dir, "none")) {
		t.Errorf("a missing directory: %v", err)
	}
	p := filepath.Join(sub, "index")
	werr := errors.New("cut short")
	if err := WriteStreamed(p, 0o600, func(w io.Writer) error { io.WriteString(w, "half"); return werr }); err != werr {
		t.Fatalf("WriteStreamed = %v", err)
	}
	if Exists(p) {
		t.Fatal("a write that failed left its file")
	}
	if err := ReplaceQuick(p, []byte("whole\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(p); string(data) != "whole\n" {
		t.Fatalf("content %q", data)
	}
	left, _ := filepath.Glob(filepath.Join(sub, ".*tmp"))
	if len(left) != 0 {
		t.Errorf("temp files left: %q", left)
	}
}

// A machine's directory is made for this user alone, and one left open to others is
// narrowed.
func TestPrivateDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "aipm", "repos", "x")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := PrivateDir(dir); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("mode %v, want 0700", fi.Mode().Perm())
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(t.TempDir(), link); err != nil {
		t.Fatal(err)
	}
	var ue *UnsafePathError
	if err := PrivateDir(link); !errors.As(err, &ue) {
		t.Errorf("PrivateDir of a link to a directory: %v, want an UnsafePathError", err)
	}
}
