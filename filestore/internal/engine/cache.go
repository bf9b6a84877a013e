package engine

import (
	"encoding/json"
	"errors"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The files are the truth; what a Store keeps in memory is a cache of them that can be
// thrown away at any moment without changing an answer. Each entity directory that a hot
// path scans (tasks/, conversations/, delegations/) has a Cache: every file parsed once,
// kept with the identity it was read at (inode, size, modification time), and re-read only
// when something says it may have changed:
//
//   - the change journal, runtime/journal/changes.log: every write through aipm, by any process,
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

// Stamp identifies the content a file had when it was read: an atomic write makes a new
// inode, an in-place edit a new size or modification time.
type Stamp struct {
	Ino   uint64
	Size  int64
	Mtime int64
	Ctime int64 // catches an in-place edit that keeps the size and sets the mtime back
}

func StampOf(fi os.FileInfo) Stamp {
	return Stamp{Ino: FileIno(fi), Size: fi.Size(), Mtime: fi.ModTime().UnixNano(), Ctime: FileCtime(fi)}
}

// cacheEntry is one file as last read. v is the parsed value of a file the cache holds;
// a finished entity (a done task, an ended conversation) is held as its index keys only
// and read from its file when asked for. k and v are both nil when the file did not parse.
type cacheEntry[T any] struct {
	v  *T
	k  []string
	st Stamp
	// raw is the JSON of an unfinished entity from the index file, parsed when first
	// asked for (v is nil until then).
	raw string
	// lazy: k and st came from the journal (know), and the file is read when first asked
	// for; until then v is nil, whether the entity is finished or not.
	lazy bool
}

// readable tells whether the file parsed.
func (e *cacheEntry[T]) readable() bool { return e.v != nil || e.k != nil }

// Cache caches the JSON entities of one directory under .ai-pm, by id.
type Cache[T any] struct {
	d   *Dir
	dir string // relative to .ai-pm, e.g. "tasks"
	// valid tells a name of the directory that is an entity's id (the domain's rule).
	valid func(id string) bool
	// nested: each entity is dir/<id>/<Leaf> (agents/<id>/agent.json), not dir/<id>.json.
	Leaf string
	read func(id string) (*T, error)
	// Keys projects a value on what the secondary indexes file it under (nil: no index).
	Keys func(*T) []string
	// Done tells a finished entity, held as its keys only and read on demand (nil: none).
	Done func(*T) bool
	// DoneKeys tells the same from an entity's keys, for one known only from the journal
	// (nil: such an entity is read to tell).
	DoneKeys func(k []string) bool
	// Index keeps secondary indexes in step: called under mu with the old keys (nil if
	// none) and the new ones (nil when removed or unreadable).
	Index func(id string, old, cur []string)
	// Change, if not nil, is told of each Change of an entry's keys (setLocked), not of
	// entries moving between memory and the index file; reset starts it over.
	Change func(id string, old, cur []string)
	// Settle, if not nil, is called once the cache is up to date, before a query reads
	// it: what a load filled in bulk is put in order.
	Settle func()
	// Reset empties the secondary indexes before a full load.
	Reset func()
	// Persist keeps a copy of the cache in runtime/index/ (Persist.go), so that the next
	// process starts from it instead of reading every file.
	Persist bool
	// checked: a query has compared the cache with the files (Store.OneShot).
	checked atomic.Bool
	// Sets returns secondary index i of the entries held in memory; slot maps a key's
	// position (keys) to its index; nidx is how many there are (cold.go).
	Sets func(i int) IDIndex
	Slot func(pos int) int
	NIdx int
	// MinKeys is how many keys every value has (the fixed ones).
	MinKeys int

	mu     sync.Mutex
	loaded bool
	ents   map[string]*cacheEntry[T]
	// gen counts the changes of entries since the cache was made: the same count means
	// the same content. recent holds the ids of the latest changes, by gen.
	gen    uint64
	recent []string
	// since counts the entries changed since the index file was last written or read;
	// rebuilt says the directory was compared file by file since then.
	since   int
	rebuilt bool
	// loadedAt is when the cache was filled from its index file (indexStartGrace).
	loadedAt time.Time
	// coldStale: a record of the index file's cold part was found not to hold by a
	// comparison with its file, which no journal line tells: the file is written anew.
	coldStale bool
	// fromIndex: the cache was filled from its index file and has not been compared file
	// by file since.
	fromIndex bool
	// cold holds the finished entities of the index file, not held in memory; shadow the
	// ids among them whose record no longer holds (changed or removed since): ents, or
	// nothing, says what they are now.
	cold   *coldIndex
	shadow map[string]uint32 // id → the ordinal of its record in cold

	dmu   sync.Mutex // guards what follows, written by the journal and the watcher
	dirty map[string]struct{}
	// known: what writes through aipm left, by id, from the journal (know).
	known map[string]knownWrite
	// rescan asks for a comparison of every file with the cache; check for a look at the
	// directory and at the files held in full (see checkLocked).
	rescan, check bool
	// dirAt is the directory's identity once every change to it made through aipm is
	// applied: a different one means someone else created, removed or renamed a file.
	dirAt   Stamp
	dirAtOK bool
	// unsure: a change beside aipm was seen while watched (follow); the index file is not
	// written until the next comparison file by file.
	unsure bool
}

func NewCache[T any](d *Dir, dir string, valid func(id string) bool, read func(id string) (*T, error)) *Cache[T] {
	c := &Cache[T]{d: d, dir: dir, valid: valid, read: read, dirty: map[string]struct{}{},
		Index: func(string, []string, []string) {}, Reset: func() {}}
	d.cacheList = append(d.cacheList, c)
	return c
}

// entryOf is the cache entry of a value read at st (v nil: unreadable).
func (c *Cache[T]) entryOf(v *T, st Stamp) *cacheEntry[T] {
	e := &cacheEntry[T]{v: v, st: st}
	if v == nil || c.Keys == nil {
		return e
	}
	e.k = c.Keys(v)
	if c.Done != nil && c.Done(v) {
		e.v = nil
	}
	return e
}

// setLocked replaces id's entry (nil: removes it) and keeps the indexes in step.
func (c *Cache[T]) setLocked(id string, e *cacheEntry[T]) {
	var oldK []string
	if old := c.entry(id); old != nil {
		oldK = old.k
	}
	c.shadowLocked(id)
	if e == nil {
		delete(c.ents, id)
	} else {
		id = strings.Clone(id) // perhaps a part of the index file's bytes
		c.ents[id] = e
	}
	var curK []string
	if e != nil {
		curK = e.k
	}
	c.Index(id, oldK, curK)
	if c.Change != nil {
		c.Change(id, oldK, curK)
	}
	c.since++
	c.gen++
	if c.recent == nil {
		c.recent = make([]string, recentChanges)
	}
	c.recent[c.gen%recentChanges] = id
}

// recentChanges is how many of the latest changed ids a cache remembers (changedSince).
const recentChanges = 4096

// ChangedSince returns the ids changed after generation g, up to now, and false when
// they are no longer all remembered. The caller holds mu.
func (c *Cache[T]) ChangedSince(g uint64) ([]string, bool) {
	if g > c.gen || c.gen-g > recentChanges-1 || c.recent == nil && c.gen != g {
		return nil, false
	}
	var ids []string
	for i := g + 1; i <= c.gen; i++ {
		ids = append(ids, c.recent[i%recentChanges])
	}
	return ids, true
}

// knownWrite is what a write through aipm left in a file, as its journal line says.
type knownWrite struct {
	st   Stamp
	keys []string
}

// know records what the journal says a write left in the file of id: its identity and
// index keys. The next query takes them with a stat of the file instead of a read, if the
// file still has that identity (knowLocked).
func (c *Cache[T]) know(id string, st Stamp, keys []string) bool {
	if c.Keys == nil || len(keys) < c.MinKeys || !c.validID(id) {
		return false
	}
	c.dmu.Lock()
	if c.known == nil {
		c.known = map[string]knownWrite{}
	}
	c.known[id] = knownWrite{st, keys}
	c.dmu.Unlock()
	return true
}

// knowLocked applies what a journal line said a write left, and reports whether it
// could: the file must still have the identity the line names. The entity's content is
// read when first asked for (get).
func (c *Cache[T]) knowLocked(id string, kw knownWrite) bool {
	st, regular, err := LstatStamp(c.file(id))
	if err != nil || !regular || st != kw.st {
		return false
	}
	if old := c.entry(id); old != nil && old.st == kw.st {
		return true // already held as it is
	}
	c.setLocked(id, &cacheEntry[T]{k: kw.keys, st: kw.st, lazy: true})
	return true
}

// Mark records that the file of id may have changed.
func (c *Cache[T]) Mark(id string) {
	c.dmu.Lock()
	c.dirty[id] = struct{}{}
	c.dmu.Unlock()
}

// markAll asks for a comparison of every file with the cache.
func (c *Cache[T]) markAll() {
	c.dmu.Lock()
	c.rescan = true
	c.dmu.Unlock()
}

// CachedCopy returns a copy (clone) of id's value when a query may take it from the
// cache, nil when its file must be read. A query of a process that holds the cache (a
// server) is answered from it: a write by another process reaches it through the journal,
// an edit beside aipm through the watcher. Under the store lock the file is read, so that
// a write starts from the file as it is this instant, an edit not yet reported included.
// A cache not loaded yet (a one-shot command) is not loaded for one entity, and an entity
// the cache does not have is read for the file's own error.
func (c *Cache[T]) CachedCopy(id string, clone func(*T) *T) *T {
	c.mu.Lock()
	loaded := c.loaded
	c.mu.Unlock()
	if c.d.inLock.Load() || !loaded {
		return nil
	}
	var out *T
	if err := c.With(func() {
		if v := c.Get(id); v != nil {
			out = clone(v)
		}
	}); err != nil {
		return nil
	}
	return out
}

// With brings the cache up to date and runs fn on it, holding the cache's mutex: fn must
// not keep or hand out the cached values, only copies.
func (c *Cache[T]) With(fn func()) error {
	check := !c.d.watched() && !c.d.inLock.Load() && !(c.d.oneShot.Load() && c.checked.Load())
	return c.Sync(check, fn)
}

// Sync brings the cache up to date and runs fn on it. Only what the journal and the
// watcher named is re-checked; check (a process without a watcher asks for it on each
// query) also looks at the directory and at the files held in full (checkLocked).
func (c *Cache[T]) Sync(check bool, fn func()) error {
	pos := c.d.PullJournal()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.syncLocked(check, pos); err != nil {
		return err
	}
	if check {
		c.checked.Store(true)
	}
	if c.Settle != nil {
		c.Settle()
	}
	fn()
	return nil
}

func (c *Cache[T]) syncLocked(check bool, pos JournalPos) error {
	if !c.loaded && c.Persist && c.loadIndexLocked(pos) {
		check = true
	}
	c.dmu.Lock()
	dirty, rescan, known := c.dirty, c.rescan, c.known
	check = check || c.check
	c.dirty, c.rescan, c.check, c.known = map[string]struct{}{}, false, false, nil
	c.dmu.Unlock()
	var err error
	switch {
	case !c.loaded || rescan:
		err = c.validateLocked()
	default:
		// What the journal says of a file settles what the watcher reported of it too: the
		// stat is of now, later than both.
		for id, kw := range known {
			if c.knowLocked(id, kw) {
				delete(dirty, id)
			} else {
				dirty[id] = struct{}{}
			}
		}
		for id := range dirty {
			c.refreshLocked(id)
		}
		if check {
			err = c.checkLocked()
		}
	}
	if err == nil && c.Persist {
		c.maybeSaveLocked(pos)
	}
	return err
}

// checkLocked looks for changes nobody reported: a directory whose identity is not the
// one the journal accounts for (a file created, removed or renamed by hand or by git) is
// compared file by file; otherwise only the files held in full — unfinished work and
// unreadable files, the few that rules look at — are compared by identity. A finished
// entity's file is compared when it is read (get).
func (c *Cache[T]) checkLocked() error {
	fi, err := os.Lstat(c.d.Path(c.dir))
	var now Stamp
	if err == nil {
		now = DirStamp(fi)
	}
	c.dmu.Lock()
	same := c.dirAtOK && now.Mtime == c.dirAt.Mtime && (c.dirAt.Ino == 0 || now.Ino == c.dirAt.Ino)
	c.dmu.Unlock()
	if !same {
		return c.validateLocked()
	}
	for id, e := range c.ents {
		if e.v != nil || e.raw != "" || e.k == nil || e.lazy {
			c.refreshLocked(id)
		}
	}
	return nil
}

// DirStamp is what identifies a directory's list of names: its inode and modification
// time (size changes little with the entries of a directory).
func DirStamp(fi os.FileInfo) Stamp {
	return Stamp{Ino: FileIno(fi), Mtime: fi.ModTime().UnixNano()}
}

// validateLocked compares the whole directory with the cache by file identity, reading
// only the files that are new or changed. The first call reads everything.
func (c *Cache[T]) validateLocked() error {
	// The directory's identity before the listing: a change during it shows next time.
	var at Stamp
	fi, statErr := os.Lstat(c.d.Path(c.dir))
	if statErr == nil {
		at = DirStamp(fi)
	}
	ids, err := c.listIDs()
	if err != nil {
		return err
	}
	if !c.loaded {
		c.ents = make(map[string]*cacheEntry[T], len(ids))
		c.setCold(nil)
		c.Reset()
		c.loadLocked(ids)
	}
	seen := make(map[string]struct{}, len(ids))
	for _, id := range ids {
		seen[id] = struct{}{}
		c.refreshLocked(id)
	}
	for id := range c.ents {
		if _, ok := seen[id]; !ok {
			c.setLocked(id, nil)
		}
	}
	c.eachColdLocked(func(id string) {
		if _, ok := seen[id]; !ok {
			c.setLocked(id, nil)
		}
	})
	c.dmu.Lock()
	c.dirAt, c.dirAtOK, c.unsure = at, true, false
	c.dmu.Unlock()
	c.loaded, c.rebuilt, c.fromIndex = true, true, false
	return nil
}

// loadLocked reads the files of ids into an empty cache, on every core: the first query
// of a process at thousands of tasks is mostly JSON decoding.
func (c *Cache[T]) loadLocked(ids []string) {
	type loaded struct {
		v  *T
		st Stamp
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
				out[i] = loaded{v, StampOf(fi), true}
			}
		}()
	}
	wg.Wait()
	for i, l := range out {
		if l.ok {
			c.setLocked(ids[i], c.entryOf(l.v, l.st))
		}
	}
}

// idOf is the entity id of a directory entry, if it names one.
// listIDs lists the ids of the directory's entities from the directory alone, in
// directory order.
func (c *Cache[T]) listIDs() ([]string, error) {
	entries, err := os.ReadDir(c.d.Path(c.dir))
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

func (c *Cache[T]) idOf(e os.DirEntry) (string, bool) {
	if c.Leaf != "" {
		return e.Name(), e.IsDir() && c.valid(e.Name())
	}
	id, ok := strings.CutSuffix(e.Name(), ".json")
	return id, ok && !e.IsDir() && c.validID(id)
}

func (c *Cache[T]) validID(id string) bool { return c.valid(id) }

// file is the path of id's file.
func (c *Cache[T]) file(id string) string {
	if c.Leaf != "" {
		return c.d.Path(c.dir, id, c.Leaf)
	}
	return c.d.Path(c.dir, id+".json")
}

// refreshLocked re-reads one file if its identity changed since it was cached, and
// returns the value read (nil when unchanged, absent or unreadable).
func (c *Cache[T]) refreshLocked(id string) *T {
	if !c.validID(id) {
		return nil
	}
	old := c.entry(id)
	st, regular, err := LstatStamp(c.file(id))
	if err != nil || !regular {
		if old != nil {
			c.setLocked(id, nil)
		}
		return nil
	}
	if old != nil && old.st == st {
		return nil
	}
	v, err := c.read(id)
	if err != nil {
		v = nil
	}
	e := c.entryOf(v, st)
	if i, ok := c.cold.find(id); ok && !slices.Equal(c.cold.recKeys(i), e.k) {
		// A record of the index file's finished part no longer holds, and no journal line
		// says so (a hand edit in place): the file is written anew, or a process starting
		// from it would file the entity where it was.
		c.coldStale = true
	}
	c.setLocked(id, e)
	return v
}

// Put records a value this process has just written (under the store lock), so the next
// query need not read it back.
func (c *Cache[T]) Put(id string, v *T) {
	fi, err := os.Lstat(c.file(id))
	c.putAt(id, v, fi, err)
}

// putAt is put with the file's identity after the write (fi, or the error of its stat).
func (c *Cache[T]) putAt(id string, v *T, fi os.FileInfo, statErr error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.loaded {
		return
	}
	if statErr != nil {
		c.dmu.Lock()
		c.dirty[id] = struct{}{}
		c.dmu.Unlock()
		return
	}
	c.setLocked(id, c.entryOf(v, StampOf(fi)))
}

// Get returns the value of id (nil if absent or unreadable); the caller holds mu and must
// not change it. A finished entity is read from its file, which is compared with the
// cache on the way, and held from then on: a process holds the history it uses (a
// board that shows it all), not the history it never asks for.
func (c *Cache[T]) Get(id string) *T {
	e := c.ents[id]
	if e == nil {
		if e = c.coldEntry(id); e == nil {
			return nil
		}
	}
	if e.raw != "" {
		v := new(T)
		if err := json.Unmarshal([]byte(e.raw), v); err != nil {
			// Not what aipm wrote (a forged checksum): the file says.
			if v, err = c.read(id); err != nil {
				c.setLocked(id, c.entryOf(nil, e.st))
				return nil
			}
		}
		e.v, e.raw = v, ""
	}
	if e.v != nil || e.k == nil {
		return e.v
	}
	if st, regular, err := LstatStamp(c.file(id)); err != nil || !regular || st != e.st {
		return c.refreshLocked(id)
	}
	v, err := c.read(id)
	if err != nil {
		c.setLocked(id, c.entryOf(nil, e.st))
		return nil
	}
	if e.lazy {
		// Read at the identity the journal named: what the file holds decides the keys.
		e.lazy = false
		if k := c.Keys(v); !slices.Equal(k, e.k) {
			c.setLocked(id, c.entryOf(v, e.st))
			return v
		}
	}
	e.v = v
	if c.ents[id] != e { // from the index file: held from now on
		c.holdLocked(id, e)
	}
	return v
}

// KeysOf returns the index keys of id (nil if absent or unreadable) without reading its
// file; the caller holds mu.
func (c *Cache[T]) KeysOf(id string) []string {
	if e := c.entry(id); e != nil {
		return e.k
	}
	return nil
}

// WriteEntity writes v to id's file atomically, under the store lock, and tells every
// process what the write left. Right after the rename (before the directory's fsync, so
// that the line is there before other processes' watchers report the file), the journal
// line gives the file's identity and the value's index keys, so that they bring their
// indexes up to date with a stat instead of reading the file (know); this process's cache
// holds v, which the caller must not change afterwards. The keys are told only when the
// file is still the one written: the temp file's inode, size and modification time.
func WriteEntity[T any](c *Cache[T], id string, v *T) error {
	d := c.d
	rel := c.dir + "/" + id + ".json"
	before := d.DirBefore(rel)
	var fi os.FileInfo
	var statErr error
	noted := false
	err := WriteJSONThen(c.file(id), v, 0o644, func(tmp os.FileInfo) {
		fi, statErr = os.Lstat(c.file(id))
		known := ""
		if statErr == nil && c.Keys != nil && FileIno(fi) == FileIno(tmp) && fi.Size() == tmp.Size() &&
			fi.ModTime().Equal(tmp.ModTime()) {
			if k, err := json.Marshal(c.Keys(v)); err == nil {
				known = StampFields(StampOf(fi)) + "\t" + string(k)
			}
		}
		d.noteWriteKnown(rel, known, before)
		noted = true
	})
	if err != nil {
		if noted {
			c.Mark(id) // replaced, but not made durable: read it back
		}
		return err
	}
	c.putAt(id, v, fi, statErr)
	return nil
}

// Gen counts the changes of the cache's entries since it was made: the same count means
// the same content. The caller holds the cache (With).
func (c *Cache[T]) Gen() uint64 { return c.gen }

// anyCache is what the journal and the watcher need of a Cache.
type anyCache interface {
	dirName() string
	nested() bool
	leafName() string
	Mark(id string)
	know(id string, st Stamp, keys []string) bool
	markAll()
	follow(before, after int64, known, watched bool)
	markCheck()
}

// follow applies a write through aipm to the directory's expected identity: a directory
// that had another modification time before the write (or a write that does not say,
// known false) was changed by someone else too. Without a watcher, the directory is then
// compared file by file; with one, the watcher reports that change, and the index file is
// not written from this process until the next comparison.
func (c *Cache[T]) follow(before, after int64, known, watched bool) {
	c.dmu.Lock()
	defer c.dmu.Unlock()
	if !c.dirAtOK || !c.Persist {
		return
	}
	if !known || before != c.dirAt.Mtime && after != c.dirAt.Mtime {
		if watched {
			c.unsure = true
		} else {
			c.rescan = true
		}
	}
	c.dirAt.Mtime = after
}

// markCheck asks for checkLocked at the next query.
func (c *Cache[T]) markCheck() {
	c.dmu.Lock()
	c.check = true
	c.dmu.Unlock()
}

func (c *Cache[T]) dirName() string  { return c.dir }
func (c *Cache[T]) nested() bool     { return c.Leaf != "" }
func (c *Cache[T]) leafName() string { return c.Leaf }
