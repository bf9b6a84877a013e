package watch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// woken reports whether s has a wake-up pending. Notify is synchronous, so
// no waiting is needed.
func woken(s *Sub) bool {
	select {
	case <-s.C:
		return true
	default:
		return false
	}
}

func TestHubNotifyWakesWaiter(t *testing.T) {
	var h Hub
	sub := h.Subscribe()
	defer sub.Close()

	go h.Notify("a.json")
	ctx, cancel := context.WithTimeout(context.Background(), arrive)
	defer cancel()
	if err := sub.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

// The long-poll pattern: subscribe, evaluate, wait. A change that lands
// after the evaluation but before the wait must still end the wait.
func TestHubChangeBeforeWaitNotMissed(t *testing.T) {
	var h Hub
	sub := h.Subscribe("inbox/")
	defer sub.Close()

	// Evaluate: nothing to do yet. Then, before Wait, a writer notifies.
	h.Notify("inbox/m1.json")

	ctx, cancel := context.WithTimeout(context.Background(), arrive)
	defer cancel()
	if err := sub.Wait(ctx); err != nil {
		t.Fatalf("change made before Wait was missed: %v", err)
	}
}

// The same pattern, with the real watcher in between.
func TestHubWithWatcher(t *testing.T) {
	root := t.TempDir()
	var h Hub
	w, err := New(root, Options{})
	if err != nil {
		t.Fatal(err)
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

	sub := h.Subscribe("inbox/")
	defer sub.Close()
	entries, err := os.ReadDir(root)
	if err != nil || len(entries) != 0 {
		t.Fatalf("evaluate: %v %v", entries, err)
	}
	write(t, filepath.Join(root, "inbox/m1.json"), "{}\n")

	wctx, wcancel := context.WithTimeout(ctx, arrive)
	defer wcancel()
	if err := sub.Wait(wctx); err != nil {
		t.Fatalf("write was not seen: %v", err)
	}
}

func TestHubPrefixFilter(t *testing.T) {
	var h Hub
	bob := h.Subscribe("agents/bob/", "conversations/")
	defer bob.Close()
	all := h.Subscribe()
	defer all.Close()

	for _, tc := range []struct {
		path string
		want bool
	}{
		{"agents/alice/chat.jsonl", false},
		{"agents/bobby.json", false},
		{"tasks/t1.json", false},
		{"agents/bob/chat.jsonl", true},
		{"conversations/c1.json", true},
		{"agents/bob", true}, // the directory itself, removed
		{"agents", true},     // an ancestor, removed
		{"", true},           // a Rescan
	} {
		h.Notify(tc.path)
		if got := woken(bob); got != tc.want {
			t.Errorf("Notify(%q) woke bob: %v, want %v", tc.path, got, tc.want)
		}
		if !woken(all) {
			t.Errorf("Notify(%q) did not wake an unfiltered subscription", tc.path)
		}
	}

	h.Notify("tasks/t1.json", "conversations/c2.json")
	if !woken(bob) {
		t.Error("Notify with one matching path among several did not wake bob")
	}
	woken(all)
	h.Notify()
	if woken(all) {
		t.Error("Notify with no paths woke a subscription")
	}
}

func TestHubWaitCancel(t *testing.T) {
	var h Hub
	sub := h.Subscribe()
	defer sub.Close()

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- sub.Wait(ctx) }()
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Wait = %v, want context.Canceled", err)
		}
	case <-time.After(arrive):
		t.Fatal("Wait did not return after cancel")
	}
}

func TestHubManyWaiters(t *testing.T) {
	var h Hub
	// A subscriber that never reads must not hold up the others.
	idle := h.Subscribe()
	defer idle.Close()

	ctx, cancel := context.WithTimeout(context.Background(), arrive)
	defer cancel()
	const n = 50
	var ready, wg sync.WaitGroup
	ready.Add(n)
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			sub := h.Subscribe("a/")
			defer sub.Close()
			ready.Done()
			if err := sub.Wait(ctx); err != nil {
				errs <- err
			}
		})
	}
	ready.Wait()
	h.Notify("a/x.json")
	h.Notify("a/y.json") // the idle subscriber already has a pending wake-up
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("waiter not woken: %v", err)
	}
}

func TestHubClose(t *testing.T) {
	var h Hub
	sub := h.Subscribe()
	sub.Close()
	sub.Close()
	h.Notify("a")
	if woken(sub) {
		t.Error("closed subscription was woken")
	}
}

func TestSubscribePaths(t *testing.T) {
	var h Hub
	s := h.SubscribePaths("tasks/", "project.json")
	defer s.Close()
	plain := h.Subscribe("tasks/")
	defer plain.Close()
	h.Notify("tasks/a.json", "agents/x/chat.jsonl")
	h.Notify("tasks/b.json", "tasks/a.json")
	<-s.C
	if got := strings.Join(s.Paths(), ","); got != "tasks/a.json,tasks/b.json" {
		t.Errorf("paths = %q", got)
	}
	if got := s.Paths(); len(got) != 0 {
		t.Errorf("paths again = %q, want none", got)
	}
	h.Notify("") // a rescan
	if got := s.Paths(); len(got) != 1 || got[0] != "" {
		t.Errorf("after a rescan: %q", got)
	}
	if got := plain.Paths(); len(got) != 0 {
		t.Errorf("a plain subscription recorded %q", got)
	}
}
