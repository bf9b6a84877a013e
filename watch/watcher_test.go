package watch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// arrive bounds how long a change that should arrive may take. It is
// generous so a loaded machine cannot make a test flake.
const arrive = 5 * time.Second

// start runs a Watcher on root until the test ends and returns its batches.
func start(t *testing.T, root string, opts Options) <-chan []Change {
	t.Helper()
	return startWith(t, root, opts, newSource)
}

// startWith is start with the source of kernel events made by open.
func startWith(t *testing.T, root string, opts Options, open func(func(string, ...any)) (source, error)) <-chan []Change {
	t.Helper()
	w, err := newWatcher(root, opts, open)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan []Change, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx, func(cs []Change) {
			select {
			case ch <- cs:
			case <-ctx.Done():
			}
		})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return ch
}

// collect receives batches until one contains a change accepted by until,
// and returns every change seen up to the end of that batch.
func collect(t *testing.T, ch <-chan []Change, until func(Change) bool) []Change {
	t.Helper()
	var seen []Change
	timeout := time.After(arrive)
	for {
		select {
		case batch := <-ch:
			seen = append(seen, batch...)
			for _, c := range batch {
				if until(c) {
					return seen
				}
			}
		case <-timeout:
			t.Fatalf("expected change did not arrive within %v; saw %+v", arrive, seen)
		}
	}
}

func present(path string) func(Change) bool {
	return func(c Change) bool { return c.Path == path && !c.Removed && !c.Rescan }
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeAtomic writes the way the store does: temp file, fsync, rename.
func writeAtomic(t testing.TB, path, data string) {
	t.Helper()
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		t.Fatal(err)
	}
}

func count(cs []Change, path string) int {
	n := 0
	for _, c := range cs {
		if c.Path == path {
			n++
		}
	}
	return n
}

func TestWriteInRoot(t *testing.T) {
	root := t.TempDir()
	ch := start(t, root, Options{})

	write(t, filepath.Join(root, "a.json"), "{}\n")
	collect(t, ch, present("a.json"))

	write(t, filepath.Join(root, "a.json"), "{\"v\":2}\n")
	collect(t, ch, present("a.json"))
}

func TestAtomicWriteReportsTargetOnce(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "state.json"), "{}\n")
	ch := start(t, root, Options{})

	writeAtomic(t, filepath.Join(root, "state.json"), "{\"v\":2}\n")
	// The sentinel is written last. Its deadline is the latest, so once it
	// is delivered, every earlier change has been delivered too.
	write(t, filepath.Join(root, "done"), "")
	seen := collect(t, ch, present("done"))

	// The rename is the target's only event (a CREATE), so exactly one
	// change is expected.
	if got := count(seen, "state.json"); got != 1 {
		t.Errorf("state.json reported %d times, want 1; saw %+v", got, seen)
	}
	for _, c := range seen {
		if strings.HasSuffix(c.Path, ".tmp") {
			t.Errorf("temp file reported: %+v", c)
		}
	}
}

func TestNewNestedDirectory(t *testing.T) {
	root := t.TempDir()
	ch := start(t, root, Options{})

	// MkdirAll and the write race the watcher adding watches on a, a/b and
	// a/b/c. The walk of a new directory must find x.json either way.
	write(t, filepath.Join(root, "a/b/c/x.json"), "{}\n")
	collect(t, ch, present("a/b/c/x.json"))

	// By now a/b/c has its own watch.
	write(t, filepath.Join(root, "a/b/c/y.json"), "{}\n")
	collect(t, ch, present("a/b/c/y.json"))
}

func TestRemove(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "r.json"), "{}\n")
	ch := start(t, root, Options{})

	if err := os.Remove(filepath.Join(root, "r.json")); err != nil {
		t.Fatal(err)
	}
	collect(t, ch, func(c Change) bool { return c.Path == "r.json" && c.Removed })
}

func TestRenamedDirectory(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "a/sub/x.json"), "{}\n")
	ch := start(t, root, Options{})

	if err := os.Rename(filepath.Join(root, "a"), filepath.Join(root, "b")); err != nil {
		t.Fatal(err)
	}
	seen := collect(t, ch, present("b/sub/x.json"))
	if !contains(seen, Change{Path: "a", Removed: true}) {
		t.Errorf("rename did not report a as removed; saw %+v", seen)
	}

	// Writes in the moved directories must carry their new paths.
	write(t, filepath.Join(root, "b/sub/y.json"), "{}\n")
	write(t, filepath.Join(root, "b/z.json"), "{}\n")
	seen = collect(t, ch, present("b/z.json"))
	if !contains(seen, Change{Path: "b/sub/y.json"}) {
		t.Errorf("b/sub/y.json not reported; saw %+v", seen)
	}
	for _, c := range seen {
		if strings.HasPrefix(c.Path, "a/") {
			t.Errorf("change reported under the old name: %+v", c)
		}
	}
}

func contains(cs []Change, want Change) bool {
	for _, c := range cs {
		if c == want {
			return true
		}
	}
	return false
}

func TestIgnoredNames(t *testing.T) {
	root := t.TempDir()
	ch := start(t, root, Options{})

	names := []string{".state.json.123.tmp", "notes.md~", ".#notes.md", ".notes.md.swp", ".notes.md.swx", "4913", "store.lock"}
	for _, name := range names {
		write(t, filepath.Join(root, name), "x")
		write(t, filepath.Join(root, "sub", name), "x")
	}
	write(t, filepath.Join(root, "done"), "")
	seen := collect(t, ch, present("done"))
	for _, c := range seen {
		for _, name := range names {
			if c.Path == name || c.Path == "sub/"+name {
				t.Errorf("ignored name reported: %+v", c)
			}
		}
	}
}

func TestDebounceCoalescesBurst(t *testing.T) {
	root := t.TempDir()
	// A long debounce, so a descheduled writer on a loaded machine does not
	// split the burst.
	ch := start(t, root, Options{Debounce: 50 * time.Millisecond})

	path := filepath.Join(root, "log.jsonl")
	for i := range 200 {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fmt.Fprintf(f, "{\"n\":%d}\n", i); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	write(t, filepath.Join(root, "done"), "")
	seen := collect(t, ch, present("done"))
	if n := count(seen, "log.jsonl"); n < 1 || n > 5 {
		t.Errorf("200 appends gave %d changes, want 1 to 5", n)
	}
}

func TestTreeImmediateDelivery(t *testing.T) {
	root := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan []Change, 1024)
	errc := make(chan error, 1)
	go func() {
		errc <- Tree(ctx, root, Options{Debounce: -1}, func(cs []Change) {
			select {
			case ch <- cs:
			case <-ctx.Done():
			}
		})
	}()
	// Tree gives no signal that watching began, so write until seen.
	deadline := time.After(arrive)
	for i := 0; ; i++ {
		write(t, filepath.Join(root, "a.json"), strconv.Itoa(i))
		select {
		case cs := <-ch:
			if !contains(cs, Change{Path: "a.json"}) {
				t.Fatalf("got %+v, want a.json", cs)
			}
		case <-time.After(10 * time.Millisecond):
			continue
		case <-deadline:
			t.Fatal("a.json not reported")
		}
		break
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if err := Tree(ctx, filepath.Join(root, "missing"), Options{}, nil); err == nil {
		t.Error("Tree on a missing directory: no error")
	}
}

// logs records Options.Logf messages.
type logs struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logs) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, fmt.Sprintf(format, args...))
}

func (l *logs) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.msgs...)
}

// A skipped directory is not reported, whether it existed at the start or
// is made later, nor is anything below it; a sibling with a longer name is.
func TestSkippedDirectories(t *testing.T) {
	for _, poll := range []bool{false, true} {
		t.Run(fmt.Sprintf("poll=%v", poll), func(t *testing.T) {
			root := t.TempDir()
			write(t, filepath.Join(root, "runtime/usage/old.json"), "{}")
			ch := start(t, root, Options{Skip: []string{"runtime/usage", "runtime/tmp"}, ForcePoll: poll, PollInterval: 10 * time.Millisecond})
			write(t, filepath.Join(root, "runtime/usage/a.json"), "{}")
			writeAtomic(t, filepath.Join(root, "runtime/usage/old.json"), "{\"v\":2}")
			write(t, filepath.Join(root, "runtime/tmp/deep/b.json"), "{}")
			write(t, filepath.Join(root, "runtime/usages/c.json"), "{}")
			write(t, filepath.Join(root, "done"), "")
			seen := collect(t, ch, present("done"))
			// Once or more: the walk of the new directory and the file's own
			// events may fall into two batches (Changes are not to be counted).
			if count(seen, "runtime/usages/c.json") == 0 {
				t.Errorf("a directory beside a skipped one was not reported: %+v", seen)
			}
			for _, c := range seen {
				if strings.HasPrefix(c.Path, "runtime/usage/") || c.Path == "runtime/usage" || strings.HasPrefix(c.Path, "runtime/tmp") {
					t.Errorf("skipped directory reported: %+v", c)
				}
			}
		})
	}
}

func TestPollFallback(t *testing.T) {
	root := t.TempDir()
	var log logs
	ch := start(t, root, Options{ForcePoll: true, PollInterval: 10 * time.Millisecond, Logf: log.logf})

	write(t, filepath.Join(root, "a/b/x.json"), "{}\n")
	collect(t, ch, present("a/b/x.json"))

	write(t, filepath.Join(root, "a/b/x.json"), "{\"v\":2}\n")
	collect(t, ch, present("a/b/x.json"))

	// Same size and, on a coarse clock, the same mtime: only the file's
	// identity changes.
	writeAtomic(t, filepath.Join(root, "a/b/x.json"), "{\"v\":3}\n")
	collect(t, ch, present("a/b/x.json"))

	write(t, filepath.Join(root, "skip.tmp"), "x")
	if err := os.Remove(filepath.Join(root, "a/b/x.json")); err != nil {
		t.Fatal(err)
	}
	seen := collect(t, ch, func(c Change) bool { return c.Path == "a/b/x.json" && c.Removed })
	if count(seen, "skip.tmp") != 0 {
		t.Errorf("ignored name reported while polling: %+v", seen)
	}

	msgs := log.get()
	if len(msgs) != 1 || !strings.Contains(msgs[0], "polling") || !strings.Contains(msgs[0], "ForcePoll") {
		t.Errorf("logged %q, want one message about polling and why", msgs)
	}
}

// When the root itself goes away, its inotify watch is gone for good. The
// Watcher falls back to polling, which sees the tree come back.
func TestRootRemovedFallsBackToPolling(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	write(t, filepath.Join(root, "a.json"), "{}\n")
	var log logs
	ch := start(t, root, Options{PollInterval: 10 * time.Millisecond, Logf: log.logf})

	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	collect(t, ch, func(c Change) bool { return c.Rescan })
	write(t, filepath.Join(root, "b.json"), "{}\n")
	collect(t, ch, present("b.json"))

	if msgs := log.get(); len(msgs) != 1 || !strings.Contains(msgs[0], "polling") {
		t.Errorf("logged %q, want one message about polling", msgs)
	}
}

// queueLimit returns the size of the kernel's inotify queue, or skips the
// test if it cannot be overflowed quickly.
func queueLimit(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events")
	if err != nil {
		t.Skip("no inotify queue limit to overflow:", err)
	}
	limit, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if limit > 1<<20 {
		t.Skipf("max_queued_events=%d is too large to overflow quickly", limit)
	}
	return limit
}

// Stalling the consumer overflows the kernel queue. The Watcher must
// recover and tell its consumer to rescan.
func TestOverflowRescans(t *testing.T) {
	limit := queueLimit(t)

	root := t.TempDir()
	w, err := New(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stalled, release := make(chan struct{}), make(chan struct{})
	ch := make(chan []Change, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		first := true
		w.Run(ctx, func(cs []Change) {
			if first {
				first = false
				close(stalled)
				<-release
			}
			select {
			case ch <- cs:
			case <-ctx.Done():
			}
		})
	}()
	defer func() { cancel(); <-done }()

	write(t, filepath.Join(root, "first"), "")
	select {
	case <-stalled:
	case <-time.After(arrive):
		t.Fatal("first change did not arrive")
	}

	// Alternate between two files: inotify merges an event only with an
	// identical previous one, so every write queues an event. The margin
	// covers the events fsnotify already holds in its read buffer.
	var files [2]*os.File
	for i := range files {
		f, err := os.Create(filepath.Join(root, fmt.Sprintf("f%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		files[i] = f
	}
	for i := range limit + 8192 {
		if _, err := files[i%2].Write([]byte{'x'}); err != nil {
			t.Fatal(err)
		}
	}
	close(release)
	collect(t, ch, func(c Change) bool { return c.Rescan })

	// Watching still works after the rescan, new directories included.
	write(t, filepath.Join(root, "after/x.json"), "{}\n")
	collect(t, ch, present("after/x.json"))
}

func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	for _, opts := range []Options{{}, {ForcePoll: true, PollInterval: time.Millisecond, Logf: func(string, ...any) {}}} {
		root := t.TempDir()
		w, err := New(root, opts)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		changes := make(chan []Change, 100)
		done := make(chan struct{})
		go func() {
			defer close(done)
			w.Run(ctx, func(cs []Change) {
				select {
				case changes <- cs:
				default:
				}
			})
		}()
		write(t, filepath.Join(root, "a/x.json"), "{}\n")
		collect(t, changes, present("a/x.json"))
		cancel()
		<-done
	}

	// A New that is never Run is released by Close.
	w, err := New(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	deadline := time.Now().Add(arrive)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("goroutines: %d before, %d after\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestNewErrors(t *testing.T) {
	root := t.TempDir()
	if _, err := New(filepath.Join(root, "missing"), Options{}); err == nil {
		t.Error("New on a missing directory: no error")
	}
	write(t, filepath.Join(root, "file"), "")
	if _, err := New(filepath.Join(root, "file"), Options{}); err == nil {
		t.Error("New on a file: no error")
	}
}

// rel cuts the root off the clean names fsnotify builds and the walks find,
// and agrees with filepath.Rel on them and on what is not under the root.
func TestRel(t *testing.T) {
	for _, tc := range []struct{ root, abs, want string }{
		{"/r/ai-pm", "/r/ai-pm/tasks/t1.json", "tasks/t1.json"},
		{"/r/ai-pm", "/r/ai-pm/a", "a"},
		{"/r/ai-pm", "/r/ai-pm", "."},
		{"/r/ai-pm", "/r/ai-pmx/a", "../ai-pmx/a"},
		{"/", "/a/b", "a/b"},
	} {
		w := &Watcher{root: tc.root}
		if got := w.rel(tc.abs); got != tc.want {
			t.Errorf("root %s: rel(%s) = %q, want %q", tc.root, tc.abs, got, tc.want)
		}
	}
}
