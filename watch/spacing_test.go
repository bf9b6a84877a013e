package watch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

func TestSpacer(t *testing.T) {
	const every = 10 * time.Millisecond
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	s := spacer{every: every}

	// After a quiet spell, spacingBurst batches may go out at once.
	for i := range spacingBurst {
		if got := s.next(t0); !got.Equal(t0) {
			t.Fatalf("batch %d of a burst: next = %v, want now", i+1, got.Sub(t0))
		}
		s.took(t0)
	}
	// Then one per spacing.
	if got := s.next(t0); !got.Equal(at(every)) {
		t.Fatalf("after a burst: next = %v, want %v", got.Sub(t0), every)
	}
	s.took(at(every))
	if got := s.next(at(every)); !got.Equal(at(2 * every)) {
		t.Fatalf("in a stream: next = %v, want %v", got.Sub(t0), 2*every)
	}
	s.took(at(2 * every))

	// A quiet spell of two spacings allows two batches at once, not more.
	now := at(2*every + 2*every)
	for i := range 2 {
		if got := s.next(now); !got.Equal(now) {
			t.Fatalf("batch %d after two quiet spacings: next = +%v, want now", i+1, got.Sub(now))
		}
		s.took(now)
	}
	if got := s.next(now); !got.Equal(now.Add(every)) {
		t.Fatalf("third batch after two quiet spacings: next = +%v, want +%v", got.Sub(now), every)
	}

	// However long the quiet spell, the burst stays spacingBurst.
	now = at(time.Hour)
	for range spacingBurst {
		s.took(now)
	}
	if got := s.next(now); !got.After(now) {
		t.Fatalf("after a long quiet spell and %d batches: next = now, want later", spacingBurst)
	}

	// No spacing: always now.
	off := spacer{every: -1}
	for range 10 * spacingBurst {
		off.took(t0)
	}
	if got := off.next(t0); !got.Equal(t0) {
		t.Fatalf("spacing off: next = %v, want now", got.Sub(t0))
	}
}

// A change of spacing keeps what the allowance lacks: a stream held to one
// batch per spacing stays held when the spacing grows, at the longer one,
// and gets no new burst when it shrinks again.
func TestSpacerRespace(t *testing.T) {
	const short, long = 10 * time.Millisecond, 30 * time.Millisecond
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := spacer{every: short}
	for range spacingBurst + 1 {
		s.took(t0)
	}
	// One batch beyond the burst: the next waits two short spacings.
	if got := s.next(t0); got.Sub(t0) != 2*short {
		t.Fatalf("before: next = +%v, want +%v", got.Sub(t0), 2*short)
	}
	s.respace(long, t0)
	if got := s.next(t0); got.Sub(t0) != 2*long {
		t.Fatalf("grown: next = +%v, want +%v", got.Sub(t0), 2*long)
	}
	s.respace(short, t0)
	if got := s.next(t0); got.Sub(t0) != 2*short {
		t.Fatalf("shrunk again: next = +%v, want +%v (no new burst)", got.Sub(t0), 2*short)
	}
	// The same spacing again changes nothing.
	s.respace(short, t0)
	if got := s.next(t0); got.Sub(t0) != 2*short {
		t.Fatalf("same spacing: next = +%v, want +%v", got.Sub(t0), 2*short)
	}
}

// timed runs a Watcher on root until the test ends and returns its batches,
// each with the time it reached fn.
type timedBatch struct {
	at time.Time
	cs []Change
}

func startTimed(t *testing.T, root string, opts Options) <-chan timedBatch {
	t.Helper()
	w, err := New(root, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan timedBatch, 1<<14)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx, func(cs []Change) {
			select {
			case ch <- timedBatch{time.Now(), cs}:
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

// next receives one batch, or fails the test after arrive.
func next(t *testing.T, ch <-chan timedBatch) timedBatch {
	t.Helper()
	select {
	case b := <-ch:
		return b
	case <-time.After(arrive):
		t.Fatalf("no batch within %v", arrive)
		return timedBatch{}
	}
}

// Under a stream of writes to distinct files, batches are spaced: however
// fast the writes come, there are at most spacingBurst batches plus one per
// Spacing, and every path arrives.
func TestSpacingBoundsBatches(t *testing.T) {
	for _, debounce := range []time.Duration{0, -1} {
		t.Run(fmt.Sprintf("debounce=%v", debounce), func(t *testing.T) {
			const spacing = 20 * time.Millisecond
			const n = 400
			root := t.TempDir()
			ch := startTimed(t, root, Options{Debounce: debounce, Spacing: spacing})

			var wg sync.WaitGroup
			wg.Go(func() {
				for i := range n {
					if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("f%03d", i)), []byte("x"), 0o644); err != nil {
						t.Error(err)
						return
					}
				}
			})
			seen := make(map[string]bool)
			var batches []timedBatch
			for len(seen) < n {
				b := next(t, ch)
				batches = append(batches, b)
				for _, c := range b.cs {
					if c.Rescan || c.Removed {
						t.Fatalf("unexpected %+v", c)
					}
					seen[c.Path] = true
				}
			}
			wg.Wait()

			span := batches[len(batches)-1].at.Sub(batches[0].at)
			// The +1 covers a first batch that reached fn late, which
			// shortens the span seen here.
			limit := int(span/spacing) + spacingBurst + 1
			t.Logf("%d writes: %d batches in %v (limit %d)", n, len(batches), span, limit)
			if len(batches) > limit {
				t.Errorf("%d batches in %v, want at most %d with spacing %v", len(batches), span, limit, spacing)
			}
		})
	}
}

// exhaust makes spacingBurst batches, one file each, so that the next batch
// is held off. It returns the time the first of them arrived. Each file is
// written atomically: the rename into place is its only event, where the
// CREATE and WRITE of os.WriteFile may fall into two batches.
func exhaust(t *testing.T, root string, ch <-chan timedBatch) time.Time {
	t.Helper()
	var first time.Time
	for i := range spacingBurst {
		name := fmt.Sprintf("burst%d", i)
		writeAtomic(t, filepath.Join(root, name), "x")
		b := next(t, ch)
		if len(b.cs) != 1 || b.cs[0] != (Change{Path: name}) {
			t.Fatalf("batch %d of the burst: %+v, want %s", i+1, b.cs, name)
		}
		if i == 0 {
			first = b.at
		}
	}
	return first
}

// A change after a quiet spell is not held off, however long the spacing:
// here it would be an hour.
func TestQuietChangeNotHeld(t *testing.T) {
	root := t.TempDir()
	ch := startTimed(t, root, Options{Spacing: time.Hour})
	// The burst is spacingBurst batches, each delivered at once.
	exhaust(t, root, ch)
}

// Changes made while the Watcher holds off all arrive after it: written,
// removed, and in a directory made meanwhile, which has no watch yet.
func TestHeldChangesArrive(t *testing.T) {
	const spacing = time.Second
	root := t.TempDir()
	write(t, filepath.Join(root, "gone.json"), "{}")
	ch := startTimed(t, root, Options{Spacing: spacing})
	first := exhaust(t, root, ch)

	write(t, filepath.Join(root, "a.json"), "{}")
	if err := os.Remove(filepath.Join(root, "gone.json")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "new/dir/x.json"), "{}")
	write(t, filepath.Join(root, "done"), "")

	var seen []Change
	var at time.Time
	for !contains(seen, Change{Path: "done"}) {
		b := next(t, ch)
		if at.IsZero() {
			at = b.at
		}
		seen = append(seen, b.cs...)
	}
	for _, want := range []Change{{Path: "a.json"}, {Path: "gone.json", Removed: true}, {Path: "new/dir/x.json"}} {
		if !contains(seen, want) {
			t.Errorf("%+v not reported; saw %+v", want, seen)
		}
	}
	// The first held batch may leave a spacing after the burst began. Half
	// of it: the first batch of the burst may have reached fn late.
	if gap := at.Sub(first); gap < spacing/2 {
		t.Errorf("batch after a burst came %v after its start, want a spacing (%v)", gap, spacing)
	}
}

// Cancelling the context ends Run at once, even in the middle of a long
// hold-off with a change waiting.
func TestCancelDuringHoldOff(t *testing.T) {
	root := t.TempDir()
	w, err := New(root, Options{Spacing: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := make(chan timedBatch, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx, func(cs []Change) { ch <- timedBatch{time.Now(), cs} })
	}()
	exhaust(t, root, ch)
	write(t, filepath.Join(root, "held"), "x")
	// Far longer than a debounce: the change is held, not delivered.
	select {
	case b := <-ch:
		t.Fatalf("batch delivered during an hour's hold-off: %+v", b.cs)
	case <-time.After(100 * time.Millisecond):
	}

	cancel()
	select {
	case <-done:
	case <-time.After(arrive):
		t.Fatalf("Run did not return within %v of cancel during a hold-off", arrive)
	}
	close(ch)
	for b := range ch {
		t.Errorf("batch delivered during an hour's hold-off: %+v", b.cs)
	}
}

// A kernel queue that overflows while the Watcher holds off still ends in a
// Rescan, and watching goes on, new directories included.
func TestOverflowDuringHoldOff(t *testing.T) {
	limit := queueLimit(t)
	root := t.TempDir()
	var files [2]*os.File
	for i := range files {
		f, err := os.Create(filepath.Join(root, fmt.Sprintf("f%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		files[i] = f
	}
	// One P, as aipm mcp runs: each hold-off's drain then reads the whole
	// queue. With more, a drain may stop early and leave the rest a second
	// later, which makes this test slow, not wrong.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ch := startTimed(t, root, Options{Spacing: time.Second})
	exhaust(t, root, ch)

	// As in TestOverflowRescans; the hold-off is the stalled reader.
	for i := range limit + 8192 {
		if _, err := files[i%2].Write([]byte{'x'}); err != nil {
			t.Fatal(err)
		}
	}
	for rescan := false; !rescan; {
		for _, c := range next(t, ch).cs {
			rescan = rescan || c.Rescan
		}
	}
	write(t, filepath.Join(root, "after/x.json"), "{}\n")
	for found := false; !found; {
		found = contains(next(t, ch).cs, Change{Path: "after/x.json"})
	}
}

// A stream that goes on without a pause is spaced by StreamSpacing once
// streamAfter hold-offs in a row gathered changes; after a hold-off that
// gathers nothing, the shorter Spacing and its burst apply again.
func TestSustainedStreamSpacing(t *testing.T) {
	const spacing = 5 * time.Millisecond
	const stream = 500 * time.Millisecond
	root := t.TempDir()
	ch := startTimed(t, root, Options{Spacing: spacing, StreamSpacing: stream})

	// A write every millisecond or so for 2 s (far more often than Spacing,
	// far fewer than the kernel queues), then one last file.
	ctx, stop := context.WithTimeout(context.Background(), 2*time.Second)
	defer stop()
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("s%d", i%8)), []byte("x"), 0o644); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(time.Millisecond)
		}
		writeAtomic(t, filepath.Join(root, "end"), "x")
	})
	var batches []timedBatch
	for done := false; !done; {
		b := next(t, ch)
		batches = append(batches, b)
		done = contains(b.cs, Change{Path: "end"})
	}
	wg.Wait()
	span := batches[len(batches)-1].at.Sub(batches[0].at)
	// The burst, the hold-offs before the stream counts as sustained, and
	// one batch per StreamSpacing after that, with room to spare for batches
	// that reached fn late. At the shorter spacing alone there would be
	// hundreds.
	limit := spacingBurst + streamAfter + 2*int(span/stream) + 4
	t.Logf("a stream of %v: %d batches (limit %d)", span, len(batches), limit)
	if len(batches) > limit {
		t.Errorf("%d batches in a sustained stream of %v, want at most %d with StreamSpacing %v", len(batches), span, limit, stream)
	}

	// The hold-off after the last batch gathers nothing: from then on, a
	// burst goes out at once and the next batch a Spacing later.
	time.Sleep(stream + 200*time.Millisecond)
	first := exhaust(t, root, ch)
	writeAtomic(t, filepath.Join(root, "after"), "x")
	b := next(t, ch)
	if !contains(b.cs, Change{Path: "after"}) {
		t.Fatalf("batch after the burst: %+v, want after", b.cs)
	}
	if gap := b.at.Sub(first); gap >= stream/2 {
		t.Errorf("after the stream ended, a held batch came %v after the burst began, want about %v", gap, spacing)
	}
}
