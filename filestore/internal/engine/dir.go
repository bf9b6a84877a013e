package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
)

// DirName is the name of the store directory at the top of a repository.
const DirName = ".ai-pm"

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
	// OnJournal, if set, is told of every journal line read: its path and its directory's
	// modification times before and after the write.
	OnJournal func(rel string, before, after int64, timed bool)
	// OnMarkAll, if set, is called when anything may have changed.
	OnMarkAll func()
}

func NewDir(dir string) *Dir { return &Dir{dir: dir} }

func (d *Dir) Path(elem ...string) string {
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

// Locked runs fn holding the store lock: the in-process mutex first, then an exclusive
// flock on a dedicated lock file that is never replaced (locking a file that is renamed
// over would lock a dead inode).
func (d *Dir) Locked(fn func() error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	lockPath := d.Path("runtime", "locks", "store.lock")
	// Opened the store's way (inside .ai-pm by construction, no link, no hard link), then
	// locked by its descriptor: a lock taken by path could land on a file elsewhere.
	f, err := Open(lockPath, os.O_RDWR|os.O_CREATE, 0o644, 0)
	if err != nil {
		return err
	}
	defer f.Close() // closing the descriptor releases the lock
	unlock, err := LockFile(f)
	if err != nil {
		return fmt.Errorf("lock %s: %w", RelToRepo(lockPath), err)
	}
	defer unlock()
	d.inLock.Store(true)
	defer d.inLock.Store(false)
	return fn()
}

// cleanRel tells whether p is a relative slash-separated path that filepath.Clean leaves
// as it is: not empty, no empty, "." or ".." element.
func cleanRel(p string) bool {
	if p == "" {
		return false
	}
	for e := range strings.SplitSeq(p, "/") {
		if e == "" || e == "." || e == ".." {
			return false
		}
	}
	return true
}

// OneShot tells the store that this process is a command that runs for a moment (`aipm
// status`, `aipm task add`): each cache compares the files it holds with the files at its
// first query, as every query of a process without a watcher does, and its later queries
// read only the journal, which names every write made through aipm. A command makes many
// queries, and at 100,000 tasks each comparison stats thousands of files of unfinished
// work. An edit beside aipm while it runs is seen by the next command.
func (d *Dir) OneShot() { d.oneShot.Store(true) }

// IsOneShot tells whether OneShot was called.
func (d *Dir) IsOneShot() bool { return d.oneShot.Load() }

// Watched tells the store that a watcher of its directory reports every change through
// Changed from now on, so queries trust the cache between reports instead of comparing
// every file. Call it after the watcher is watching.
func (d *Dir) Watched() {
	d.journal.mu.Lock()
	d.journal.watched = true
	d.journal.mu.Unlock()
	// Whatever happened before the watcher started: a change of a directory's list of
	// names, or of a file held in full.
	for _, c := range d.caches() {
		c.markCheck()
	}
}

func (d *Dir) watched() bool {
	d.journal.mu.Lock()
	defer d.journal.mu.Unlock()
	return d.journal.watched
}

// Changed is the watcher's report: paths relative to .ai-pm, slash-separated, that may have
// changed; an empty path means events were lost and anything may have changed.
func (d *Dir) Changed(paths ...string) {
	for _, p := range paths {
		if p == "" {
			d.markAll()
			continue
		}
		d.MarkPath(p)
	}
}

// MarkPath routes one changed path to the cache of its directory. A whole directory (a
// checkout that replaced it, a rename) is a rescan of that cache.
func (d *Dir) MarkPath(rel string) {
	parts := strings.Split(rel, "/")
	for _, c := range d.caches() {
		if parts[0] != c.dirName() {
			continue
		}
		switch {
		case len(parts) == 1: // the whole directory
			c.markAll()
		case c.nested():
			// agents/<id> itself or its agents/<id>/agent.json: the mailbox and the other
			// files beside it change on every message and are no part of the entity.
			if len(parts) == 2 || len(parts) == 3 && parts[2] == c.leafName() {
				c.Mark(parts[1])
			}
		case len(parts) == 2:
			if id, ok := strings.CutSuffix(parts[1], ".json"); ok {
				c.Mark(id)
			}
		}
	}
}

func (d *Dir) markAll() {
	if d.OnMarkAll != nil {
		d.OnMarkAll()
	}
	for _, c := range d.caches() {
		c.markAll()
	}
}

func (d *Dir) caches() []anyCache {
	return d.cacheList
}
