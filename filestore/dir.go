package filestore

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
)

// Dir is one store directory's files as the engine keeps them: the store lock, the change
// journal, and the caches of its entity directories.
type Dir struct {
	dir string     // the .ai-pm directory
	mu  sync.Mutex // flock does not exclude goroutines sharing a process (libs.md §3.2)
	// inLock is set while the store lock is held: caches then read only the journal, so no
	// scan holds up the writers of other processes.
	inLock atomic.Bool
	// oneShot: a command that runs for a moment compares each cache with the files once
	// (OneShot).
	oneShot atomic.Bool
	journal journal
	// cacheList are the caches of the entity directories, which the journal and the
	// watcher's reports reach (markPath).
	cacheList []anyCache
	// onJournal, if set, is told of every journal line read: its path and its directory's
	// modification times before and after the write.
	onJournal func(rel string, before, after int64, timed bool)
	// onMarkAll, if set, is called when anything may have changed.
	onMarkAll func()
}

func newDir(dir string) *Dir { return &Dir{dir: dir} }

func (d *Dir) path(elem ...string) string {
	// Most paths are the store's directory and a few clean names (tasks, an id and
	// ".json"): they are joined as they are. filepath.Join cleans the whole path again,
	// and every process of a team builds such a path for each file another one writes.
	n := len(d.dir)
	for _, e := range elem {
		if filepath.Separator != '/' || !cleanRel(e) {
			return filepath.Join(append([]string{d.dir}, elem...)...)
		}
		n += 1 + len(e)
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(d.dir)
	for _, e := range elem {
		b.WriteByte('/')
		b.WriteString(e)
	}
	return b.String()
}

// locked runs fn holding the store lock: the in-process mutex first, then an exclusive
// flock on a dedicated lock file that is never replaced (locking a file that is renamed
// over would lock a dead inode).
func (d *Dir) locked(fn func() error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	lockPath := d.path("runtime", "locks", "store.lock")
	// Opened the store's way (inside .ai-pm by construction, no link, no hard link), then
	// locked by its descriptor: a lock taken by path could land on a file elsewhere.
	f, err := openSafe(lockPath, os.O_RDWR|os.O_CREATE, 0o644, 0)
	if err != nil {
		return err
	}
	defer f.Close() // closing the descriptor releases the lock
	unlock, err := lockFile(f)
	if err != nil {
		return fmt.Errorf("lock %s: %w", relToRepo(lockPath), err)
	}
	defer unlock()
	d.inLock.Store(true)
	defer d.inLock.Store(false)
	return fn()
}
