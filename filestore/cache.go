package filestore

import (
	"bytes"
	"errors"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
)

// The files are the truth; what a Store keeps in memory is a cache of them that can be
// thrown away at any moment without changing an answer. Each entity directory that a hot
// path scans (tasks/, conversations/, delegations/) has a dirCache: every file parsed once,
// kept with the identity it was read at (inode, size, modification time), and re-read only
// when something says it may have changed:
//
//   - the change journal, runtime/changes.log: every write through aipm, by any process,
//     appends the path it replaced, under the store lock, right after the rename. A reader
//     that finds the journal longer than it last saw re-checks exactly those paths. Under
//     the lock this is exact: no write made through aipm is missed, so the rules a write
//     checks never see a stale task.
//   - the watcher (Changed): an editor, `git checkout` or `git pull` writes without the
//     journal; the process's watcher names the paths, and a lost event (a kernel queue
//     overflow) asks for a rescan.
//   - without a watcher (the CLI, tests), every query compares the directory with the cache
//     by file identity: one stat per file, a read only of what changed.
//
// A file that cannot be parsed is left out (`aipm doctor` reports it), as before.

// journalMax is the size past which the writer that finds the journal larger starts a new
// one; readers that see a new journal re-check every cached file by identity.
const journalMax = 4 << 20

// stamp identifies the content a file had when it was read: an atomic write makes a new
// inode, an in-place edit a new size or modification time.
type stamp struct {
	ino   uint64
	size  int64
	mtime int64
	ctime int64 // catches an in-place edit that keeps the size and sets the mtime back
}

func stampOf(fi os.FileInfo) stamp {
	return stamp{ino: fileIno(fi), size: fi.Size(), mtime: fi.ModTime().UnixNano(), ctime: fileCtime(fi)}
}

// cacheEntry is one file as last read: v is nil when it did not parse.
type cacheEntry[T any] struct {
	v  *T
	st stamp
}

// dirCache caches the JSON entities of one directory under .ai-pm, by id.
type dirCache[T any] struct {
	s      *Store
	dir    string // relative to .ai-pm, e.g. "tasks"
	prefix string // id prefix, e.g. "tsk_"; "" for agent ids
	// nested: each entity is dir/<id>/<leaf> (agents/<id>/agent.json), not dir/<id>.json.
	leaf string
	read func(id string) (*T, error)
	// index keeps secondary indexes in step: called under mu with the old value (nil if
	// none) and the new one (nil when removed or unreadable).
	index func(id string, old, cur *T)
	// reset empties the secondary indexes before a full load.
	reset func()

	mu     sync.Mutex
	loaded bool
	ents   map[string]*cacheEntry[T]

	dmu    sync.Mutex // guards dirty and rescan, written by the journal and the watcher
	dirty  map[string]struct{}
	rescan bool
}

func newDirCache[T any](s *Store, dir, prefix string, read func(id string) (*T, error)) *dirCache[T] {
	return &dirCache[T]{s: s, dir: dir, prefix: prefix, read: read, dirty: map[string]struct{}{},
		index: func(string, *T, *T) {}, reset: func() {}}
}

// mark records that the file of id may have changed.
func (c *dirCache[T]) mark(id string) {
	c.dmu.Lock()
	c.dirty[id] = struct{}{}
	c.dmu.Unlock()
}

// markAll asks for a comparison of every file with the cache.
func (c *dirCache[T]) markAll() {
	c.dmu.Lock()
	c.rescan = true
	c.dmu.Unlock()
}

// with brings the cache up to date and runs fn on it, holding the cache's mutex: fn must
// not keep or hand out the cached values, only copies.
func (c *dirCache[T]) with(fn func()) error {
	return c.sync(!c.s.watched() && !c.s.inLock.Load(), fn)
}

// sync brings the cache up to date and runs fn on it. full compares every file with the
// cache (a process without a watcher does that on each query); otherwise only what the
// journal and the watcher named is re-checked.
func (c *dirCache[T]) sync(full bool, fn func()) error {
	c.s.pullJournal()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.syncLocked(full); err != nil {
		return err
	}
	fn()
	return nil
}

func (c *dirCache[T]) syncLocked(full bool) error {
	c.dmu.Lock()
	dirty, rescan := c.dirty, c.rescan
	c.dirty, c.rescan = map[string]struct{}{}, false
	c.dmu.Unlock()
	if !c.loaded || rescan || full {
		return c.validateLocked()
	}
	for id := range dirty {
		c.refreshLocked(id)
	}
	return nil
}

// validateLocked compares the whole directory with the cache by file identity, reading
// only the files that are new or changed. The first call reads everything.
func (c *dirCache[T]) validateLocked() error {
	ids, err := c.listIDs()
	if err != nil {
		return err
	}
	if !c.loaded {
		c.ents = make(map[string]*cacheEntry[T], len(ids))
		c.reset()
		c.loadLocked(ids)
	}
	seen := make(map[string]struct{}, len(ids))
	for _, id := range ids {
		seen[id] = struct{}{}
		c.refreshLocked(id)
	}
	for id, old := range c.ents {
		if _, ok := seen[id]; !ok {
			delete(c.ents, id)
			c.index(id, old.v, nil)
		}
	}
	c.loaded = true
	return nil
}

// loadLocked reads the files of ids into an empty cache, on every core: the first query
// of a process at thousands of tasks is mostly JSON decoding.
func (c *dirCache[T]) loadLocked(ids []string) {
	type loaded struct {
		v  *T
		st stamp
		ok bool
	}
	out := make([]loaded, len(ids))
	workers := min(runtime.GOMAXPROCS(0), 8)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(ids); i += workers {
				fi, err := os.Lstat(c.file(ids[i]))
				if err != nil || !fi.Mode().IsRegular() {
					continue
				}
				v, err := c.read(ids[i])
				if err != nil {
					v = nil
				}
				out[i] = loaded{v, stampOf(fi), true}
			}
		}()
	}
	wg.Wait()
	for i, l := range out {
		if l.ok {
			c.ents[ids[i]] = &cacheEntry[T]{v: l.v, st: l.st}
			c.index(ids[i], nil, l.v)
		}
	}
}

// Warm loads every cache now, so that the first call a server answers does not pay for
// reading the store. The coordinator and `aipm mcp` start it in the background.
func (s *Store) Warm() {
	s.tasks.with(func() {})
	s.agents.with(func() {})
	s.convs.with(func() {})
	s.dlgs.with(func() {})
}

// idOf is the entity id of a directory entry, if it names one.
// listIDs lists the ids of the directory's entities from the directory alone, in
// directory order.
func (c *dirCache[T]) listIDs() ([]string, error) {
	entries, err := os.ReadDir(c.s.path(c.dir))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	var ids []string
	for _, e := range entries {
		if id, ok := c.idOf(e); ok {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

func (c *dirCache[T]) idOf(e os.DirEntry) (string, bool) {
	if c.leaf != "" {
		return e.Name(), e.IsDir() && ValidateAgentID(e.Name()) == nil
	}
	id, ok := strings.CutSuffix(e.Name(), ".json")
	return id, ok && !e.IsDir() && c.validID(id)
}

func (c *dirCache[T]) validID(id string) bool {
	if c.leaf != "" {
		return ValidateAgentID(id) == nil
	}
	return ValidateEntityID(c.prefix, id) == nil
}

// file is the path of id's file.
func (c *dirCache[T]) file(id string) string {
	if c.leaf != "" {
		return c.s.path(c.dir, id, c.leaf)
	}
	return c.s.path(c.dir, id+".json")
}

// refreshLocked re-reads one file if its identity changed since it was cached.
func (c *dirCache[T]) refreshLocked(id string) {
	if !c.validID(id) {
		return
	}
	old := c.ents[id]
	fi, err := os.Lstat(c.file(id))
	if err != nil || !fi.Mode().IsRegular() {
		if old != nil {
			delete(c.ents, id)
			c.index(id, old.v, nil)
		}
		return
	}
	st := stampOf(fi)
	if old != nil && old.st == st {
		return
	}
	v, err := c.read(id)
	if err != nil {
		v = nil
	}
	c.ents[id] = &cacheEntry[T]{v: v, st: st}
	var prev *T
	if old != nil {
		prev = old.v
	}
	c.index(id, prev, v)
}

// put records a value this process has just written (under the store lock), so the next
// query need not read it back.
func (c *dirCache[T]) put(id string, v *T) {
	fi, err := os.Lstat(c.file(id))
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.loaded {
		return
	}
	if err != nil {
		c.dmu.Lock()
		c.dirty[id] = struct{}{}
		c.dmu.Unlock()
		return
	}
	var prev *T
	if old := c.ents[id]; old != nil {
		prev = old.v
	}
	c.ents[id] = &cacheEntry[T]{v: v, st: stampOf(fi)}
	c.index(id, prev, v)
}

// get returns the cached value of id (nil if absent or unreadable); the caller holds mu.
func (c *dirCache[T]) get(id string) *T {
	if e := c.ents[id]; e != nil {
		return e.v
	}
	return nil
}

// journal is the process's position in runtime/changes.log.
type journal struct {
	mu      sync.Mutex
	ino     uint64
	off     int64
	started bool
	watched bool
}

// journalChunk is the most of the journal's growth read at once (see pullJournal).
const journalChunk = 1 << 20

// JournalPath is the change journal's path relative to .ai-pm.
const JournalPath = "runtime/changes.log"

func (s *Store) journalPath() string { return s.path(JournalPath) }

// noteWrite appends rel (a path under .ai-pm) to the change journal. The caller holds the
// store lock and has just replaced the file. A journal that cannot be written costs
// other processes freshness only until their watcher reports the file, so it is not an
// error of the write.
func (s *Store) noteWrite(rel string) {
	p := s.journalPath()
	if fi, err := os.Lstat(p); err == nil && fi.Size() > journalMax {
		writeFileAtomic(p, nil, 0o644)
	}
	f, err := openSafe(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644, 0)
	if err != nil {
		return
	}
	f.Write([]byte(rel + "\n"))
	f.Close()
}

// pullJournal reads what other writers appended to the journal since the last look and
// marks those paths in the caches. A journal that was started anew marks everything.
func (s *Store) pullJournal() {
	j := &s.journal
	j.mu.Lock()
	defer j.mu.Unlock()
	f, err := openRead(s.journalPath(), 0)
	if err != nil {
		if !j.started {
			j.started = true
		}
		if j.off > 0 || j.ino != 0 {
			j.off, j.ino = 0, 0
			s.markAll()
		}
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return
	}
	ino := fileIno(fi)
	if !j.started {
		// Everything before now is covered by the first full read of each cache.
		j.started, j.ino, j.off = true, ino, fi.Size()
		return
	}
	if ino != j.ino || fi.Size() < j.off {
		j.ino, j.off = ino, 0
		s.markAll()
	}
	if fi.Size() == j.off {
		return
	}
	if fi.Size()-j.off > journalChunk {
		// More than a chunk since the last look (a burst of writes, or a file grown by
		// hand: a sparse file of gigabytes): reading it would cost memory and time in
		// proportion, while comparing every cached file costs what the store holds. So
		// the caches are rescanned and the journal is followed from its end.
		j.off = fi.Size()
		s.markAll()
		return
	}
	buf := make([]byte, fi.Size()-j.off)
	n, err := f.ReadAt(buf, j.off)
	if err != nil && !errors.Is(err, io.EOF) {
		return
	}
	buf = buf[:n]
	end := bytes.LastIndexByte(buf, '\n')
	if end < 0 {
		return
	}
	for _, line := range bytes.Split(buf[:end], []byte{'\n'}) {
		s.markPath(string(line))
	}
	j.off += int64(end + 1)
}

// Watched tells the store that a watcher of its directory reports every change through
// Changed from now on, so queries trust the cache between reports instead of comparing
// every file. Call it after the watcher is watching.
func (s *Store) Watched() {
	s.journal.mu.Lock()
	s.journal.watched = true
	s.journal.mu.Unlock()
	s.markAll() // whatever happened before the watcher started
}

func (s *Store) watched() bool {
	s.journal.mu.Lock()
	defer s.journal.mu.Unlock()
	return s.journal.watched
}

// Changed is the watcher's report: paths relative to .ai-pm, slash-separated, that may have
// changed; an empty path means events were lost and anything may have changed.
func (s *Store) Changed(paths ...string) {
	for _, p := range paths {
		if p == "" {
			s.markAll()
			continue
		}
		s.markPath(p)
	}
}

// markPath routes one changed path to the cache of its directory. A whole directory (a
// checkout that replaced it, a rename) is a rescan of that cache.
func (s *Store) markPath(rel string) {
	parts := strings.Split(rel, "/")
	for _, c := range s.caches() {
		if parts[0] != c.dirName() {
			continue
		}
		switch {
		case len(parts) == 1: // the whole directory
			c.markAll()
		case c.nested():
			c.mark(parts[1]) // agents/<id> or anything in it
		case len(parts) == 2:
			if id, ok := strings.CutSuffix(parts[1], ".json"); ok {
				c.mark(id)
			}
		}
	}
}

func (s *Store) markAll() {
	for _, c := range s.caches() {
		c.markAll()
	}
}

// anyCache is what the journal and the watcher need of a dirCache.
type anyCache interface {
	dirName() string
	nested() bool
	mark(id string)
	markAll()
}

func (c *dirCache[T]) dirName() string { return c.dir }
func (c *dirCache[T]) nested() bool    { return c.leaf != "" }

func (s *Store) caches() []anyCache {
	return []anyCache{s.tasks, s.convs, s.dlgs, s.agents}
}
