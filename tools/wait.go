package tools

import (
	"context"
	"time"

	"github.com/aipm/aipm/filestore"
	"github.com/aipm/aipm/watch"
)

// Watch feeds the server's hub from a watcher of the store directory until ctx ends, so a
// long-poll wakes within milliseconds of a change by any process: another agent, the CLI,
// a human's editor or git. It returns once the watcher is running.
func Watch(ctx context.Context, store *filestore.Store, hub *watch.Hub, logf func(string, ...any)) error {
	w, err := watch.New(store.Dir(), watch.Options{Logf: logf, Skip: filestore.UnwatchedDirs})
	if err != nil {
		return err
	}
	// From here on the watcher reports every change, so the store's caches may trust
	// themselves between reports.
	store.Watched()
	go w.Run(ctx, func(changes []watch.Change) {
		paths := make([]string, 0, len(changes))
		for _, c := range changes {
			if c.Path == filestore.JournalPath {
				continue // the caches read the journal themselves; it is no state to wake for
			}
			paths = append(paths, c.Path)
		}
		if len(paths) == 0 {
			return
		}
		store.Changed(paths...)
		hub.Notify(paths...)
	})
	return nil
}

// Long-poll bounds of get_next_action (SPEC §6).
const (
	defaultWaitSeconds = 30
	maxWaitSeconds     = 50
)

// MaxWaits is how many long-polls one server holds at once. The stdio transport runs tool
// calls on a pool of WorkerPool goroutines; a wait beyond MaxWaits answers at once (as with
// timeout_seconds 0), so however many waits a client leaves outstanding, the pool keeps
// WorkerPool-MaxWaits workers for every other call.
const (
	MaxWaits   = 8
	WorkerPool = 64
)

// waitSeconds reads timeout_seconds: default 30, at most 50, 0 = answer at once.
func (c *call) waitSeconds() (time.Duration, error) {
	n, err := c.optInt("timeout_seconds", defaultWaitSeconds)
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, badArg("timeout_seconds", "must be 0 or more (got %d)", n)
	}
	return time.Duration(min(n, maxWaitSeconds)) * time.Second, nil
}

// longPoll evaluates until eval reports a final answer, the timeout passes (the last answer
// is returned) or ctx ends. Between evaluations it sleeps on the hub: only a change under
// one of prefixes (paths relative to .ai-pm) wakes it, or the moment eval left in *wakeAt
// (a deadline that passes without any file changing, such as a conversation timeout).
// Subscribing before the first evaluation means a change that lands during an evaluation
// is not missed.
func (c *call) longPoll(ctx context.Context, timeout time.Duration, prefixes []string, eval func(wakeAt *time.Time) (any, bool, error)) (any, error) {
	// An interrupt for this session ends the wait at once (the envelope then answers with
	// its notice).
	prefixes = append(prefixes, "agents/"+c.agent.ID+"/notifications.jsonl")
	select {
	case c.srv.polls <- struct{}{}:
		defer func() { <-c.srv.polls }()
	default:
		timeout = 0
	}
	sub := c.srv.hub.Subscribe(prefixes...)
	defer sub.Close()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	var tick <-chan time.Time
	if c.srv.recheck > 0 {
		t := time.NewTicker(c.srv.recheck)
		defer t.Stop()
		tick = t.C
	}
	for {
		if c.hasInterrupt() {
			return struct{}{}, nil
		}
		var wakeAt time.Time
		out, final, err := eval(&wakeAt)
		if err != nil || final {
			return out, err
		}
		if !await(ctx, sub.C, tick, deadline.C, wakeAt) {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return out, nil
		}
	}
}

// await blocks until something may have changed (the hub, the re-check tick, or wakeAt) and
// reports true; it reports false when the deadline passes or ctx ends first.
func await(ctx context.Context, hub <-chan struct{}, tick, deadline <-chan time.Time, wakeAt time.Time) bool {
	var alarm <-chan time.Time
	if !wakeAt.IsZero() {
		t := time.NewTimer(max(time.Until(wakeAt), time.Millisecond))
		defer t.Stop()
		alarm = t.C
	}
	select {
	case <-hub:
	case <-tick:
	case <-alarm:
	case <-deadline:
		return false
	case <-ctx.Done():
		return false
	}
	return true
}
