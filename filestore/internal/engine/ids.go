package engine

import (
	"slices"
	"sort"
	"strings"
)

// MaxOf is the highest seq(id) among the ids the cache holds, in memory or in its index
// file, with the directory identity they account for; ok is false when the cache may miss
// a change made beside aipm, or is not loaded yet: a one-shot command lists the directory
// rather than load every entity for one id. seq must grow with the ids' order where it is
// not 0: the index file's records are searched from the last down to the first that has
// a number.
func (c *Cache[T]) MaxOf(seq func(id string) int) (hi int, at Stamp, ok bool) {
	c.mu.Lock()
	loaded := c.loaded
	c.mu.Unlock()
	if !loaded {
		return 0, Stamp{}, false
	}
	err := c.With(func() {
		c.dmu.Lock()
		at, ok = c.dirAt, c.loaded && c.dirAtOK && !c.unsure && !c.rescan
		c.dmu.Unlock()
		if !ok {
			return
		}
		for id := range c.ents {
			hi = max(hi, seq(id))
		}
		// Ids sort by their sequence number: the index file's highest is its last live
		// one that has a number (time-based ids sort first, spent-sequence ones last).
		for j := c.cold.coldLen() - 1; j >= 0; j-- {
			id := c.cold.id(j)
			if _, gone := c.shadow[id]; gone {
				continue
			}
			if n := seq(id); n > 0 {
				hi = max(hi, n)
				break
			}
		}
	})
	return hi, at, ok && err == nil
}

// IDSet is the id of every entity file of a directory as its cache knows it at one
// moment: what a command line needs to abbreviate ids and expand abbreviations, without
// listing the directory.
type IDSet struct {
	hot    []string // the ids held in memory, sorted
	cold   *coldIndex
	shadow map[string]struct{} // ids of cold whose record no longer holds
}

// IDs returns the ids of the entity files, readable or not, from the cache; a process
// without a watcher compares the directory with it first, as every query does.
func (c *Cache[T]) IDs() (*IDSet, error) {
	x := &IDSet{}
	err := c.With(func() {
		x.hot = make([]string, 0, len(c.ents))
		for id := range c.ents {
			x.hot = append(x.hot, id)
		}
		sort.Strings(x.hot)
		x.cold = c.cold
		x.shadow = make(map[string]struct{}, len(c.shadow))
		for id := range c.shadow {
			x.shadow[id] = struct{}{}
		}
	})
	return x, err
}

func (x *IDSet) coldLive(i int) bool {
	_, gone := x.shadow[x.cold.id(i)]
	return !gone
}

func (x *IDSet) coldN() int {
	if x.cold == nil {
		return 0
	}
	return x.cold.n
}

// Has tells whether id is a task file's id.
func (x *IDSet) Has(id string) bool {
	if i := sort.SearchStrings(x.hot, id); i < len(x.hot) && x.hot[i] == id {
		return true
	}
	i, ok := x.cold.find(id)
	return ok && x.coldLive(i)
}

// WithPrefix returns the ids that start with prefix, sorted.
func (x *IDSet) WithPrefix(prefix string) []string {
	var out []string
	for i := sort.SearchStrings(x.hot, prefix); i < len(x.hot) && strings.HasPrefix(x.hot[i], prefix); i++ {
		out = append(out, x.hot[i])
	}
	i, _ := x.cold.find(prefix)
	for ; i < x.coldN() && strings.HasPrefix(x.cold.id(i), prefix); i++ {
		if x.coldLive(i) {
			out = append(out, x.cold.id(i))
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// All returns every id, sorted.
func (x *IDSet) All() []string { return x.WithPrefix("") }

// Short abbreviates id to its shortest prefix no other id of the set shares, at least
// minLen bytes long. An id not in the set is returned whole.
func (x *IDSet) Short(id string, minLen int) string {
	if !x.Has(id) {
		return id
	}
	n := minLen
	// In sorted ids, an id's longest common prefix with any other is with a neighbour.
	if i := sort.SearchStrings(x.hot, id); i > 0 {
		n = max(n, CommonPrefixLen(id, x.hot[i-1])+1)
	}
	if i := sort.SearchStrings(x.hot, id+"\x00"); i < len(x.hot) {
		n = max(n, CommonPrefixLen(id, x.hot[i])+1)
	}
	// The nearest record of the index file on each side that is still an id: live, or
	// shadowed by an entry held in memory (a finished task read since, which hot has).
	// Only the records of removed tasks are passed over. Stopping at live records alone
	// made a listing quadratic: once it had read every finished task, each record was
	// shadowed, and each id scanned to the end of the file.
	i, _ := x.cold.find(id)
	for j := i - 1; j >= 0; j-- {
		if cid := x.cold.id(j); x.coldLive(j) || x.hotHas(cid) {
			n = max(n, CommonPrefixLen(id, cid)+1)
			break
		}
	}
	for j := i; j < x.coldN(); j++ {
		if cid := x.cold.id(j); cid != id && (x.coldLive(j) || x.hotHas(cid)) {
			n = max(n, CommonPrefixLen(id, cid)+1)
			break
		}
	}
	return id[:min(n, len(id))]
}

// hotHas tells whether id is held in memory.
func (x *IDSet) hotHas(id string) bool {
	i, ok := slices.BinarySearch(x.hot, id)
	return ok && i < len(x.hot)
}

// IsLoaded tells whether the cache has been filled.
func (c *Cache[T]) IsLoaded() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.loaded
}

// coldLen is how many records the index file's cold part holds (0 for none).
func (x *coldIndex) coldLen() int {
	if x == nil {
		return 0
	}
	return x.n
}

// CommonPrefixLen is the length of the longest prefix a and b share.
func CommonPrefixLen(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
