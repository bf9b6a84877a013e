// Package watch tells a process, within milliseconds, that files under a
// directory tree changed, and wakes the long-polls waiting on them.
//
// It knows paths, not what the files mean. A [Watcher] watches a whole tree
// (inotify is not recursive, so it adds a watch for every directory, including
// ones created later), skips temp and editor files, and delivers batches of
// [Change]. Paths in a Change are relative to the root and slash-separated,
// like "agents/bob/chat.jsonl". A Change only says a path may have changed.
// The kernel merges and drops events, so re-read the file and never count
// Changes. If inotify is unavailable or out of instances or watches, the
// Watcher polls instead and says so once.
//
// After a quiet spell, a change is delivered a debounce (a millisecond)
// after it is read, with whatever else came meanwhile, and so are the next
// few. Under a stream of changes, such as other processes' writes, the
// Watcher delivers one batch per spacing (5 milliseconds, 15 once the stream
// is sustained) and stops reading events in between: the kernel queues them,
// and they cost one wake-up per batch instead of one each. On Linux the
// Watcher reads inotify itself and nothing in the process waits on it during
// a hold-off; elsewhere fsnotify reads the events and they wait in its
// channel. Nothing is dropped by waiting: a path changed during the hold-off
// is in the next batch, and a queue that overflows meanwhile yields a Rescan.
//
// A [Hub] wakes the waiters of one process. Feed it from the Watcher, and
// also from the process's own writes, which then wake local waiters without
// the inotify round trip:
//
//	hub := new(watch.Hub)
//	w, err := watch.New(root, watch.Options{})
//	if err != nil { ... }
//	go w.Run(ctx, func(cs []watch.Change) {
//		for _, c := range cs {
//			hub.Notify(c.Path) // a Rescan has Path "", which wakes everyone
//		}
//	})
//
// A long-poll subscribes before it looks at the state. That way a change
// that lands between looking and waiting is not lost:
//
//	sub := hub.Subscribe("agents/bob/", "conversations/")
//	defer sub.Close()
//	for {
//		if result, ok := evaluate(); ok {
//			return result, nil
//		}
//		if err := sub.Wait(ctx); err != nil {
//			return nil, err // timeout or cancellation
//		}
//	}
package watch
