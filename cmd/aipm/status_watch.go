package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/aipm/aipm/filestore"
)

// watchStatus is `aipm status --watch`: the status view, redrawn whenever a file under
// .ai-pm changes (through the same watcher that wakes agents: no polling), until
// interrupted or, with --for, until that long has passed. On a terminal each view
// replaces the last; otherwise views follow one another, each after a line with its time.
func (a *app) watchStatus(s *filestore.Store, asJSON, fullIDs bool, limit time.Duration) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	wake, stopWatch, err := a.wakeOn(s.Dir(), statusRelevant)
	if err != nil {
		return err
	}
	defer stopWatch()
	tty := isTerminal(a.term)
	var last []byte
	for {
		// Render into a buffer first: a view is replaced whole, and an unchanged one
		// (a change that moved nothing shown) is not drawn again.
		var buf bytes.Buffer
		out := a.stdout
		a.stdout = cleanWriter{&buf}
		err := a.printStatus(s, asJSON, fullIDs)
		a.stdout = out
		if err != nil {
			fmt.Fprintf(a.stderr, "aipm: %v\n", err) // a half-written file: the next change redraws
		} else if !bytes.Equal(buf.Bytes(), last) {
			last = buf.Bytes()
			if tty {
				fmt.Fprint(a.term, "\x1b[H\x1b[2J")
			} else if !asJSON {
				a.printf("--- %s\n", s.Now().Format("15:04:05.000"))
			}
			a.stdout.Write(last)
			if tty && !asJSON {
				a.printf("\nWatching %s; interrupt (Ctrl-C) to stop.\n", s.Dir())
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
			// Let a burst of writes (a batch of tasks, a pull) settle into one redraw.
			t := time.NewTimer(50 * time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
			select {
			case <-wake:
			default:
			}
		}
	}
}

// statusRelevant says whether a change under .ai-pm can change the status view: not the
// agents' captured output, the caches or the locks.
func statusRelevant(path string) bool {
	for _, skip := range []string{filestore.JournalDir + "/", "runtime/locks/", "runtime/cache/"} {
		if strings.HasPrefix(path, skip) {
			return false
		}
	}
	return !(strings.HasPrefix(path, "runtime/spawns/") && strings.HasSuffix(path, ".log"))
}

func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
