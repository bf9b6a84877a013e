package watch

import (
	"os"
	"path/filepath"
	"testing"
)

// A directory of files alone is watched without being listed; a write in it, and in a
// directory made in it later, are reported as in any other.
func TestLeafDirectoryWatchedUnlisted(t *testing.T) {
	root := t.TempDir()
	leaf := filepath.Join(root, "tasks")
	parent := filepath.Join(root, "agents")
	for _, d := range []string{leaf, filepath.Join(parent, "w1")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		write(t, filepath.Join(leaf, string(rune('a'+i))+".json"), "{}")
	}
	fi, err := os.Stat(leaf)
	if err != nil {
		t.Fatal(err)
	}
	pfi, err := os.Stat(parent)
	if err != nil {
		t.Fatal(err)
	}
	if !leafDir(fi) {
		t.Skip("this file system's directory link counts do not tell subdirectories")
	}
	if leafDir(pfi) {
		t.Fatal("a directory with a subdirectory taken for a leaf")
	}
	w, err := New(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := w.dirs[leaf]; !ok {
		t.Fatalf("the leaf directory is not watched: %v", w.dirs)
	}
	w.Close()

	ch := start(t, root, Options{})
	writeAtomic(t, filepath.Join(leaf, "x.json"), "{}")
	collect(t, ch, present("tasks/x.json"))
	sub := filepath.Join(leaf, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(sub, "y.json"), "{}")
	collect(t, ch, present("tasks/sub/y.json"))
}
