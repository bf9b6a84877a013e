package watch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// BenchmarkWakeLatency measures the time from a write in one goroutine to
// a long-poll woken through the real watcher and a Hub. Writes take turns
// with wake-ups, so no events merge. The p50 and p99 metrics start the
// clock when the write becomes visible: at the append, or at the rename of
// an atomic write. ns/op covers the whole round, fsync and pause included.
//
// Each round but the back-to-back ones begins after a quiet spell of
// DefaultSpacing, as a message between agents does: that is the latency of
// SPEC §10. Back to back, the rounds are a stream of a change every
// millisecond or so, which the Watcher spaces to one batch per Spacing;
// with spacing off they show what the debounce alone costs.
func BenchmarkWakeLatency(b *testing.B) {
	appendLine := func(b *testing.B) func(path string, i int) (time.Time, func() bool) {
		return func(path string, i int) (time.Time, func() bool) {
			t0 := time.Now()
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := fmt.Fprintf(f, "{\"n\":%d}\n", i); err != nil {
				b.Fatal(err)
			}
			f.Close()
			// Only the one append per round wakes the waiter.
			return t0, func() bool { return true }
		}
	}
	for _, bc := range []struct {
		name     string
		debounce time.Duration
	}{
		{"debounce=default", 0},
		{"debounce=none", -1},
	} {
		quiet := Options{Debounce: bc.debounce}
		b.Run("append/"+bc.name, func(b *testing.B) {
			benchWake(b, quiet, DefaultSpacing, appendLine(b))
		})
		b.Run("atomic/"+bc.name, func(b *testing.B) {
			benchWake(b, quiet, DefaultSpacing, func(path string, i int) (time.Time, func() bool) {
				want := strconv.Itoa(i)
				f, err := os.CreateTemp(filepath.Dir(path), ".x.json.*.tmp")
				if err != nil {
					b.Fatal(err)
				}
				if _, err := f.WriteString(want); err != nil {
					b.Fatal(err)
				}
				if err := f.Sync(); err != nil {
					b.Fatal(err)
				}
				f.Close()
				// Readers can see the new content from the rename on. The
				// fsync before it is the writer's cost, not wake latency.
				t0 := time.Now()
				if err := os.Rename(f.Name(), path); err != nil {
					b.Fatal(err)
				}
				// A late wake-up from the previous round must not count.
				return t0, func() bool {
					got, err := os.ReadFile(path)
					return err == nil && string(got) == want
				}
			})
		})
	}
	b.Run("append/back-to-back", func(b *testing.B) {
		benchWake(b, Options{}, 0, appendLine(b))
	})
	b.Run("append/back-to-back/spacing=off", func(b *testing.B) {
		benchWake(b, Options{Spacing: -1}, 0, appendLine(b))
	})
}

// benchWake runs the write/wait rounds, each after a pause. write performs
// round i. It returns when the write became visible, and a check that the
// waiter sees that write and not an earlier one.
func benchWake(b *testing.B, opts Options, pause time.Duration, write func(path string, i int) (time.Time, func() bool)) {
	root := b.TempDir()
	var h Hub
	w, err := New(root, opts)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx, func(cs []Change) {
			for _, c := range cs {
				h.Notify(c.Path)
			}
		})
	}()
	defer func() { cancel(); <-done }()

	sub := h.Subscribe("data/")
	defer sub.Close()
	if err := os.Mkdir(filepath.Join(root, "data"), 0o755); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(root, "data", "x.json")
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()

	var lat []time.Duration
	for i := 0; b.Loop(); i++ {
		if pause > 0 {
			time.Sleep(pause)
		}
		// Drop wake-ups left over from the previous round.
		for woken(sub) {
		}
		t0, seen := write(path, i)
		for {
			if err := sub.Wait(wctx); err != nil {
				b.Fatal(err)
			}
			if seen() {
				break
			}
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
