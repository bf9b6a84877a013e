package watch

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// fallBack switches the Watcher to polling for good and says why. A Watcher
// falls back at most once, so the message appears once.
func (w *Watcher) fallBack(reason error) {
	if w.src != nil {
		w.Close()
		w.dirs = nil
	}
	clear(w.pending)
	w.logf("watch: %s: polling every %v instead of using inotify: %v", w.root, w.opts.PollInterval, reason)
	// The first snapshot is the baseline. Only later differences are
	// reported.
	w.files = w.scan()
}

// runPoll rescans the tree every PollInterval until ctx is done.
func (w *Watcher) runPoll(ctx context.Context, fn func([]Change)) {
	t := time.NewTicker(w.opts.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		files := w.scan()
		var batch []Change
		for rel, fi := range files {
			if old, ok := w.files[rel]; !ok || modified(old, fi) {
				batch = append(batch, Change{Path: rel})
			}
		}
		for rel := range w.files {
			if _, ok := files[rel]; !ok {
				batch = append(batch, Change{Path: rel, Removed: true})
			}
		}
		w.files = files
		if len(batch) > 0 {
			slices.SortFunc(batch, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
			fn(batch)
		}
	}
}

// scan lists every file under the root that is not ignored. A missing root
// is an empty tree: its files are reported removed, and reported again when
// it comes back.
func (w *Watcher) scan() map[string]fs.FileInfo {
	files := make(map[string]fs.FileInfo)
	filepath.WalkDir(w.root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == w.root {
			return nil // vanished or unreadable: absent until a later scan sees it
		}
		if ignored(d.Name()) || w.skipped(path) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			files[w.rel(path)] = fi
		}
		return nil
	})
	return files
}

// modified reports whether a file differs between two scans. Checking the
// identity catches a rename over the file that keeps the size and lands in
// the same mtime tick, which is how atomic writes replace files.
func modified(old, cur fs.FileInfo) bool {
	return old.Size() != cur.Size() || !old.ModTime().Equal(cur.ModTime()) || !os.SameFile(old, cur)
}
