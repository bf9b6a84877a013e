package watch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultDebounce is the quiet period used when Options.Debounce is zero. A
// trailing-edge debounce adds its whole length to every wake-up. One
// millisecond is enough to merge the CREATE+WRITE of one os.WriteFile, or a
// tight burst of appends, and it keeps the typical wake-up under the 2 ms
// target.
const DefaultDebounce = time.Millisecond

// DefaultPollInterval is the rescan period of the polling fallback when
// Options.PollInterval is zero.
const DefaultPollInterval = 250 * time.Millisecond

// Options tunes a Watcher. The zero value is ready to use.
type Options struct {
	// Debounce is how long a path must stay quiet before its change is
	// delivered. The debounce is per path and fires on the trailing edge.
	// Zero means DefaultDebounce. A negative value delivers every event
	// at once.
	Debounce time.Duration

	// PollInterval is how often the polling fallback rescans the tree.
	// Zero means DefaultPollInterval.
	PollInterval time.Duration

	// ForcePoll polls from the start, as if inotify were unavailable. It is
	// for tests, and for filesystems where inotify sees nothing (network
	// mounts).
	ForcePoll bool

	// Skip names directories, relative to the root and slash-separated (for
	// example "runtime/usage"), whose contents are neither watched nor
	// reported: files that change on every call and that no waiter looks
	// at. Every other process's write there would otherwise wake this one.
	Skip []string

	// Logf reports the one-time switch to polling and unexpected fsnotify
	// errors. If it is nil, each message goes to os.Stderr as one line.
	Logf func(format string, args ...any)
}

// Change is one path under the root that may have changed since it was last
// reported.
type Change struct {
	// Path is relative to the root and slash-separated, for example
	// "agents/bob/chat.jsonl". It is empty only for a Rescan.
	Path string

	// Removed reports that Path did not exist when the change was
	// delivered. A directory moved out of the tree is reported as itself,
	// not file by file, so treat a removed path as a removed subtree.
	Removed bool

	// Rescan reports that events were lost: the kernel queue overflowed,
	// or the Watcher switched to polling. Anything under the root may have
	// changed.
	Rescan bool
}

// Watcher reports changes to the files in a directory tree. Create one with
// New, then call Run once, or call Close if it will never run.
type Watcher struct {
	root string // absolute
	opts Options

	fsw  *fsnotify.Watcher      // nil once polling
	dirs map[string]fs.FileInfo // watched directories (absolute), to drop watches of moved or replaced ones

	files map[string]fs.FileInfo // polling: last state per file, keyed by Change.Path

	pending map[string]time.Time // Change.Path → delivery deadline
	timer   *time.Timer
	armed   bool // timer is set for the earliest deadline in pending
}

// New starts watching root and every directory below it. Events are queued
// from the moment New returns, so a caller may look at the tree right after
// New and not miss a change made after that look. If inotify cannot be used,
// New falls back to polling and reports the reason once through Options.Logf.
func New(root string, opts Options) (*Watcher, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", root, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("watch %s: not a directory", root)
	}
	if opts.Debounce == 0 {
		opts.Debounce = DefaultDebounce
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	w := &Watcher{root: abs, opts: opts, pending: make(map[string]time.Time)}

	if opts.ForcePoll {
		w.fallBack(errors.New("Options.ForcePoll is set"))
		return w, nil
	}
	w.fsw, err = fsnotify.NewWatcher()
	if err == nil {
		w.dirs = make(map[string]fs.FileInfo)
		err = w.watchTree(abs, nil)
	}
	if err != nil {
		w.fallBack(err)
	}
	return w, nil
}

// Tree watches root until ctx is done and calls fn with each batch of
// changes. It is New followed by Run, for callers that need not know when
// watching began.
func Tree(ctx context.Context, root string, opts Options, fn func([]Change)) error {
	w, err := New(root, opts)
	if err != nil {
		return err
	}
	w.Run(ctx, fn)
	return nil
}

// Run delivers changes to fn until ctx is done, then releases the Watcher.
// fn is called from Run's goroutine, one batch at a time, with paths sorted.
// It should return quickly, for example by calling Hub.Notify. While fn
// runs, events queue in the kernel, and if the queue overflows, the next
// batch is a Rescan.
func (w *Watcher) Run(ctx context.Context, fn func([]Change)) {
	defer w.Close()
	if w.fsw != nil {
		err := w.runEvents(ctx, fn)
		if err == nil {
			return
		}
		w.fallBack(err)
		fn([]Change{{Rescan: true}})
	}
	w.runPoll(ctx, fn)
}

// Close releases a Watcher that will not be Run. Run releases its own
// Watcher, so do not call Close while Run is running.
func (w *Watcher) Close() error {
	if w.fsw == nil {
		return nil
	}
	return w.fsw.Close()
}

// runEvents is the inotify loop. It returns nil when ctx is done, or an
// error when inotify can no longer cover the tree and polling must take
// over.
func (w *Watcher) runEvents(ctx context.Context, fn func([]Change)) error {
	w.timer = time.NewTimer(time.Hour)
	w.timer.Stop()
	defer w.timer.Stop()
	for {
		var due <-chan time.Time
		if w.armed {
			due = w.timer.C
		}
		// Both channels are unbuffered and fsnotify blocks on whichever
		// one it is sending to, so an unread error would stall events too.
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return nil
			}
			if err := w.event(ev, fn); err != nil {
				return err
			}
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return nil
			}
			if !errors.Is(err, fsnotify.ErrEventOverflow) {
				w.logf("watch: %s: %v", w.root, err)
				continue
			}
			// The kernel dropped events. Directories may have been created
			// without a watch, and files changed unseen. Pending paths are
			// covered by the Rescan.
			clear(w.pending)
			w.timer.Stop()
			w.armed = false
			if err := w.rewatch(); err != nil {
				return err
			}
			fn([]Change{{Rescan: true}})
		case <-due:
			w.armed = false
			w.flush(fn)
		}
	}
}

// event handles one fsnotify event.
func (w *Watcher) event(ev fsnotify.Event, fn func([]Change)) error {
	// Chmod alone changes no content. inotify also sends it on unlink,
	// before the Remove.
	if ev.Op == fsnotify.Chmod || ignored(filepath.Base(ev.Name)) || w.skipped(ev.Name) {
		return nil
	}
	if ev.Name == w.root {
		if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
			// The root's watch is gone. Polling sees the tree come back.
			return errors.New("the root was removed or renamed")
		}
		return nil
	}
	if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		w.unwatch(ev.Name)
	}
	if ev.Has(fsnotify.Create) {
		if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
			return w.watchTree(ev.Name, fn)
		}
	}
	w.bump(ev.Name, fn)
	return nil
}

// watchTree adds watches for dir and every directory below it. Each watch
// is added before its directory is listed. When fn is not nil, the files
// found are reported: they may have been written before their directory had
// a watch, as in "mkdir -p a/b && write a/b/x", which leaves no event for x.
// When fn is nil, a directory without subdirectories is not listed
// (leafDir): watching costs what the tree's directories cost, not its files.
func (w *Watcher) watchTree(dir string, fn func([]Change)) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			// Vanished or unreadable. Polling could not see it either.
			return nil
		}
		if path != w.root && (ignored(d.Name()) || w.skipped(path)) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !d.IsDir() {
			if fn != nil {
				w.bump(path, fn)
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		if err := w.fsw.Add(path); err != nil {
			if now, serr := os.Lstat(path); serr != nil || !now.IsDir() || errors.Is(err, fs.ErrPermission) {
				return fs.SkipDir
			}
			// Out of watches (ENOSPC) or similar: inotify cannot cover
			// the tree any more.
			return fmt.Errorf("watch %s: %w", path, err)
		}
		w.dirs[path] = fi
		if fn == nil && leafDir(fi) {
			return fs.SkipDir // nothing below to watch, and no file to report
		}
		return nil
	})
}

// rewatch makes the watches match the tree again after lost events. Stale
// watches are dropped first. If a moved directory's watch still existed,
// adding its new path would just return the old watch, which still carries
// the old path.
func (w *Watcher) rewatch() error {
	for dir, old := range w.dirs {
		if fi, err := os.Lstat(dir); err != nil || !os.SameFile(old, fi) {
			w.unwatch(dir)
		}
	}
	return w.watchTree(w.root, nil)
}

// unwatch drops the watches on path and below it. This runs when path is
// removed or renamed. A renamed directory keeps its inotify watch under the
// old name, and a later Add of the new name would reuse that stale watch.
func (w *Watcher) unwatch(path string) {
	if _, ok := w.dirs[path]; !ok {
		return
	}
	prefix := path + string(filepath.Separator)
	for dir := range w.dirs {
		if dir == path || strings.HasPrefix(dir, prefix) {
			// An error only means the kernel already dropped the watch.
			w.fsw.Remove(dir)
			delete(w.dirs, dir)
		}
	}
}

// bump records an event on the absolute path abs. Its change is delivered
// once the path has been quiet for the debounce period.
func (w *Watcher) bump(abs string, fn func([]Change)) {
	rel := w.rel(abs)
	if w.opts.Debounce < 0 {
		fn([]Change{w.change(rel)})
		return
	}
	w.pending[rel] = time.Now().Add(w.opts.Debounce)
	if !w.armed {
		w.timer.Reset(w.opts.Debounce)
		w.armed = true
	}
}

// flush delivers every pending path whose deadline has passed, then sets the
// timer for the earliest deadline that remains.
func (w *Watcher) flush(fn func([]Change)) {
	now := time.Now()
	var batch []Change
	var next time.Time
	for rel, deadline := range w.pending {
		if !deadline.After(now) {
			batch = append(batch, w.change(rel))
			delete(w.pending, rel)
		} else if next.IsZero() || deadline.Before(next) {
			next = deadline
		}
	}
	if !next.IsZero() {
		w.timer.Reset(next.Sub(now))
		w.armed = true
	}
	if len(batch) > 0 {
		slices.SortFunc(batch, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
		fn(batch)
	}
}

// change describes rel as it is now. Removal is decided here, not from the
// event: a vim save renames the file away and then creates it again.
func (w *Watcher) change(rel string) Change {
	_, err := os.Lstat(filepath.Join(w.root, filepath.FromSlash(rel)))
	return Change{Path: rel, Removed: errors.Is(err, fs.ErrNotExist)}
}

// rel turns an absolute path under the root into a Change.Path.
func (w *Watcher) rel(abs string) string {
	rel, err := filepath.Rel(w.root, abs)
	if err != nil {
		// Every name fsnotify reports starts with a path added under the
		// root, so Rel cannot fail. Keep the name rather than dropping it.
		return filepath.ToSlash(abs)
	}
	return filepath.ToSlash(rel)
}

func (w *Watcher) logf(format string, args ...any) {
	if w.opts.Logf != nil {
		w.opts.Logf(format, args...)
		return
	}
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}

// skipped reports whether the absolute path abs is one of Options.Skip or
// under one.
func (w *Watcher) skipped(abs string) bool {
	if len(w.opts.Skip) == 0 {
		return false
	}
	rel := w.rel(abs)
	for _, d := range w.opts.Skip {
		if rel == d || strings.HasPrefix(rel, d+"/") {
			return true
		}
	}
	return false
}

// ignored reports whether a file or directory name is a writer's scratch
// file and not state. A scratch file becomes state only when it is renamed
// to its real name, and that rename is reported.
func ignored(name string) bool {
	return strings.HasSuffix(name, ".tmp") || // atomic writes: .<name>.*.tmp, renamed into place
		strings.HasSuffix(name, "~") || // editor backups
		strings.HasPrefix(name, ".#") || // emacs lock links
		strings.HasSuffix(name, ".swp") || strings.HasSuffix(name, ".swx") || // vim swap files
		name == "4913" || // vim's probe that the directory is writable
		strings.HasSuffix(name, ".lock") // lock files change on every locked write, not on data changes
}
