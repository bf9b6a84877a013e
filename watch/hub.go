package watch

import (
	"context"
	"slices"
	"strings"
	"sync"
)

// Hub wakes the long-polls of one process when paths they care about
// change. Paths are in the form of Change.Path. The zero Hub is ready to use.
//
// Notify never blocks. Each subscription holds at most one pending wake-up,
// so a slow or absent waiter costs the others nothing.
type Hub struct {
	mu   sync.Mutex
	subs map[*Sub]struct{}
}

// Sub is one subscription to a Hub. Call Close when done with it.
type Sub struct {
	// C receives a value after a matching change. Changes made while
	// nobody is receiving merge into one pending value.
	C <-chan struct{}

	c        chan struct{}
	hub      *Hub
	prefixes []string
	// record keeps the matching paths for Paths; paths is nil-able only when !record.
	record bool
	paths  map[string]struct{}
}

// Subscribe returns a subscription to changes at or under any of the
// prefixes, or to all changes if none are given. A prefix is a plain string
// prefix of Change.Path. End it with "/" to mean a directory: "agents/bob/"
// does not match "agents/bobby.json". A subscription also wakes for a change
// to any ancestor directory of a prefix, and for the empty path of a
// Rescan, because these can take the watched files with them.
//
// Subscribe before evaluating the state you wait on. A change that lands
// after Subscribe stays pending in C, so evaluate-then-wait cannot miss it.
// At worst it wakes once for something already seen.
func (h *Hub) Subscribe(prefixes ...string) *Sub {
	if len(prefixes) == 0 {
		prefixes = []string{""}
	}
	c := make(chan struct{}, 1)
	s := &Sub{C: c, c: c, hub: h, prefixes: slices.Clone(prefixes)}
	h.mu.Lock()
	if h.subs == nil {
		h.subs = make(map[*Sub]struct{})
	}
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	return s
}

// SubscribePaths is Subscribe for a waiter that also wants to know what changed: Paths
// returns the matching paths reported since its previous call.
func (h *Hub) SubscribePaths(prefixes ...string) *Sub {
	s := h.Subscribe(prefixes...)
	h.mu.Lock()
	s.record, s.paths = true, map[string]struct{}{}
	h.mu.Unlock()
	return s
}

// Paths returns, sorted, the paths that matched since the previous call ("" among them
// after a Rescan: anything may have changed). It is empty for a Subscribe subscription.
func (s *Sub) Paths() []string {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	out := make([]string, 0, len(s.paths))
	for p := range s.paths {
		out = append(out, p)
	}
	clear(s.paths)
	slices.Sort(out)
	return out
}

// Notify wakes every subscription that matches one of paths. The Watcher's
// batches feed it. So do the process's own writers, which wake local waiters
// without waiting for inotify.
func (h *Hub) Notify(paths ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		if s.record {
			for _, p := range paths {
				if s.matches([]string{p}) {
					s.paths[p] = struct{}{}
				}
			}
		}
		if s.matches(paths) {
			select {
			case s.c <- struct{}{}:
			default: // a wake-up is already pending
			}
		}
	}
}

// Wait blocks until a matching change has happened since the previous wake,
// or since Subscribe. It returns ctx.Err() if ctx is done first.
func (s *Sub) Wait(ctx context.Context) error {
	select {
	case <-s.c:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close ends the subscription. It is safe to call more than once.
func (s *Sub) Close() {
	s.hub.mu.Lock()
	delete(s.hub.subs, s)
	s.hub.mu.Unlock()
}

func (s *Sub) matches(paths []string) bool {
	for _, path := range paths {
		for _, prefix := range s.prefixes {
			if strings.HasPrefix(path, prefix) || path == "" || strings.HasPrefix(prefix, path+"/") {
				return true
			}
		}
	}
	return false
}
