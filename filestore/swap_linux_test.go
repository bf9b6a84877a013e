//go:build linux

package filestore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A local process that can write the repository (a sandboxed agent) swaps a store
// directory with a link to a directory outside, atomically (renameat2 RENAME_EXCHANGE), in
// a loop, while aipm writes. Whatever instant a swap lands in, nothing is written outside:
// every access resolves inside .ai-pm by construction, not by a check before the open.
func TestDirectorySwapCannotEscape(t *testing.T) {
	if testing.Short() {
		t.Skip("races swaps against writes for seconds")
	}
	s := newTestStore(t)
	if _, err := s.SendMessage(human, SendRequest{To: "w1", Content: "hello"}); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	// Each swapped directory has a twin: a link to a directory outside, to exchange it with.
	swaps := []string{"tasks", filepath.Join("agents", "w1"), filepath.Join("runtime", "locks")}
	for i, d := range swaps {
		target := filepath.Join(outside, fmt.Sprint(i))
		if err := os.MkdirAll(target, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, s.path(d)+".swap"); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Renameat2(unix.AT_FDCWD, s.path("tasks"), unix.AT_FDCWD, s.path("tasks.swap"), unix.RENAME_EXCHANGE); err != nil {
		t.Skipf("no renameat2 RENAME_EXCHANGE here: %v", err)
	}
	unix.Renameat2(unix.AT_FDCWD, s.path("tasks"), unix.AT_FDCWD, s.path("tasks.swap"), unix.RENAME_EXCHANGE)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var exchanges atomic.Int64
	for _, d := range swaps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, b := s.path(d), s.path(d)+".swap"
			n := 0
			for {
				select {
				case <-stop:
					if n%2 == 1 { // leave the real directory in place
						unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
					}
					exchanges.Add(int64(n))
					return
				default:
				}
				if unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE) == nil {
					n++
				}
			}
		}()
	}
	var writes, refused atomic.Int64
	deadline := time.Now().Add(3 * time.Second)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, err := Open(s.Root(), Options{Now: s.now})
			if err != nil {
				t.Error(err)
				return
			}
			for i := 0; time.Now().Before(deadline); i++ {
				var err error
				if w%2 == 0 {
					_, err = o.CreateTask(human, NewTask{Title: fmt.Sprint("T", w, "-", i)})
				} else {
					_, err = o.SendMessage(human, SendRequest{To: "w1", Content: fmt.Sprint("m", w, "-", i)})
				}
				if err != nil {
					refused.Add(1)
				} else {
					writes.Add(1)
				}
			}
		}()
	}
	time.Sleep(time.Until(deadline))
	close(stop)
	wg.Wait()
	t.Logf("%d exchanges, %d writes done, %d refused", exchanges.Load(), writes.Load(), refused.Load())
	if writes.Load() == 0 {
		t.Error("no write got through at all")
	}
	var found []string
	filepath.WalkDir(outside, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			found = append(found, p)
		}
		return nil
	})
	if len(found) > 0 {
		t.Errorf("%d files written outside the store, e.g. %s", len(found), found[0])
	}
	for _, d := range swaps {
		if fi, err := os.Lstat(s.path(d)); err != nil || !fi.IsDir() {
			t.Fatalf("%s was left swapped: %v", d, errors.Join(err))
		}
	}
}
