package engine

import (
	"encoding/binary"
	"errors"
	"os"
	"slices"
	"sort"
	"strings"
	"unsafe"
)

// coldIndex is the finished entities of an index file (persist.go) as the file holds them:
// flat arrays read in one piece and never parsed into maps or objects, so that opening it
// costs what reading its bytes costs. It answers, without reading a file or allocating per
// entity: which ids it holds (sorted, binary searched), each one's identity and index keys,
// and for each secondary index the ids filed under a key (a posting list of record
// numbers, ascending, hence in id order). It is never changed: what changed since is
// held by the cache in memory, which shadows the records it replaces (Cache.shadow).
//
// Binary layout (little-endian uint32 unless named otherwise), after the "cold" line:
//
//	n, nidx, nkeys
//	idEnd[n]          end offset of each id in ids (the first starts at 0)
//	stamp[n]          inode, size, mtime, ctime: 4 × int64
//	keyEnd[nkeys]     end offset of each key in keys; keys sorted, so an ordinal orders too
//	recKeyEnd[n]      end of each record's key ordinals in recKeys
//	len, recKeys[len] key ordinals of each record, in the order of its index keys
//	per index: m, (ordinal, postEnd)[m] sorted by ordinal, len, posting[len] record numbers
//	len, ids          the ids, concatenated
//	len, keys         the distinct keys, concatenated
type coldIndex struct {
	data   string // the section; sub-strings of it are the ids and keys handed out
	n      int
	idEnd  string // views of data, 4 bytes an element
	stamps string
	keyEnd string
	recEnd string
	recKey string
	ids    string
	keys   string
	idx    []coldPostings
	// f, when not nil, holds the identities at stampsAt (stamps is then empty): they are
	// read when an entity is compared with its file, not held.
	f        *os.File
	stampsAt int64
}

type coldPostings struct {
	table string // (ordinal, postEnd) pairs, 8 bytes each
	post  string
}

func u32at(s string, i int) uint32 {
	return uint32(s[4*i]) | uint32(s[4*i+1])<<8 | uint32(s[4*i+2])<<16 | uint32(s[4*i+3])<<24
}

func u64at(s string, i int) uint64 {
	return uint64(u32at(s, 2*i)) | uint64(u32at(s, 2*i+1))<<32
}

var errColdLayout = errors.New("bad cold section")

// coldReader cuts the section into its arrays, checking each bound.
type coldReader struct {
	s   string
	err error
}

func (r *coldReader) u32() int {
	if r.err != nil || len(r.s) < 4 {
		r.err = errColdLayout
		return 0
	}
	v := u32at(r.s, 0)
	r.s = r.s[4:]
	return int(v)
}

func (r *coldReader) take(n int) string {
	if r.err != nil || n < 0 || n > len(r.s) {
		r.err = errColdLayout
		return ""
	}
	v := r.s[:n]
	r.s = r.s[n:]
	return v
}

// parseCold reads a cold section whose checksum matched, and checks every offset and
// ordinal in it, so that no later lookup can go out of bounds whatever the bytes say.
func parseCold(raw []byte, nidx, minKeys int, stamps bool) (*coldIndex, error) {
	var data string
	if len(raw) > 0 {
		// raw is never written again: the strings share its bytes.
		data = unsafe.String(&raw[0], len(raw))
	}
	r := &coldReader{s: data}
	x := &coldIndex{data: data}
	x.n = r.u32()
	if got := r.u32(); got != nidx {
		return nil, errColdLayout
	}
	nkeys := r.u32()
	if r.err != nil || x.n > len(data)/4 || nkeys > len(data)/4 {
		return nil, errColdLayout
	}
	x.idEnd = r.take(4 * x.n)
	if stamps {
		x.stamps = r.take(32 * x.n)
	}
	x.keyEnd = r.take(4 * nkeys)
	x.recEnd = r.take(4 * x.n)
	x.recKey = r.take(4 * r.u32())
	for range nidx {
		var p coldPostings
		p.table = r.take(8 * r.u32())
		p.post = r.take(4 * r.u32())
		x.idx = append(x.idx, p)
	}
	x.ids = r.take(r.u32())
	x.keys = r.take(r.u32())
	if r.err != nil || len(r.s) != 0 {
		return nil, errColdLayout
	}
	// Offsets ascend within their blobs; ordinals and record numbers are in range. (That
	// the ids and keys ascend is not checked: out of order, they could only make lookups
	// miss, in a file whose checksum was forged.)
	ascending := func(ends string, n, limit int) bool {
		prev := uint32(0)
		for i := range n {
			v := u32at(ends, i)
			if v < prev || int(v) > limit {
				return false
			}
			prev = v
		}
		return n == 0 || int(prev) == limit
	}
	if !ascending(x.idEnd, x.n, len(x.ids)) || !ascending(x.keyEnd, nkeys, len(x.keys)) ||
		!ascending(x.recEnd, x.n, len(x.recKey)/4) {
		return nil, errColdLayout
	}
	for i := range x.n {
		start := 0
		if i > 0 {
			start = int(u32at(x.recEnd, i-1))
		}
		if int(u32at(x.recEnd, i))-start < minKeys {
			return nil, errColdLayout
		}
	}
	for i := 0; i < len(x.recKey)/4; i++ {
		if int(u32at(x.recKey, i)) >= nkeys {
			return nil, errColdLayout
		}
	}
	for _, p := range x.idx {
		m := len(p.table) / 8
		prevOrd, prevEnd := -1, uint32(0)
		for j := range m {
			ord, end := int(u32at(p.table, 2*j)), u32at(p.table, 2*j+1)
			if ord <= prevOrd || ord >= nkeys || end < prevEnd || int(end) > len(p.post)/4 {
				return nil, errColdLayout
			}
			// Each list ascends: record numbers in id order.
			for k := int(prevEnd); k < int(end); k++ {
				v := u32at(p.post, k)
				if int(v) >= x.n || k > int(prevEnd) && v <= u32at(p.post, k-1) {
					return nil, errColdLayout
				}
			}
			prevOrd, prevEnd = ord, end
		}
		if int(prevEnd) != len(p.post)/4 {
			return nil, errColdLayout
		}
	}
	return x, nil
}

func (x *coldIndex) id(i int) string {
	start := 0
	if i > 0 {
		start = int(u32at(x.idEnd, i-1))
	}
	return x.ids[start:u32at(x.idEnd, i)]
}

func (x *coldIndex) key(o int) string {
	start := 0
	if o > 0 {
		start = int(u32at(x.keyEnd, o-1))
	}
	return x.keys[start:u32at(x.keyEnd, o)]
}

// find returns the record number of id.
func (x *coldIndex) find(id string) (int, bool) {
	if x == nil {
		return 0, false
	}
	i := sort.Search(x.n, func(i int) bool { return x.id(i) >= id })
	return i, i < x.n && x.id(i) == id
}

func (x *coldIndex) stamp(i int) Stamp {
	if x.f != nil {
		// A file cut short since reads as no identity: the entity's file is read again.
		var b [32]byte
		if _, err := x.f.ReadAt(b[:], x.stampsAt+32*int64(i)); err != nil {
			return Stamp{}
		}
		return StampIn(string(b[:]), 0)
	}
	return StampIn(x.stamps, i)
}

// recKeys returns the index keys of record i (sharing the section's bytes).
func (x *coldIndex) recKeys(i int) []string { return x.appendRecKeys(nil, i) }

// appendRecKeys appends the index keys of record i to buf.
func (x *coldIndex) appendRecKeys(buf []string, i int) []string {
	start := 0
	if i > 0 {
		start = int(u32at(x.recEnd, i-1))
	}
	end := int(u32at(x.recEnd, i))
	buf = slices.Grow(buf, end-start)
	for k := start; k < end; k++ {
		buf = append(buf, x.key(int(u32at(x.recKey, k))))
	}
	return buf
}

// allStamps returns every record's identity in one piece (32 bytes each, as stamps
// holds them), read from the file in one read when the section does not hold them;
// false when that read fails.
func (x *coldIndex) allStamps() (string, bool) {
	if x.f == nil {
		return x.stamps, true
	}
	b := make([]byte, 32*x.n)
	if _, err := x.f.ReadAt(b, x.stampsAt); err != nil {
		return "", false
	}
	return string(b), true
}

// StampIn is record i's identity in a block of allStamps.
func StampIn(block string, i int) Stamp {
	return Stamp{Ino: u64at(block, 4*i), Size: int64(u64at(block, 4*i+1)),
		Mtime: int64(u64at(block, 4*i+2)), Ctime: int64(u64at(block, 4*i+3))}
}

// keyOrdinal returns the ordinal of a key.
func (x *coldIndex) keyOrdinal(key string) (int, bool) {
	n := len(x.keyEnd) / 4
	o := sort.Search(n, func(o int) bool { return x.key(o) >= key })
	return o, o < n && x.key(o) == key
}

// posting returns the record numbers filed under key in index idx, ascending (id order),
// as a view of the section (4 bytes each).
func (x *coldIndex) posting(idx int, key string) string {
	if x == nil || idx >= len(x.idx) {
		return ""
	}
	o, ok := x.keyOrdinal(key)
	if !ok {
		return ""
	}
	p := x.idx[idx]
	m := len(p.table) / 8
	j := sort.Search(m, func(j int) bool { return int(u32at(p.table, 2*j)) >= o })
	if j == m || int(u32at(p.table, 2*j)) != o {
		return ""
	}
	start := 0
	if j > 0 {
		start = int(u32at(p.table, 2*j-1))
	}
	return p.post[4*start : 4*u32at(p.table, 2*j+1)]
}

// counts returns how many records each key of index idx files.
func (x *coldIndex) counts(idx int) map[string]int {
	out := map[string]int{}
	if x == nil || idx >= len(x.idx) {
		return out
	}
	p := x.idx[idx]
	prev := 0
	for j := range len(p.table) / 8 {
		end := int(u32at(p.table, 2*j+1))
		out[x.key(int(u32at(p.table, 2*j)))] += end - prev
		prev = end
	}
	return out
}

// coldRec is one finished entity to write in a cold section.
type coldRec struct {
	id   string
	st   Stamp
	keys []string
}

func cmpRecID(a, b coldRec) int { return strings.Compare(a.id, b.id) }

// buildCold writes the cold section of recs (sorted by id here, unless they come so);
// slot maps a key's position to the index it is filed in. At 100,000 finished tasks
// it is the bulk of an index file's save, so it sizes its output once and counts each
// posting list before it fills them, rather than growing either as it goes.
func buildCold(recs []coldRec, nidx int, slot func(pos int) int) []byte {
	if !slices.IsSortedFunc(recs, cmpRecID) {
		slices.SortFunc(recs, cmpRecID)
	}
	keySet := map[string]int{}
	recKeys, idBytes := 0, 0
	for _, r := range recs {
		recKeys += len(r.keys)
		idBytes += len(r.id)
		for _, k := range r.keys {
			keySet[k] = 0
		}
	}
	keys := make([]string, 0, len(keySet))
	keyBytes := 0
	for k := range keySet {
		keys = append(keys, k)
		keyBytes += len(k)
	}
	sort.Strings(keys)
	for o, k := range keys {
		keySet[k] = o
	}
	// Per index, how many records file each key, then where each key's list starts.
	// A key twice in one record (a dependency named twice) is filed once.
	nk := len(keys)
	ords := make([]int32, 0, recKeys) // each record's key ordinals, in order
	count := make([]int32, nidx*nk)
	first := func(from, pos, o int) bool {
		for p := range pos {
			if slot(p) == slot(pos) && int(ords[from+p]) == o {
				return false
			}
		}
		return true
	}
	for _, r := range recs {
		from := len(ords)
		for pos, k := range r.keys {
			o := keySet[k]
			ords = append(ords, int32(o))
			if first(from, pos, o) {
				count[slot(pos)*nk+o]++
			}
		}
	}
	size := 12 + 4*len(recs) + 32*len(recs) + 4*nk + 4*len(recs) + 4 + 4*len(ords) + 8 + idBytes + keyBytes
	listed := make([]int, nidx) // keys with a list, per index
	posted := make([]int, nidx) // record numbers in its lists, per index
	// fill[c] is where list c begins in its index's postings, and its end once filled.
	fill := make([]int32, nidx*nk)
	for i := range nidx {
		at := int32(0)
		for o := range nk {
			c := i*nk + o
			fill[c] = at
			if count[c] > 0 {
				at += count[c]
				listed[i]++
			}
		}
		posted[i] = int(at)
		size += 8 + 8*listed[i] + 4*posted[i]
	}
	post := make([][]uint32, nidx)
	for i := range nidx {
		post[i] = make([]uint32, posted[i])
	}
	at := 0
	for n, r := range recs {
		from := at
		for pos := range r.keys {
			o := int(ords[at])
			at++
			if first(from, pos, o) {
				c := slot(pos)*nk + o
				post[slot(pos)][fill[c]] = uint32(n)
				fill[c]++
			}
		}
	}

	le := binary.LittleEndian
	b := make([]byte, 0, size)
	put := func(v int) { b = le.AppendUint32(b, uint32(v)) }
	put(len(recs))
	put(nidx)
	put(nk)
	end := 0
	for _, r := range recs {
		end += len(r.id)
		put(end)
	}
	for _, r := range recs {
		b = le.AppendUint64(b, r.st.Ino)
		b = le.AppendUint64(b, uint64(r.st.Size))
		b = le.AppendUint64(b, uint64(r.st.Mtime))
		b = le.AppendUint64(b, uint64(r.st.Ctime))
	}
	end = 0
	for _, k := range keys {
		end += len(k)
		put(end)
	}
	end = 0
	for _, r := range recs {
		end += len(r.keys)
		put(end)
	}
	put(len(ords))
	for _, o := range ords {
		put(int(o))
	}
	for i := range nidx {
		put(listed[i])
		for o := range nk {
			if c := i*nk + o; count[c] > 0 {
				put(o)
				put(int(fill[c]))
			}
		}
		put(posted[i])
		for _, v := range post[i] {
			put(int(v))
		}
	}
	put(idBytes)
	for _, r := range recs {
		b = append(b, r.id...)
	}
	put(keyBytes)
	for _, k := range keys {
		b = append(b, k...)
	}
	return b
}

// setCold replaces the index file's part the cache uses (nil: none).
func (c *Cache[T]) setCold(x *coldIndex) {
	if c.cold != nil && c.cold.f != nil && c.cold != x {
		c.cold.f.Close()
	}
	c.cold, c.shadow = x, nil
}

// coldEntry is the entry of id as the index file has it (not held; nil when it has none
// or its record is shadowed). The caller holds mu.
func (c *Cache[T]) coldEntry(id string) *cacheEntry[T] {
	if c.cold == nil {
		return nil
	}
	if _, gone := c.shadow[id]; gone {
		return nil
	}
	i, ok := c.cold.find(id)
	if !ok {
		return nil
	}
	return &cacheEntry[T]{k: c.cold.recKeys(i), st: c.cold.stamp(i)}
}

// entry is what the cache knows of id: held in memory, or in the index file.
func (c *Cache[T]) entry(id string) *cacheEntry[T] {
	if e := c.ents[id]; e != nil {
		return e
	}
	return c.coldEntry(id)
}

// shadowLocked says that the index file's record of id, if any, no longer holds.
func (c *Cache[T]) shadowLocked(id string) {
	if c.cold == nil {
		return
	}
	if i, ok := c.cold.find(id); ok {
		if c.shadow == nil {
			c.shadow = map[string]uint32{}
		}
		c.shadow[id] = uint32(i)
	}
}

// holdLocked keeps in memory an entry read from the index file, unchanged: not a change
// to write back. Its id and keys are copied out of the file's bytes, which a later index
// file replaces.
func (c *Cache[T]) holdLocked(id string, e *cacheEntry[T]) {
	id = strings.Clone(id)
	for i, k := range e.k {
		e.k[i] = strings.Clone(k)
	}
	c.shadowLocked(id)
	c.ents[id] = e
	c.Index(id, nil, e.k)
}

// eachColdLocked calls fn with each id of the index file whose record holds.
func (c *Cache[T]) eachColdLocked(fn func(id string)) {
	if c.cold == nil {
		return
	}
	for i := range c.cold.n {
		id := c.cold.id(i)
		if _, gone := c.shadow[id]; !gone {
			fn(id)
		}
	}
}

// coldPosting returns the ids of the index file filed under key in index idx whose
// record holds, as record numbers in id order.
func (c *Cache[T]) coldPosting(idx int, key string) []uint32 {
	p := c.cold.posting(idx, key)
	out := make([]uint32, 0, len(p)/4)
	for i := 0; i < len(p)/4; i++ {
		r := u32at(p, i)
		if len(c.shadow) > 0 {
			if _, gone := c.shadow[c.cold.id(int(r))]; gone {
				continue
			}
		}
		out = append(out, r)
	}
	return out
}

// Lookup returns the ids filed under key in index idx: those held in memory and those of
// the index file. The caller holds mu and must not change the set.
func (c *Cache[T]) Lookup(idx int, key string) map[string]struct{} {
	hot := c.Sets(idx)[key]
	p := c.cold.posting(idx, key)
	if len(p) == 0 {
		if hot == nil {
			return emptySet
		}
		return hot
	}
	out := make(map[string]struct{}, len(hot)+len(p)/4)
	for id := range hot {
		out[id] = struct{}{}
	}
	for _, r := range c.coldPosting(idx, key) {
		out[c.cold.id(int(r))] = struct{}{}
	}
	return out
}

// Each calls fn with Each id lookup would return, without gathering them in a set: those
// held in memory, then those of the index file. An id may come twice. The caller holds mu.
func (c *Cache[T]) Each(idx int, key string, fn func(id string)) {
	for id := range c.Sets(idx)[key] {
		fn(id)
	}
	p := c.cold.posting(idx, key)
	for i := 0; i < len(p)/4; i++ {
		id := c.cold.id(int(u32at(p, i)))
		if _, gone := c.shadow[id]; !gone {
			fn(id)
		}
	}
}

// LookupSize is about how many ids lookup returns (shadowed records counted).
func (c *Cache[T]) LookupSize(idx int, key string) int {
	return len(c.Sets(idx)[key]) + len(c.cold.posting(idx, key))/4
}

// AllIDs returns the ids of every readable entity.
func (c *Cache[T]) AllIDs() map[string]struct{} {
	n := len(c.ents)
	if c.cold != nil {
		n += c.cold.n
	}
	out := make(map[string]struct{}, n)
	for id, e := range c.ents {
		if e.readable() {
			out[id] = struct{}{}
		}
	}
	c.eachColdLocked(func(id string) { out[id] = struct{}{} })
	return out
}

// CountsLocked counts the entities under each key of index idx.
func (c *Cache[T]) CountsLocked(idx int) map[string]int {
	out := c.cold.counts(idx)
	for _, i := range c.shadow {
		seen := map[string]bool{} // a key twice in a record is filed once
		for pos, k := range c.cold.recKeys(int(i)) {
			if c.Slot(pos) == idx && !seen[k] {
				seen[k] = true
				out[k]--
			}
		}
	}
	for k, ids := range c.Sets(idx) {
		out[k] += len(ids)
	}
	for k, n := range out {
		if n <= 0 {
			delete(out, k)
		}
	}
	return out
}

// coldSeq is a sequence of records of the index file's cold part, by ordinal, in id
// order: a posting list where it lies in the file's bytes, all n records, or ordinals
// picked out by an intersection.
type coldSeq struct {
	list string   // seqList: a posting list (4-byte ordinals)
	ords []uint32 // seqOrds: these
	all  int      // seqAll: 0..all-1
	kind int
}

const (
	seqList = iota
	seqOrds
	seqAll
)

func (q coldSeq) len() int {
	switch q.kind {
	case seqList:
		return len(q.list) / 4
	case seqOrds:
		return len(q.ords)
	}
	return q.all
}

func (q coldSeq) at(i int) uint32 {
	switch q.kind {
	case seqList:
		return u32at(q.list, i)
	case seqOrds:
		return q.ords[i]
	}
	return uint32(i)
}

// has tells whether ordinal r is in the sequence.
func (q coldSeq) has(r uint32) bool {
	n := q.len()
	i := sort.Search(n, func(i int) bool { return q.at(i) >= r })
	return i < n && q.at(i) == r
}

// coldMatchLocked returns the records of the index file filed under every key of cons
// (all of them when cons is empty), in id order, shadowed or not (coldShadowedIn). One
// key's records are its posting list where it lies: a page of a status or of a parent,
// in a project of a hundred thousand finished tasks, does not copy them all.
func (c *Cache[T]) coldMatchLocked(cons []Keyed) coldSeq {
	if c.cold == nil {
		return coldSeq{kind: seqOrds}
	}
	if len(cons) == 0 {
		return coldSeq{all: c.cold.n, kind: seqAll}
	}
	lists := make([]string, len(cons))
	for k, con := range cons {
		lists[k] = c.cold.posting(con.Ix, con.Key)
	}
	if len(lists) == 1 {
		return coldSeq{list: lists[0], kind: seqList}
	}
	slices.SortFunc(lists, func(a, b string) int { return len(a) - len(b) })
	out := make([]uint32, len(lists[0])/4)
	for i := range out {
		out[i] = u32at(lists[0], i)
	}
	for _, l := range lists[1:] {
		n, j := 0, 0
		for _, r := range out {
			for j < len(l)/4 && u32at(l, j) < r {
				j++
			}
			if j < len(l)/4 && u32at(l, j) == r {
				out[n] = r
				n++
			}
		}
		out = out[:n]
	}
	return coldSeq{ords: out, kind: seqOrds}
}

// coldShadowedIn counts the records of q that memory shadows. The shadowed records are
// what changed since the index file was written, few beside a project's history: each is
// looked up in q by its ordinal, rather than q's records among them.
func (c *Cache[T]) coldShadowedIn(q coldSeq) int {
	n := 0
	if len(c.shadow) > q.len()/16 {
		for i := range q.len() {
			if _, gone := c.shadow[c.cold.id(int(q.at(i)))]; gone {
				n++
			}
		}
		return n
	}
	for _, r := range c.shadow {
		if q.has(r) {
			n++
		}
	}
	return n
}

// HeldIDs returns the ids of the readable entities held in memory: every unfinished one.
func (c *Cache[T]) HeldIDs() map[string]struct{} {
	out := make(map[string]struct{}, len(c.ents))
	for id, e := range c.ents {
		if e.readable() {
			out[id] = struct{}{}
		}
	}
	return out
}
