package watch

import (
	"errors"
	"runtime"
	"time"

	"github.com/fsnotify/fsnotify"
)

// source is where a Watcher's kernel events come from: inotify read directly on Linux
// (source_linux.go), fsnotify elsewhere. A source is used from one goroutine, but for
// stop, which may come from any.
type source interface {
	// add watches the directory dir (not below it).
	add(dir string) error
	// remove drops the watch of dir. An error only means the kernel already dropped it.
	remove(dir string) error
	// wait returns the events ready, waiting up to d for the first one: d < 0 waits as
	// long as it takes, 0 not at all. overflow reports that the kernel dropped events.
	// Once stop was called it returns errStopped. The events are the caller's until the
	// next wait, which may reuse their slice.
	wait(d time.Duration) (evs []event, overflow bool, err error)
	// stop makes a wait in progress, and every later one, return errStopped.
	stop()
	// release frees what the source holds. The goroutine that waits calls it, once.
	release() error
}

// event is one kernel event. file says the kernel told the path is not a directory
// (inotify does; through fsnotify it is not known), which spares a created file's
// stat: a team's writes create thousands of files a second.
type event struct {
	fsnotify.Event
	file bool
}

// errStopped is what a source's wait returns once stop was called.
var errStopped = errors.New("watch: stopped")

// fsnotifySource is a source on fsnotify, for the systems other than Linux. fsnotify
// reads the kernel's events all along, and a Watcher that holds off between batches
// only leaves them queued in its channel.
type fsnotifySource struct {
	w    *fsnotify.Watcher
	logf func(format string, args ...any)
}

func newFsnotifySource(logf func(string, ...any)) (source, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	return &fsnotifySource{w: w, logf: logf}, nil
}

func (s *fsnotifySource) add(dir string) error    { return s.w.Add(dir) }
func (s *fsnotifySource) remove(dir string) error { return s.w.Remove(dir) }
func (s *fsnotifySource) stop()                   { s.w.Close() }
func (s *fsnotifySource) release() error          { return s.w.Close() }

func (s *fsnotifySource) wait(d time.Duration) ([]event, bool, error) {
	var evs []event
	if d != 0 {
		var timeout <-chan time.Time
		if d > 0 {
			t := time.NewTimer(d)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case ev, ok := <-s.w.Events:
			if !ok {
				return nil, false, errStopped
			}
			evs = append(evs, event{Event: ev})
		case err, ok := <-s.w.Errors:
			if !ok {
				return nil, false, errStopped
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				return nil, true, nil
			}
			s.logf("watch: %v", err)
			return nil, false, nil
		case <-timeout:
			return nil, false, nil
		}
	}
	// Then what is ready now. After each receive it yields, so that fsnotify's
	// goroutine, which the receive made ready to run next, can take the next event
	// (from its buffer, or from the kernel's queue in one read(2)) and block sending
	// it. Once the queue is empty, fsnotify waits in the poller and the receive finds
	// nothing.
	for misses := 0; misses < drainTries; {
		select {
		case ev, ok := <-s.w.Events:
			if !ok {
				return evs, false, nil // the next wait reports it
			}
			evs = append(evs, event{Event: ev})
			misses = 0
		case err, ok := <-s.w.Errors:
			if ok && errors.Is(err, fsnotify.ErrEventOverflow) {
				return evs, true, nil
			}
			if ok {
				s.logf("watch: %v", err)
			}
		default:
			misses++
		}
		runtime.Gosched()
	}
	return evs, false, nil
}

// drainTries is how many times in a row a wait finds no event before it stops. With
// more than one P, the waiting goroutine may run again on another one while fsnotify
// is still on its way to the next send.
const drainTries = 3
