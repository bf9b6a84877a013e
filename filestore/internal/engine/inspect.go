package engine

import (
	"os"
	"sync/atomic"
	"time"
)

// What the tests of the packages above the engine look at and set up in a cache: they
// drive the caches through real entities (filestore's tasks, conversations, ...) and check
// what the engine made of them. Nothing else calls these. Unless a comment says
// otherwise, the caller holds the cache (Lock).

// Lock holds the cache, as With does without bringing it up to date first.
func (c *Cache[T]) Lock() { c.mu.Lock() }

// Unlock releases the cache.
func (c *Cache[T]) Unlock() { c.mu.Unlock() }

// FromIndex tells whether the cache was filled from its index file and has not been
// compared with the files one by one since.
func (c *Cache[T]) FromIndex() bool { return c.fromIndex }

// SetRebuilt makes the next query write the index file, as after a comparison file by
// file.
func (c *Cache[T]) SetRebuilt() { c.rebuilt = true }

// SetSince sets how many entries changed since the index file was written or read.
func (c *Cache[T]) SetSince(n int) { c.since = n }

// SetLoadedAt sets when the cache was filled from its index file.
func (c *Cache[T]) SetLoadedAt(t time.Time) { c.loadedAt = t }

// Shadowed is how many records of the index file's finished part no longer hold.
func (c *Cache[T]) Shadowed() int { return len(c.shadow) }

// ColdLen is how many records the index file's finished part holds.
func (c *Cache[T]) ColdLen() int { return c.cold.coldLen() }

// ColdLean tells whether the finished part's identities were left in the file, not read
// into memory.
func (c *Cache[T]) ColdLean() bool { return c.cold != nil && c.cold.f != nil && c.cold.stamps == "" }

// AddGen moves the change count on by n, as after n changes.
func (c *Cache[T]) AddGen(n uint64) { c.gen += n }

// WrapRead replaces the function that reads an entity's file with wrap's, which may call
// the one it is given. The caller does not hold the cache.
func (c *Cache[T]) WrapRead(wrap func(read func(id string) (*T, error)) func(id string) (*T, error)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.read = wrap(c.read)
}

// EntryInfo is what a cache holds of one entity.
type EntryInfo[T any] struct {
	Parsed bool     // its value is in memory, parsed
	Value  *T       // that value (do not change it)
	Raw    bool     // its JSON from the index file is in memory, to parse when asked for
	Keys   []string // its index keys; nil when its file did not parse
	Lazy   bool     // known from a journal line only: its file is read when asked for
}

func infoOf[T any](e *cacheEntry[T]) EntryInfo[T] {
	return EntryInfo[T]{Parsed: e.v != nil, Value: e.v, Raw: e.raw != "", Keys: e.k, Lazy: e.lazy}
}

// EntryInfo returns what the cache holds of id; ok is false when it has nothing.
func (c *Cache[T]) EntryInfo(id string) (info EntryInfo[T], ok bool) {
	e := c.entry(id)
	if e == nil {
		return EntryInfo[T]{}, false
	}
	return infoOf(e), true
}

// ParseIndexRecord reads one live record of an index file as a start does; ok is false
// for a record the start would refuse. The caller need not hold the cache.
func (c *Cache[T]) ParseIndexRecord(r string) (id string, info EntryInfo[T], ok bool) {
	id, e, ok := c.parseRecord(r)
	if !ok {
		return "", EntryInfo[T]{}, false
	}
	return id, infoOf(e), true
}

// IndexFileRecords checks the index file at path, of the directory dir, whole and
// returns its live records.
func IndexFileRecords(path, dir string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	_, recs, _, err := parseIndex(data, dir)
	return recs, err
}

// IndexPath is the path of the cache's index file. The caller need not hold the cache.
func (c *Cache[T]) IndexPath() string { return c.indexPath() }

// IndexJournalPos returns where in the journal the index file on disk was written. The
// caller need not hold the cache.
func (c *Cache[T]) IndexJournalPos() (JournalPos, error) {
	h, err := c.readIndexHeader()
	return h.journal, err
}

// SaveIndexLocked writes the index file if it is due, as a query does, pos being where
// the journal was read to.
func (c *Cache[T]) SaveIndexLocked(pos JournalPos) { c.maybeSaveLocked(pos) }

// LockIndex takes the lock of the index file, which one process holds while it writes
// the file; ok is false when another holds it. The caller need not hold the cache.
func (c *Cache[T]) LockIndex() (unlock func(), ok bool) { return c.lockIndex() }

// ListIDs lists the ids of the directory's entities from the directory alone. The caller
// need not hold the cache.
func (c *Cache[T]) ListIDs() ([]string, error) { return c.listIDs() }

// IndexFileEntities checks the index file at path whole, for the directory dir whose
// entities have nidx secondary indexes and minKeys fixed keys, and says how many entities
// it holds.
func IndexFileEntities(path, dir string, nidx, minKeys int) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	_, recs, coldPart, err := parseIndex(data, dir)
	if err != nil {
		return 0, err
	}
	cold, err := parseCold(coldPart, nidx, minKeys, true)
	if err != nil {
		return 0, err
	}
	return len(recs) + cold.n, nil
}

// WriteIndexFile writes an index file's bytes as a save does (atomically, durably): the
// floor of a save.
func WriteIndexFile(p string, data []byte) error { return writeIndexFile(p, data) }

// The pace of the index file's saves (persist.go), for tests that step past it.
const (
	IndexLag        = indexLag
	IndexStartLag   = indexStartLag
	IndexSaveEvery  = indexSaveEvery
	IndexStartGrace = indexStartGrace
	RecentChanges   = recentChanges
	IndexFormat     = indexFormat
)

// openHook, when set, is called with the path of every file Open opens (OnOpen).
var openHook atomic.Pointer[func(path string)]

// OnOpen makes every Open (and so every read of a store file) call fn with the file's path
// first, until restore is called: tests count the reads of a file. fn may be called from
// several goroutines at once.
func OnOpen(fn func(path string)) (restore func()) {
	old := openHook.Swap(&fn)
	return func() { openHook.Store(old) }
}
