package main

import (
	"context"
	"fmt"

	"github.com/aipm/aipm/watch"
)

// wakeOn watches dir (recursively) and signals wake whenever a reported change is relevant
// (paths relative to dir) or the watcher had to rescan; wakes that arrive before the last
// was taken are coalesced into one. Events are queued from the moment it returns, so what
// the caller reads next is never older than the last wake. stop ends the watcher.
func (a *app) wakeOn(dir string, relevant func(path string) bool) (wake <-chan struct{}, stop func(), err error) {
	w, err := watch.New(dir, watch.Options{Logf: func(format string, args ...any) {
		fmt.Fprintf(a.stderr, "aipm: "+format+"\n", args...)
	}})
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx, func(cs []watch.Change) {
			for _, c := range cs {
				if c.Rescan || relevant(c.Path) {
					select {
					case ch <- struct{}{}:
					default:
					}
					return
				}
			}
		})
	}()
	return ch, func() { cancel(); <-done }, nil
}
