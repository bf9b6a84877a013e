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

// DefaultDebounce is the wait used when Options.Debounce is zero. The
// debounce adds its whole length to a wake-up after a quiet spell. One
// millisecond is enough to merge the CREATE+WRITE of one os.WriteFile, or a
// tight burst of appends, and it keeps the typical wake-up under the 2 ms
// target.
const DefaultDebounce = time.Millisecond

// DefaultPollInterval is the rescan period of the polling fallback when
// Options.PollInterval is zero.
const DefaultPollInterval = 250 * time.Millisecond

// Options tunes a Watcher. The zero value is ready to use.
type Options struct {
	// Debounce is how long the Watcher waits, after reading a change while
	// it was idle, for more changes to deliver in the same batch. A batch
	// after a hold-off (see Spacing) goes out as soon as the events queued
	// meanwhile are read. Zero means DefaultDebounce. A negative value
	// delivers what was read at once.
	Debounce time.Duration

	// Spacing is the least time between two batches under a stream of
	// changes. After a quiet spell, a few batches in a row (spacingBurst)
	// each go out a debounce after their first change; from then on the
	// Watcher delivers one batch per Spacing and does not even read the
	// kernel's events in between, so a stream of other processes' writes
	// costs this process one wake-up per Spacing, not one per write. Zero
	// means DefaultSpacing. A negative value turns spacing off. Polling is
	// spaced by PollInterval instead.
	Spacing time.Duration

	// StreamSpacing is the spacing once a stream is sustained: when
	// streamAfter hold-offs in a row each gathered changes. It lasts until a
	// hold-off gathers nothing, and then Spacing applies again. Zero means
	// DefaultStreamSpacing; a value under Spacing means Spacing.
	StreamSpacing time.Duration

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

	src  source                 // nil once polling
	dirs map[string]fs.FileInfo // watched directories (absolute), to drop watches of moved or replaced ones

	files map[string]fs.FileInfo // polling: last state per file, keyed by Change.Path

	pending map[string]bool // Change.Paths read since the last batch, and whether each is gone
	rescan  bool            // events were lost since the last batch
	space   spacer
	streak  int       // hold-offs in a row that gathered changes
	due     time.Time // when armed: the end of the hold-off if holding, else the next batch
	armed   bool
	holding bool // no event is read until due
}

// New starts watching root and every directory below it. Events are queued
// from the moment New returns, so a caller may look at the tree right after
// New and not miss a change made after that look. If inotify cannot be used,
// New falls back to polling and reports the reason once through Options.Logf.
func New(root string, opts Options) (*Watcher, error) {
	return newWatcher(root, opts, newSource)
}

// newWatcher is New with the source of kernel events made by open.
func newWatcher(root string, opts Options, open func(func(string, ...any)) (source, error)) (*Watcher, error) {
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
	if opts.Spacing == 0 {
		opts.Spacing = DefaultSpacing
	}
	if opts.StreamSpacing == 0 {
		opts.StreamSpacing = DefaultStreamSpacing
	}
	opts.StreamSpacing = max(opts.StreamSpacing, opts.Spacing)
	w := &Watcher{root: abs, opts: opts, pending: make(map[string]bool), space: spacer{every: opts.Spacing}}

	if opts.ForcePoll {
		w.fallBack(errors.New("Options.ForcePoll is set"))
		return w, nil
	}
	w.src, err = open(w.logf)
	if err == nil {
		w.dirs = make(map[string]fs.FileInfo)
		err = w.watchTree(abs, false)
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
// runs, and while the Watcher holds off between batches (Options.Spacing),
// events queue in the kernel, and if the queue overflows, the next batch is
// a Rescan.
func (w *Watcher) Run(ctx context.Context, fn func([]Change)) {
	defer w.Close()
	if w.src != nil {
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
	if w.src == nil {
		return nil
	}
	src := w.src
	w.src = nil
	return src.release()
}

// runEvents is the inotify loop. It returns nil when ctx is done, or an
// error when inotify can no longer cover the tree and polling must take
// over.
//
// While it holds off between batches, it does not read events: the kernel
// queues them (merging repeats), and on Linux nothing in the process even
// waits on them (source_linux.go). When the hold-off ends, what queued is
// read at once and the batch goes out.
func (w *Watcher) runEvents(ctx context.Context, fn func([]Change)) error {
	stop := context.AfterFunc(ctx, w.src.stop)
	defer stop()
	var hold *time.Timer
	defer func() {
		if hold != nil {
			hold.Stop()
		}
	}()
	for {
		if ctx.Err() != nil {
			return nil
		}
		if w.holding {
			if d := time.Until(w.due); d > 0 {
				if hold == nil {
					hold = time.NewTimer(d)
				} else {
					hold.Reset(d)
				}
				select {
				case <-ctx.Done():
					return nil
				case <-hold.C:
				}
			}
			w.holding, w.armed = false, false
			if err := w.take(w.src.wait(0)); err != nil {
				return ignoreStop(err)
			}
			w.gathered(len(w.pending) > 0 || w.rescan)
			// The hold-off gathered the changes; a debounce on top would only read
			// more of the stream one wake-up at a time.
			w.schedule(fn, 0)
			continue
		}
		d := time.Duration(-1)
		if w.armed {
			d = max(time.Until(w.due), 0)
		}
		if err := w.take(w.src.wait(d)); err != nil {
			return ignoreStop(err)
		}
		if w.armed && !time.Now().Before(w.due) {
			w.armed = false
			w.flush(fn)
			continue
		}
		w.schedule(fn, w.opts.Debounce)
	}
}

// ignoreStop is nil for a source stopped by the end of Run's context.
func ignoreStop(err error) error {
	if errors.Is(err, errStopped) {
		return nil
	}
	return err
}

// take handles what a wait of the source returned.
func (w *Watcher) take(evs []event, overflow bool, err error) error {
	if err != nil {
		return err
	}
	for _, ev := range evs {
		if err := w.event(ev); err != nil {
			return err
		}
	}
	if overflow {
		// The kernel dropped events. Directories may have been created without a
		// watch, and files changed unseen. Pending paths are covered by the Rescan.
		clear(w.pending)
		w.rescan = true
		return w.rewatch()
	}
	return nil
}

// event handles one kernel event.
func (w *Watcher) event(ev event) error {
	// Chmod alone changes no content. inotify also sends it on unlink,
	// before the Remove.
	rel := w.rel(ev.Name)
	if ev.Op == fsnotify.Chmod || ignored(filepath.Base(ev.Name)) || w.skippedRel(rel) {
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
	if ev.Has(fsnotify.Create) && !ev.file {
		if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
			return w.watchTree(ev.Name, true)
		}
	}
	// Whether the path is gone is the last event's word: events come in the
	// order they happened (the kernel merges only repeats of the last one),
	// so a vim save, which renames the file away and creates it again, ends
	// in a Create. A lost event is a Rescan.
	w.pending[rel] = ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)
	return nil
}

// watchTree adds watches for dir and every directory below it. Each watch
// is added before its directory is listed. When report is set, the files
// found are reported: they may have been written before their directory had
// a watch, as in "mkdir -p a/b && write a/b/x", which leaves no event for x.
// Otherwise a directory without subdirectories is not listed (leafDir):
// watching costs what the tree's directories cost, not its files.
func (w *Watcher) watchTree(dir string, report bool) error {
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
			if report {
				w.pending[w.rel(path)] = false
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		if err := w.src.add(path); err != nil {
			if now, serr := os.Lstat(path); serr != nil || !now.IsDir() || errors.Is(err, fs.ErrPermission) {
				return fs.SkipDir
			}
			// Out of watches (ENOSPC) or similar: inotify cannot cover
			// the tree any more.
			return fmt.Errorf("watch %s: %w", path, err)
		}
		w.dirs[path] = fi
		if !report && leafDir(fi) {
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
	return w.watchTree(w.root, false)
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
			w.src.remove(dir)
			delete(w.dirs, dir)
		}
	}
}

// gathered records whether a hold-off gathered changes, and sets the spacing:
// StreamSpacing once streamAfter hold-offs in a row did, Spacing again after
// one that did not.
func (w *Watcher) gathered(any bool) {
	if !any {
		w.streak = 0
		w.space.respace(w.opts.Spacing, time.Now())
		return
	}
	w.streak++
	if w.streak >= streamAfter {
		w.space.respace(w.opts.StreamSpacing, time.Now())
	}
}

// schedule sets the timer for the next batch, if anything is pending and no
// timer is set: debounce after now, and not before the spacing allows. With
// nothing to wait for, it delivers at once.
func (w *Watcher) schedule(fn func([]Change), debounce time.Duration) {
	if w.armed || w.holding || (len(w.pending) == 0 && !w.rescan) {
		return
	}
	now := time.Now()
	at := w.space.next(now)
	if debounce > 0 && now.Add(debounce).After(at) {
		at = now.Add(debounce)
	}
	if !at.After(now) {
		w.flush(fn)
		return
	}
	w.due, w.armed = at, true
}

// flush delivers everything pending as one batch, then holds off reading
// events until the spacing lets the next batch go out.
func (w *Watcher) flush(fn func([]Change)) {
	var batch []Change
	if w.rescan {
		batch = []Change{{Rescan: true}}
	} else {
		batch = make([]Change, 0, len(w.pending))
		for rel, gone := range w.pending {
			batch = append(batch, Change{Path: rel, Removed: gone})
		}
		slices.SortFunc(batch, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
	}
	clear(w.pending)
	w.rescan = false
	if len(batch) == 0 {
		return
	}
	w.space.took(time.Now())
	fn(batch)

	now := time.Now()
	if until := w.space.next(now); until.After(now) {
		w.due, w.armed, w.holding = until, true, true
	}
}

// rel turns an absolute path under the root into a Change.Path. It runs for
// every event, so the usual case, a name fsnotify built from a watched
// directory (clean, found by walking from the root) and an entry name, is
// cut, not cleaned.
func (w *Watcher) rel(abs string) string {
	if len(abs) > len(w.root)+1 && abs[len(w.root)] == filepath.Separator && strings.HasPrefix(abs, w.root) {
		return filepath.ToSlash(abs[len(w.root)+1:])
	}
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
	return len(w.opts.Skip) > 0 && w.skippedRel(w.rel(abs))
}

// skippedRel is skipped for a Change.Path.
func (w *Watcher) skippedRel(rel string) bool {
	for _, d := range w.opts.Skip {
		if strings.HasPrefix(rel, d) && (len(rel) == len(d) || rel[len(d)] == '/') {
			return true
		}
	}
	return false
}

// ignored reports whether a file or directory name is a writer's scratch
// file and not state. A scratch file becomes state only when it is renamed
// to its real name, and that rename is reported. It takes the name as the
// kernel's bytes too: a team's writers make thousands of scratch files a
// second, and their events are dropped before a path is built for them.
func ignored[S string | []byte](name S) bool {
	for _, suf := range scratchSuffixes {
		if len(name) >= len(suf) && string(name[len(name)-len(suf):]) == suf {
			return true
		}
	}
	return len(name) >= 2 && string(name[:2]) == ".#" || // emacs lock links
		string(name) == "4913" // vim's probe that the directory is writable
}

// scratchSuffixes end the names of scratch files.
var scratchSuffixes = [...]string{
	".tmp",         // atomic writes: .<name>.*.tmp, renamed into place
	"~",            // editor backups
	".swp", ".swx", // vim swap files
	".lock", // lock files change on every locked write, not on data changes
}
