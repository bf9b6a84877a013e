package engine

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// LstatStamp gives the identity os.Lstat does, tells regular files from the rest, and on
// Linux allocates no FileInfo: every process of a team stats the file of each write the
// others make.
func TestLstatStampAsLstat(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f.json")
	if err := os.WriteFile(file, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path    string
		regular bool
	}{{file, true}, {dir, false}, {link, false}} {
		fi, err := os.Lstat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		st, regular, err := LstatStamp(c.path)
		if err != nil || st != StampOf(fi) || regular != c.regular {
			t.Errorf("LstatStamp(%s) = %+v, %v, %v; want %+v, %v", c.path, st, regular, err, StampOf(fi), c.regular)
		}
	}
	if _, _, err := LstatStamp(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Errorf("a missing file: %v, want one that is not there", err)
	}
	if runtime.GOOS == "linux" {
		if n := testing.AllocsPerRun(100, func() { LstatStamp(file) }); n > 1 {
			t.Errorf("LstatStamp: %v allocations, want at most the path's", n)
		}
	}
}
