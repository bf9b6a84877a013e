package watch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sources are the ways a Watcher may read the kernel's events, by name: the default of
// this system, and fsnotify.
var sources = map[string]func(func(string, ...any)) (source, error){"default": newSource, "fsnotify": newFsnotifySource}

// Both sources of kernel events give the same changes: a write, an atomic write, a file
// in a new directory, a removal, a renamed directory and what is written in it after.
// The default source is the one every other test of the package runs on.
func TestSourcesReportTheSame(t *testing.T) {
	for name, open := range sources {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			write(t, filepath.Join(root, "gone.json"), "{}")
			write(t, filepath.Join(root, "a/sub/x.json"), "{}")
			ch := startWith(t, root, Options{}, open)

			write(t, filepath.Join(root, "w.json"), "{}")
			collect(t, ch, present("w.json"))
			writeAtomic(t, filepath.Join(root, "atomic.json"), "{}")
			if seen := collect(t, ch, present("atomic.json")); count(seen, "atomic.json") != 1 {
				t.Errorf("atomic write: %+v, want the target once and no temp file", seen)
			}
			write(t, filepath.Join(root, "new/dir/n.json"), "{}")
			collect(t, ch, present("new/dir/n.json"))
			if err := os.Remove(filepath.Join(root, "gone.json")); err != nil {
				t.Fatal(err)
			}
			collect(t, ch, func(c Change) bool { return c.Path == "gone.json" && c.Removed })
			if err := os.Rename(filepath.Join(root, "a"), filepath.Join(root, "b")); err != nil {
				t.Fatal(err)
			}
			if seen := collect(t, ch, present("b/sub/x.json")); !contains(seen, Change{Path: "a", Removed: true}) {
				t.Errorf("rename did not report a as removed; saw %+v", seen)
			}
			write(t, filepath.Join(root, "b/sub/y.json"), "{}")
			for _, c := range collect(t, ch, present("b/sub/y.json")) {
				if strings.HasPrefix(c.Path, "a/") {
					t.Errorf("change reported under the old name: %+v", c)
				}
			}
		})
	}
}
