package filestore

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The files are the truth; what a Store keeps in memory is a cache of them that can be
// thrown away at any moment without changing an answer. Each entity directory that a hot
// path scans (tasks/, conversations/, delegations/) has a dirCache: every file parsed once,
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

// journalMax is the size past which the writer that finds the journal larger starts a new
// one; readers that see a new journal re-check every cached file by identity.
const journalMax = 16 << 20

// Stamp identifies the content a file had when it was read: an atomic write makes a new
// inode, an in-place edit a new size or modification time.
type Stamp struct {
	Ino   uint64
	Size  int64
	Mtime int64
	Ctime int64 // catches an in-place edit that keeps the size and sets the mtime back
}

func stampOf(fi os.FileInfo) Stamp {
	return Stamp{Ino: fileIno(fi), Size: fi.Size(), Mtime: fi.ModTime().UnixNano(), Ctime: fileCtime(fi)}
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

// dirCache caches the JSON entities of one directory under .ai-pm, by id.
type dirCache[T any] struct {
	d      *Dir
	dir    string // relative to .ai-pm, e.g. "tasks"
	// valid tells a name of the directory that is an entity's id (the domain's rule).
	valid func(id string) bool
	// nested: each entity is dir/<id>/<leaf> (agents/<id>/agent.json), not dir/<id>.json.
	leaf string
	read func(id string) (*T, error)
	// keys projects a value on what the secondary indexes file it under (nil: no index).
	keys func(*T) []string
	// done tells a finished entity, held as its keys only and read on demand (nil: none).
	done func(*T) bool
	// doneKeys tells the same from an entity's keys, for one known only from the journal
	// (nil: such an entity is read to tell).
	doneKeys func(k []string) bool
	// index keeps secondary indexes in step: called under mu with the old keys (nil if
	// none) and the new ones (nil when removed or unreadable).
	index func(id string, old, cur []string)
	// change, if not nil, is told of each change of an entry's keys (setLocked), not of
	// entries moving between memory and the index file; reset starts it over.
	change func(id string, old, cur []string)
	// settle, if not nil, is called once the cache is up to date, before a query reads
	// it: what a load filled in bulk is put in order.
	settle func()
	// reset empties the secondary indexes before a full load.
	reset func()
	// persist keeps a copy of the cache in runtime/index/ (persist.go), so that the next
	// process starts from it instead of reading every file.
	persist bool
	// checked: a query has compared the cache with the files (Store.OneShot).
	checked atomic.Bool
	// sets returns secondary index i of the entries held in memory; slot maps a key's
	// position (keys) to its index; nidx is how many there are (cold.go).
	sets func(i int) idIndex
	slot func(pos int) int
	nidx int
	// minKeys is how many keys every value has (the fixed ones).
	minKeys int

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

func newDirCache[T any](d *Dir, dir string, valid func(id string) bool, read func(id string) (*T, error)) *dirCache[T] {
	c := &dirCache[T]{d: d, dir: dir, valid: valid, read: read, dirty: map[string]struct{}{},
		index: func(string, []string, []string) {}, reset: func() {}}
	d.cacheList = append(d.cacheList, c)
	return c
}

// entryOf is the cache entry of a value read at st (v nil: unreadable).
func (c *dirCache[T]) entryOf(v *T, st Stamp) *cacheEntry[T] {
	e := &cacheEntry[T]{v: v, st: st}
	if v == nil || c.keys == nil {
		return e
	}
	e.k = c.keys(v)
	if c.done != nil && c.done(v) {
		e.v = nil
	}
	return e
}

// setLocked replaces id's entry (nil: removes it) and keeps the indexes in step.
func (c *dirCache[T]) setLocked(id string, e *cacheEntry[T]) {
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
	c.index(id, oldK, curK)
	if c.change != nil {
		c.change(id, oldK, curK)
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

// changedSince returns the ids changed after generation g, up to now, and false when
// they are no longer all remembered. The caller holds mu.
func (c *dirCache[T]) changedSince(g uint64) ([]string, bool) {
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
func (c *dirCache[T]) know(id string, st Stamp, keys []string) bool {
	if c.keys == nil || len(keys) < c.minKeys || !c.validID(id) {
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
func (c *dirCache[T]) knowLocked(id string, kw knownWrite) bool {
	st, regular, err := lstatStamp(c.file(id))
	if err != nil || !regular || st != kw.st {
		return false
	}
	if old := c.entry(id); old != nil && old.st == kw.st {
		return true // already held as it is
	}
	c.setLocked(id, &cacheEntry[T]{k: kw.keys, st: kw.st, lazy: true})
	return true
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

// cachedCopy returns a copy (clone) of id's value when a query may take it from the
// cache, nil when its file must be read. A query of a process that holds the cache (a
// server) is answered from it: a write by another process reaches it through the journal,
// an edit beside aipm through the watcher. Under the store lock the file is read, so that
// a write starts from the file as it is this instant, an edit not yet reported included.
// A cache not loaded yet (a one-shot command) is not loaded for one entity, and an entity
// the cache does not have is read for the file's own error.
func (c *dirCache[T]) cachedCopy(id string, clone func(*T) *T) *T {
	c.mu.Lock()
	loaded := c.loaded
	c.mu.Unlock()
	if c.d.inLock.Load() || !loaded {
		return nil
	}
	var out *T
	if err := c.with(func() {
		if v := c.get(id); v != nil {
			out = clone(v)
		}
	}); err != nil {
		return nil
	}
	return out
}

// with brings the cache up to date and runs fn on it, holding the cache's mutex: fn must
// not keep or hand out the cached values, only copies.
func (c *dirCache[T]) with(fn func()) error {
	check := !c.d.watched() && !c.d.inLock.Load() && !(c.d.oneShot.Load() && c.checked.Load())
	return c.sync(check, fn)
}

// sync brings the cache up to date and runs fn on it. Only what the journal and the
// watcher named is re-checked; check (a process without a watcher asks for it on each
// query) also looks at the directory and at the files held in full (checkLocked).
func (c *dirCache[T]) sync(check bool, fn func()) error {
	pos := c.d.pullJournal()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.syncLocked(check, pos); err != nil {
		return err
	}
	if check {
		c.checked.Store(true)
	}
	if c.settle != nil {
		c.settle()
	}
	fn()
	return nil
}

func (c *dirCache[T]) syncLocked(check bool, pos journalPos) error {
	if !c.loaded && c.persist && c.loadIndexLocked(pos) {
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
	if err == nil && c.persist {
		c.maybeSaveLocked(pos)
	}
	return err
}

// checkLocked looks for changes nobody reported: a directory whose identity is not the
// one the journal accounts for (a file created, removed or renamed by hand or by git) is
// compared file by file; otherwise only the files held in full — unfinished work and
// unreadable files, the few that rules look at — are compared by identity. A finished
// entity's file is compared when it is read (get).
func (c *dirCache[T]) checkLocked() error {
	fi, err := os.Lstat(c.d.path(c.dir))
	var now Stamp
	if err == nil {
		now = dirStamp(fi)
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

// dirStamp is what identifies a directory's list of names: its inode and modification
// time (size changes little with the entries of a directory).
func dirStamp(fi os.FileInfo) Stamp {
	return Stamp{Ino: fileIno(fi), Mtime: fi.ModTime().UnixNano()}
}

// validateLocked compares the whole directory with the cache by file identity, reading
// only the files that are new or changed. The first call reads everything.
func (c *dirCache[T]) validateLocked() error {
	// The directory's identity before the listing: a change during it shows next time.
	var at Stamp
	fi, statErr := os.Lstat(c.d.path(c.dir))
	if statErr == nil {
		at = dirStamp(fi)
	}
	ids, err := c.listIDs()
	if err != nil {
		return err
	}
	if !c.loaded {
		c.ents = make(map[string]*cacheEntry[T], len(ids))
		c.setCold(nil)
		c.reset()
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
func (c *dirCache[T]) loadLocked(ids []string) {
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
				out[i] = loaded{v, stampOf(fi), true}
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
	entries, err := os.ReadDir(c.d.path(c.dir))
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
		return e.Name(), e.IsDir() && c.valid(e.Name())
	}
	id, ok := strings.CutSuffix(e.Name(), ".json")
	return id, ok && !e.IsDir() && c.validID(id)
}

func (c *dirCache[T]) validID(id string) bool { return c.valid(id) }

// file is the path of id's file.
func (c *dirCache[T]) file(id string) string {
	if c.leaf != "" {
		return c.d.path(c.dir, id, c.leaf)
	}
	return c.d.path(c.dir, id+".json")
}

// refreshLocked re-reads one file if its identity changed since it was cached, and
// returns the value read (nil when unchanged, absent or unreadable).
func (c *dirCache[T]) refreshLocked(id string) *T {
	if !c.validID(id) {
		return nil
	}
	old := c.entry(id)
	st, regular, err := lstatStamp(c.file(id))
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

// put records a value this process has just written (under the store lock), so the next
// query need not read it back.
func (c *dirCache[T]) put(id string, v *T) {
	fi, err := os.Lstat(c.file(id))
	c.putAt(id, v, fi, err)
}

// putAt is put with the file's identity after the write (fi, or the error of its stat).
func (c *dirCache[T]) putAt(id string, v *T, fi os.FileInfo, statErr error) {
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
	c.setLocked(id, c.entryOf(v, stampOf(fi)))
}

// get returns the value of id (nil if absent or unreadable); the caller holds mu and must
// not change it. A finished entity is read from its file, which is compared with the
// cache on the way, and held from then on: a process holds the history it uses (a
// board that shows it all), not the history it never asks for.
func (c *dirCache[T]) get(id string) *T {
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
	if st, regular, err := lstatStamp(c.file(id)); err != nil || !regular || st != e.st {
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
		if k := c.keys(v); !slices.Equal(k, e.k) {
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

// keysOf returns the index keys of id (nil if absent or unreadable) without reading its
// file; the caller holds mu.
func (c *dirCache[T]) keysOf(id string) []string {
	if e := c.entry(id); e != nil {
		return e.k
	}
	return nil
}

// journal is the process's position in runtime/journal/changes.log.
type journal struct {
	mu sync.Mutex
	// f is the journal file of ino, kept open between looks.
	f *os.File
	// w is the journal file of inode wino, open for appending (append, under wmu).
	wmu     sync.Mutex
	w       *os.File
	wino    uint64
	ino     uint64
	off     int64
	started bool
	watched bool
	// buf is the read buffer of the looks, kept for the next one when small.
	buf []byte
}

// journalPos is a position in the journal: every line before off of the journal file ino.
type journalPos struct {
	ino uint64
	off int64
}

// journalChunk is the most of the journal's growth read at once (see pullJournal).
const journalChunk = 1 << 20

// journalBufKeep is the largest read buffer a store keeps between looks of the journal:
// the lines of a few dozen writes.
const journalBufKeep = 16 << 10

// JournalDir holds the change journal and the record of a send under way: files written
// on every write, which no reader waits on, so no watcher watches the directory
// (UnwatchedDirs). Beside runtime/'s other files, each line appended would wake every
// watching process of the team.
const JournalDir = "runtime/journal"

// JournalPath is the change journal's path relative to .ai-pm.
const JournalPath = JournalDir + "/changes.log"

// legacyRuntimeFiles are where earlier versions kept the journal and the delivery record,
// in runtime/ itself (adoptLegacyRuntime).
var legacyRuntimeFiles = [...]string{"runtime/changes.log", "runtime/delivery.json"}

func (d *Dir) journalPath() string { return d.path(JournalPath) }

// dirBefore is the identity of the directory of rel (a path under .ai-pm) before a write
// into it; the caller holds the store lock and passes it to noteWrite after the write.
func (d *Dir) dirBefore(rel string) Stamp {
	fi, err := os.Lstat(d.path(path.Dir(rel)))
	if err != nil {
		return Stamp{}
	}
	return dirStamp(fi)
}

// noteWrite appends rel (a path under .ai-pm) to the change journal, with the
// modification time its directory had before the write (before, from dirBefore; zero when
// unknown) and has after it, so that a reader can tell whether anything but writes
// through aipm changed the directory in between (cacheEntry, checkLocked). The caller holds
// the store lock and has just replaced the file. A journal that cannot be written costs
// other processes freshness only until their watcher reports the file, so it is not an
// error of the write.
func (d *Dir) noteWrite(rel string, before ...Stamp) {
	d.noteWriteKnown(rel, "", before...)
}

// noteWriteKnown is noteWrite with, for an entity, what the write left (known, from
// written): the file's identity and its index keys. It is written only with the
// directory's times.
func (d *Dir) noteWriteKnown(rel, known string, before ...Stamp) {
	line := rel
	if len(before) > 0 { // before is zero when the directory did not exist
		if fi, err := os.Lstat(d.path(path.Dir(rel))); err == nil {
			line += "\t" + strconv.FormatInt(before[0].Mtime, 10) + "\t" + strconv.FormatInt(fi.ModTime().UnixNano(), 10)
			if known != "" {
				line += "\t" + known
			}
		}
	}
	d.journal.append(d.journalPath(), line+"\n")
}

// append writes one line at the end of the journal at p, starting it anew past
// journalMax. The file is kept open while the path names it; the caller holds the store
// lock, which orders the writers.
func (j *journal) append(p, line string) {
	j.wmu.Lock()
	defer j.wmu.Unlock()
	fi, err := os.Lstat(p)
	if err == nil && fi.Size() > journalMax {
		writeFileAtomic(p, nil, 0o644)
		fi, err = os.Lstat(p)
	}
	if j.w != nil && (err != nil || !fi.Mode().IsRegular() || fileIno(fi) != j.wino) {
		j.w.Close()
		j.w = nil
	}
	if j.w == nil {
		f, err := openSafe(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644, 0)
		if err != nil {
			return
		}
		ofi, err := f.Stat()
		if err != nil {
			f.Close()
			return
		}
		j.w, j.wino = f, fileIno(ofi)
	}
	j.w.WriteString(line)
}

// writeEntity writes v to id's file atomically, under the store lock, and tells every
// process what the write left. Right after the rename (before the directory's fsync, so
// that the line is there before other processes' watchers report the file), the journal
// line gives the file's identity and the value's index keys, so that they bring their
// indexes up to date with a stat instead of reading the file (know); this process's cache
// holds v, which the caller must not change afterwards. The keys are told only when the
// file is still the one written: the temp file's inode, size and modification time.
func writeEntity[T any](c *dirCache[T], id string, v *T) error {
	d := c.d
	rel := c.dir + "/" + id + ".json"
	before := d.dirBefore(rel)
	var fi os.FileInfo
	var statErr error
	noted := false
	err := writeJSONThen(c.file(id), v, 0o644, func(tmp os.FileInfo) {
		fi, statErr = os.Lstat(c.file(id))
		known := ""
		if statErr == nil && c.keys != nil && fileIno(fi) == fileIno(tmp) && fi.Size() == tmp.Size() &&
			fi.ModTime().Equal(tmp.ModTime()) {
			if k, err := json.Marshal(c.keys(v)); err == nil {
				known = stampFields(stampOf(fi)) + "\t" + string(k)
			}
		}
		d.noteWriteKnown(rel, known, before)
		noted = true
	})
	if err != nil {
		if noted {
			c.mark(id) // replaced, but not made durable: read it back
		}
		return err
	}
	c.putAt(id, v, fi, statErr)
	return nil
}

// journalLine is one line of the change journal (noteWriteKnown): the path written; the
// modification times of its directory before and after the write (timed); and, for an
// entity, the identity its file was given and the index keys of what it holds (keys nil
// when the line does not say).
type journalLine struct {
	rel           string
	before, after int64
	timed         bool
	st            Stamp
	keys          []string
}

func parseJournalLine(line string) journalLine {
	rel, rest, _ := strings.Cut(line, "\t")
	l := journalLine{rel: rel}
	if rest == "" {
		return l
	}
	fs := strings.Split(rest, "\t")
	var err1, err2 error
	l.before, err1 = strconv.ParseInt(fs[0], 10, 64)
	if len(fs) > 1 {
		l.after, err2 = strconv.ParseInt(fs[1], 10, 64)
	}
	l.timed = len(fs) > 1 && err1 == nil && err2 == nil
	if !l.timed || len(fs) != 7 {
		return l
	}
	var st Stamp
	var err [4]error
	st.Ino, err[0] = strconv.ParseUint(fs[2], 10, 64)
	st.Size, err[1] = strconv.ParseInt(fs[3], 10, 64)
	st.Mtime, err[2] = strconv.ParseInt(fs[4], 10, 64)
	st.Ctime, err[3] = strconv.ParseInt(fs[5], 10, 64)
	keys, ok := parseJournalKeys(fs[6])
	if errors.Join(err[:]...) != nil || !ok {
		return l
	}
	l.st, l.keys = st, keys
	return l
}

// parseJournalKeys reads the index keys of a journal line: a JSON array of strings, as
// json.Marshal wrote it. Every process reads every line another one writes, and a process
// that starts reads all those since its index file was saved, so the usual form (printable
// ASCII, no space, no escape) is cut apart here; anything else is left to encoding/json.
// ok is false when it is not an array of strings.
func parseJournalKeys(s string) (keys []string, ok bool) {
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
		return parseJournalKeysJSON(s)
	}
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '\\' {
			return parseJournalKeysJSON(s)
		}
	}
	body := s[1 : len(s)-1]
	keys = make([]string, 0, strings.Count(body, ",")+1)
	for body != "" {
		if body[0] != '"' {
			return parseJournalKeysJSON(s)
		}
		end := strings.IndexByte(body[1:], '"')
		if end < 0 {
			return parseJournalKeysJSON(s)
		}
		keys = append(keys, body[1:1+end])
		body = body[2+end:]
		if body == "" {
			break
		}
		if body[0] != ',' || len(body) == 1 {
			return parseJournalKeysJSON(s)
		}
		body = body[1:]
	}
	return keys, true
}

func parseJournalKeysJSON(s string) ([]string, bool) {
	var keys []string
	if json.Unmarshal([]byte(s), &keys) != nil || keys == nil {
		return nil, false
	}
	return keys, true
}

// pullJournal reads what other writers appended to the journal since the last look and
// marks those paths in the caches. A journal that was started anew marks everything. It
// returns the position read to.
func (d *Dir) pullJournal() journalPos {
	j := &d.journal
	j.mu.Lock()
	defer j.mu.Unlock()
	// Most looks find nothing new: a stat says so for a fraction of an open and a read.
	lst, regular, lerr := lstatStamp(d.journalPath())
	if j.started && lerr == nil && regular && lst.Ino == j.ino && lst.Size == j.off {
		return journalPos{j.ino, j.off}
	}
	// The journal grew: read on from the file kept open, while the path still names it.
	if j.f != nil && lerr == nil && regular && lst.Ino == j.ino && lst.Size > j.off {
		return d.readJournalLocked(j.f, lst.Size)
	}
	if j.f != nil {
		j.f.Close()
		j.f = nil
	}
	f, err := openRead(d.journalPath(), 0)
	if err != nil {
		if !j.started {
			j.started = true
		}
		if j.off > 0 || j.ino != 0 {
			j.off, j.ino = 0, 0
			d.markAll()
		}
		return journalPos{}
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return journalPos{j.ino, j.off}
	}
	j.f = f
	ino := fileIno(fi)
	if !j.started {
		// Everything before now is covered by the first read of each cache (from the
		// files, or from its index file and the journal since: loadIndexLocked).
		j.started, j.ino, j.off = true, ino, fi.Size()
		return journalPos{j.ino, j.off}
	}
	if ino != j.ino || fi.Size() < j.off {
		j.ino, j.off = ino, 0
		d.markAll()
	}
	return d.readJournalLocked(f, fi.Size())
}

// readJournalLocked reads the journal f (size: its size now) on from the position of
// the last look, and marks what it names.
func (d *Dir) readJournalLocked(f *os.File, size int64) journalPos {
	j := &d.journal
	if size == j.off {
		return journalPos{j.ino, j.off}
	}
	if size-j.off > journalChunk {
		// More than a chunk since the last look (a burst of writes, or a file grown by
		// hand: a sparse file of gigabytes): reading it would cost memory and time in
		// proportion, while comparing every cached file costs what the store holds. So
		// the caches are rescanned and the journal is followed from its end.
		j.off = size
		d.markAll()
		return journalPos{j.ino, j.off}
	}
	want := int(size - j.off)
	if cap(j.buf) < want {
		j.buf = make([]byte, want)
	}
	buf := j.buf[:want]
	if cap(j.buf) > journalBufKeep {
		j.buf = nil // a burst's buffer is not kept
	}
	n, err := f.ReadAt(buf, j.off)
	if err != nil && !errors.Is(err, io.EOF) {
		return journalPos{j.ino, j.off}
	}
	buf = buf[:n]
	end := bytes.LastIndexByte(buf, '\n')
	if end < 0 {
		return journalPos{j.ino, j.off}
	}
	for rest := buf[:end+1]; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		d.markJournalLine(string(rest[:i]), j.watched)
		rest = rest[i+1:]
	}
	j.off += int64(end + 1)
	return journalPos{j.ino, j.off}
}

// markJournalLine marks the path of one journal line, or tells its cache what the write
// left (know), and follows its directory's modification times.
func (d *Dir) markJournalLine(line string, watched bool) {
	l := parseJournalLine(line)
	if l.keys == nil || !d.knowPath(l) {
		d.markPath(l.rel)
	}
	dir, _, _ := strings.Cut(l.rel, "/")
	{
		if d.onJournal != nil {
			d.onJournal(l.rel, l.before, l.after, l.timed)
		}
	}
	for _, c := range d.caches() {
		if c.dirName() == dir {
			c.follow(l.before, l.after, l.timed, watched)
		}
	}
}

// knowPath hands a journal line that says what a write left to the cache of its
// directory; false when no cache takes it.
func (d *Dir) knowPath(l journalLine) bool {
	dir, name, ok := strings.Cut(l.rel, "/")
	if !ok {
		return false
	}
	id, ok := strings.CutSuffix(name, ".json")
	if !ok {
		return false
	}
	for _, c := range d.caches() {
		if c.dirName() == dir && !c.nested() {
			return c.know(id, l.st, l.keys)
		}
	}
	return false
}

// OneShot tells the store that this process is a command that runs for a moment (`aipm
// status`, `aipm task add`): each cache compares the files it holds with the files at its
// first query, as every query of a process without a watcher does, and its later queries
// read only the journal, which names every write made through aipm. A command makes many
// queries, and at 100,000 tasks each comparison stats thousands of files of unfinished
// work. An edit beside aipm while it runs is seen by the next command.
func (d *Dir) OneShot() { d.oneShot.Store(true) }

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
		d.markPath(p)
	}
}

// markPath routes one changed path to the cache of its directory. A whole directory (a
// checkout that replaced it, a rename) is a rescan of that cache.
func (d *Dir) markPath(rel string) {
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
				c.mark(parts[1])
			}
		case len(parts) == 2:
			if id, ok := strings.CutSuffix(parts[1], ".json"); ok {
				c.mark(id)
			}
		}
	}
}

func (d *Dir) markAll() {
	if d.onMarkAll != nil {
		d.onMarkAll()
	}
	for _, c := range d.caches() {
		c.markAll()
	}
}

// anyCache is what the journal and the watcher need of a dirCache.
type anyCache interface {
	dirName() string
	nested() bool
	leafName() string
	mark(id string)
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
func (c *dirCache[T]) follow(before, after int64, known, watched bool) {
	c.dmu.Lock()
	defer c.dmu.Unlock()
	if !c.dirAtOK || !c.persist {
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
func (c *dirCache[T]) markCheck() {
	c.dmu.Lock()
	c.check = true
	c.dmu.Unlock()
}

func (c *dirCache[T]) dirName() string  { return c.dir }
func (c *dirCache[T]) nested() bool     { return c.leaf != "" }
func (c *dirCache[T]) leafName() string { return c.leaf }

func (d *Dir) caches() []anyCache {
	return d.cacheList
}
