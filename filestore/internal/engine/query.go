package engine

import "sort"

// IDIndex maps a key to a set of entity ids.
type IDIndex map[string]map[string]struct{}

func (x IDIndex) Move(id string, old, cur []string) {
	for _, k := range old {
		SetDel(x, k, id)
	}
	for _, k := range cur {
		SetAdd(x, k, id)
	}
}

// Probe is one constraint of a listing: the entities under any of keys in index idx.
type Probe struct {
	Idx  int
	Keys []string
}

// Narrowest returns the ids of the smallest of the probes' sets, sizing each first and
// building only that one (a key's set held in the index file is built id by id, and the
// largest, an agent's history, grows with the project); false when there is no probe.
// The caller checks the other probes on each id's keys. The set must not be changed.
func Narrowest[T any](c *Cache[T], probes ...Probe) (map[string]struct{}, bool) {
	if len(probes) == 0 {
		return nil, false
	}
	best, bestN := 0, -1
	for i, p := range probes {
		n := 0
		for _, k := range p.Keys {
			n += c.LookupSize(p.Idx, k)
		}
		if bestN < 0 || n < bestN {
			best, bestN = i, n
		}
	}
	p := probes[best]
	if len(p.Keys) == 1 {
		return c.Lookup(p.Idx, p.Keys[0]), true
	}
	set := map[string]struct{}{}
	for _, k := range p.Keys {
		for id := range c.Lookup(p.Idx, k) {
			set[id] = struct{}{}
		}
	}
	return set, true
}

// Pick returns the ids of a candidate set, or of every cached entity, sorted.
func Pick[T any](c *Cache[T], set map[string]struct{}, narrowed bool) []string {
	var ids []string
	if narrowed {
		for id := range set {
			ids = append(ids, id)
		}
	} else {
		for id, e := range c.ents {
			if e.readable() {
				ids = append(ids, id)
			}
		}
		c.eachColdLocked(func(id string) { ids = append(ids, id) })
	}
	sort.Strings(ids)
	return ids
}

// emptySet stands for a filter key with no entity: it narrows to nothing.
var emptySet = map[string]struct{}{}

// Keyed is one index key a query asks for: secondary index Ix under Key.
type Keyed struct {
	Ix  int
	Key string
}

func SetAdd(m map[string]map[string]struct{}, k, id string) {
	s := m[k]
	if s == nil {
		s = map[string]struct{}{}
		m[k] = s
	}
	s[id] = struct{}{}
}

func SetDel(m map[string]map[string]struct{}, k, id string) {
	if s := m[k]; s != nil {
		delete(s, id)
		if len(s) == 0 {
			delete(m, k)
		}
	}
}

// Do runs fn holding the cache's mutex, without bringing the cache up to date: for a
// caller that did (With, Sync) and reads on. fn must not keep the cached values.
func (c *Cache[T]) Do(fn func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fn()
}

// Entry returns what the cache holds of id without reading its file: its index keys
// (nil when the file did not parse) and the identity of the file they came from; ok is
// false for an id the cache does not have. The caller holds the cache.
func (c *Cache[T]) Entry(id string) (keys []string, st Stamp, ok bool) {
	e := c.entry(id)
	if e == nil {
		return nil, Stamp{}, false
	}
	return e.k, e.st, true
}

// HeldKeys returns the index keys of id when the cache holds it in memory (unfinished
// work, or read since the index file was), nil otherwise or when its file did not parse.
// The caller holds the cache.
func (c *Cache[T]) HeldKeys(id string) []string {
	if e := c.ents[id]; e != nil {
		return e.k
	}
	return nil
}

// HeldInFull tells whether the value of id is in memory, parsed or as the index file's
// JSON: Get then reads no file. The caller holds the cache.
func (c *Cache[T]) HeldInFull(id string) bool {
	e := c.ents[id]
	return e != nil && (e.v != nil || e.raw != "")
}

// EachHeld calls fn with the id of every entity held in memory, in no order. The caller
// holds the cache.
func (c *Cache[T]) EachHeld(fn func(id string)) {
	for id := range c.ents {
		fn(id)
	}
}

// EachEntry calls fn with every entity the cache knows, held in memory or in the index
// file's finished part, with its index keys (nil when its file did not parse; fn must
// not keep them) and its file's identity as last seen (zero when the index file does
// not say). The caller holds the cache.
func (c *Cache[T]) EachEntry(fn func(id string, keys []string, st Stamp)) {
	for id, e := range c.ents {
		fn(id, e.k, e.st)
	}
	if c.cold == nil {
		return
	}
	stamps, ok := c.cold.allStamps()
	var buf []string
	for i := range c.cold.n {
		id := c.cold.id(i)
		if _, gone := c.shadow[id]; gone {
			continue
		}
		var st Stamp
		if ok {
			st = StampIn(stamps, i)
		}
		buf = c.cold.appendRecKeys(buf[:0], i)
		fn(id, buf, st)
	}
}

// ColdMatches returns how many finished entities of the index file are filed under every
// key of cons and still are what their record says, and a function that returns the ids
// of those after the id after, in id order, one per call (false past the last). Each
// record is looked at only when next reaches it. The caller holds the cache.
func (c *Cache[T]) ColdMatches(cons []Keyed, after string) (n int, next func() (string, bool)) {
	cold := c.coldMatchLocked(cons)
	n = cold.len() - c.coldShadowedIn(cold)
	j := sort.Search(cold.len(), func(j int) bool { return c.cold.id(int(cold.at(j))) > after })
	next = func() (string, bool) {
		for ; j < cold.len(); j++ {
			id := c.cold.id(int(cold.at(j)))
			if _, gone := c.shadow[id]; !gone {
				j++
				return id, true
			}
		}
		return "", false
	}
	return n, next
}
