package filestore

import (
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Task ids are typed by people, so they are built to stay short (doc.go, "Task ids"):
// "tsk_", a four-digit base32 sequence number whose first digit is 8 to y, two digits naming
// the clone, then 20 random digits. The sequence is one more than the highest in the store,
// minted under the store lock, so ids of one clone differ in their first four digits and
// sort in creation order; ids minted at the same time on two clones differ in the clone
// digits, and the random part keeps them distinct even if those are alike.

const (
	seqDigits = 4
	seqFirst  = 8                    // first digit of the first sequence number: '8'
	seqLast   = 30                   // last first digit of a sequence number: 'y'
	seqUnit   = 32 * 32 * 32         // one step of the first digit
	seqMin    = seqFirst*seqUnit + 1 // tsk_8001…
	seqMax    = (seqLast+1)*seqUnit - 1
)

// taskSeq is the sequence number at the start of a task id (or of its file's name), or 0
// for an id of another shape (a time-based id of an older store, or one minted after the
// sequence ran out).
func taskSeq(id string) int {
	rest, ok := strings.CutPrefix(id, PrefixTask+"_")
	if !ok || len(rest) < seqDigits {
		return 0
	}
	n := 0
	for _, c := range rest[:seqDigits] {
		d := strings.IndexRune(crockford, c)
		if d < 0 {
			return 0
		}
		n = n*32 + d
	}
	if n/seqUnit < seqFirst || n/seqUnit > seqLast {
		return 0
	}
	return n
}

// mintTaskIDs returns n fresh task ids in creation order. The caller holds the store lock, so
// no other process of this clone mints the same sequence numbers.
func (s *Store) mintTaskIDs(n int, now time.Time) ([]string, error) {
	next, err := s.nextTaskSeq()
	if err != nil {
		return nil, err
	}
	out := make([]string, n)
	for i := range out {
		if next > seqMax {
			// The sequence is spent: "z" and a time-based id, which sorts after every other.
			out[i] = PrefixTask + "_z" + NewID(PrefixTask, now)[len(PrefixTask)+1:len(PrefixTask)+1+25]
			continue
		}
		out[i] = seqTaskID(next, s.cloneTag())
		next++
	}
	return out, nil
}

// seqState is what a process knows of the sequence numbers in tasks/ between two mints:
// the highest, as of the directory identity at, once every write the journal names is
// counted. The journal names every task written through aipm; a file made beside aipm (a
// checkout, a hand copy) changes the directory's identity. So a mint under the store lock
// reads the journal and stats the directory instead of listing it: at 100,000 tasks the
// listing cost more than the rest of a write.
type seqState struct {
	mu sync.Mutex
	hi int
	at Stamp
	ok bool
	// listings counts the listings of tasks/ (for tests).
	listings int
}

// journaled counts a journal line naming rel under tasks/, written when the directory's
// modification time went from before to after (known false: the line does not say).
func (q *seqState) journaled(rel string, before, after int64, known bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.ok {
		return
	}
	name := path.Base(rel)
	q.hi = max(q.hi, taskSeq(name))
	if !known || before != q.at.Mtime && after != q.at.Mtime {
		q.ok = false // something else changed the directory in between
		return
	}
	q.at.Mtime = after
}

// forget drops what is known: the journal no longer says what changed.
func (q *seqState) forget() {
	q.mu.Lock()
	q.ok = false
	q.mu.Unlock()
}

// nextTaskSeq is one more than the highest sequence number in tasks/ (at least seqMin).
// The caller holds the store lock.
func (s *Store) nextTaskSeq() (int, error) {
	pos := s.eng.pullJournal() // counts the writes of other processes (journaled)
	fi, statErr := os.Lstat(s.path("tasks"))
	q := &s.seq
	q.mu.Lock()
	known := q.ok
	q.mu.Unlock()
	if !known && statErr == nil && !s.tasks.isLoaded() {
		s.seqFromFile(pos) // a process's first mint, from what the last one left
	}
	q.mu.Lock()
	if statErr == nil && q.ok {
		if now := dirStamp(fi); now.Mtime == q.at.Mtime && now.Ino == q.at.Ino {
			hi := q.hi
			q.mu.Unlock()
			s.saveSeq(pos)
			return max(seqMin, hi+1), nil
		}
	}
	q.ok = false
	q.mu.Unlock()
	defer s.saveSeq(pos)
	// The cache of tasks/ holds every name in it while the directory has the identity the
	// cache accounts for (its last comparison, and every write the journal named since):
	// a server's first mint then reads its cache, not a listing of the directory.
	if statErr == nil {
		now := dirStamp(fi)
		if hi, at, ok := s.tasks.maxSeq(); ok && now.Mtime == at.Mtime && (at.Ino == 0 || now.Ino == at.Ino) {
			q.mu.Lock()
			q.hi, q.at, q.ok = hi, now, true
			q.mu.Unlock()
			return max(seqMin, hi+1), nil
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	// The names alone, unsorted and unvalidated (taskSeq reads only a well-formed number).
	d, err := os.Open(s.path("tasks"))
	if errors.Is(err, os.ErrNotExist) {
		return seqMin, nil
	}
	if err != nil {
		return 0, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	q.listings++
	if err != nil {
		return 0, err
	}
	hi := 0
	for _, name := range names {
		hi = max(hi, taskSeq(name))
	}
	// The identity from before the listing: a change during it shows at the next mint.
	if statErr == nil {
		q.hi, q.at, q.ok = hi, dirStamp(fi), true
	}
	return max(seqMin, hi+1), nil
}

// maxSeq is the highest sequence number among the ids the cache holds, in memory or in
// its index file, with the directory identity they account for; ok is false when the
// cache may miss a change made beside aipm, or is not loaded yet: a one-shot command
// lists the directory rather than load every task for one id.
func (c *dirCache[T]) maxSeq() (hi int, at Stamp, ok bool) {
	c.mu.Lock()
	loaded := c.loaded
	c.mu.Unlock()
	if !loaded {
		return 0, Stamp{}, false
	}
	err := c.with(func() {
		c.dmu.Lock()
		at, ok = c.dirAt, c.loaded && c.dirAtOK && !c.unsure && !c.rescan
		c.dmu.Unlock()
		if !ok {
			return
		}
		for id := range c.ents {
			hi = max(hi, taskSeq(id))
		}
		// Ids sort by their sequence number: the index file's highest is its last live
		// one that has a number (time-based ids sort first, spent-sequence ones last).
		for j := c.cold.coldLen() - 1; j >= 0; j-- {
			id := c.cold.id(j)
			if _, gone := c.shadow[id]; gone {
				continue
			}
			if n := taskSeq(id); n > 0 {
				hi = max(hi, n)
				break
			}
		}
	})
	return hi, at, ok && err == nil
}

// cloneTag is two base32 digits that differ, with odds of 1023 in 1024, between two clones
// of a repository: a hash of the machine's name and the store's path.
func (s *Store) cloneTag() string {
	host, _ := os.Hostname()
	sum := sha256.Sum256([]byte(host + "\x00" + s.dir))
	return string([]byte{crockford[sum[0]&31], crockford[sum[1]&31]})
}

// seqTaskID is a task id with sequence number seq, the clone's tag and a random rest.
func seqTaskID(seq int, tag string) string {
	var r [20]byte
	if _, err := rand.Read(r[:]); err != nil {
		panic("filestore: crypto/rand failed: " + err.Error()) // never happens on supported systems
	}
	var b strings.Builder
	b.Grow(len(PrefixTask) + 1 + seqDigits + len(tag) + len(r))
	b.WriteString(PrefixTask + "_")
	for i := seqDigits - 1; i >= 0; i-- {
		b.WriteByte(crockford[(seq>>(5*i))&31])
	}
	b.WriteString(tag)
	for _, c := range r {
		b.WriteByte(crockford[c&31])
	}
	return b.String()
}

// MinShortTask is the fewest characters after "tsk_" a listing shows of a task id: the
// sequence number, so a short id once shown stays valid as the project grows.
const MinShortTask = seqDigits

// ShortTaskIDs abbreviates each of ids, which must be sorted, to its shortest prefix that no
// other of them shares, keeping at least MinShortTask characters after "tsk_".
func ShortTaskIDs(ids []string) map[string]string {
	out := make(map[string]string, len(ids))
	// In sorted ids, an id's longest common prefix with any other is with a neighbour.
	for i, id := range ids {
		n := len(PrefixTask) + 1 + MinShortTask
		for _, j := range []int{i - 1, i + 1} {
			if j >= 0 && j < len(ids) {
				n = max(n, commonPrefixLen(id, ids[j])+1)
			}
		}
		out[id] = id[:min(n, len(id))]
	}
	return out
}

func commonPrefixLen(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// TaskIDSet is the id of every task file as the index knows it at one moment: what a
// command line needs to abbreviate ids and expand abbreviations, without listing tasks/.
type TaskIDSet struct {
	hot    []string // the ids held in memory, sorted
	cold   *coldIndex
	shadow map[string]struct{} // ids of cold whose record no longer holds
}

// TaskIDSet returns the ids of the task files, readable or not, from the index; a process
// without a watcher compares the directory with it first, as every query does.
func (s *Store) TaskIDSet() (*TaskIDSet, error) {
	x := &TaskIDSet{}
	err := s.tasks.with(func() {
		c := s.tasks
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

func (x *TaskIDSet) coldLive(i int) bool {
	_, gone := x.shadow[x.cold.id(i)]
	return !gone
}

func (x *TaskIDSet) coldN() int {
	if x.cold == nil {
		return 0
	}
	return x.cold.n
}

// Has tells whether id is a task file's id.
func (x *TaskIDSet) Has(id string) bool {
	if i := sort.SearchStrings(x.hot, id); i < len(x.hot) && x.hot[i] == id {
		return true
	}
	i, ok := x.cold.find(id)
	return ok && x.coldLive(i)
}

// WithPrefix returns the ids that start with prefix, sorted.
func (x *TaskIDSet) WithPrefix(prefix string) []string {
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
func (x *TaskIDSet) All() []string { return x.WithPrefix("") }

// Short abbreviates id as ShortTaskIDs does among all the set's ids: to its shortest
// prefix no other id shares, at least MinShortTask characters after "tsk_". An id not in
// the set is returned whole.
func (x *TaskIDSet) Short(id string) string {
	if !x.Has(id) {
		return id
	}
	n := len(PrefixTask) + 1 + MinShortTask
	// In sorted ids, an id's longest common prefix with any other is with a neighbour.
	if i := sort.SearchStrings(x.hot, id); i > 0 {
		n = max(n, commonPrefixLen(id, x.hot[i-1])+1)
	}
	if i := sort.SearchStrings(x.hot, id+"\x00"); i < len(x.hot) {
		n = max(n, commonPrefixLen(id, x.hot[i])+1)
	}
	// The nearest record of the index file on each side that is still an id: live, or
	// shadowed by an entry held in memory (a finished task read since, which hot has).
	// Only the records of removed tasks are passed over. Stopping at live records alone
	// made a listing quadratic: once it had read every finished task, each record was
	// shadowed, and each id scanned to the end of the file.
	i, _ := x.cold.find(id)
	for j := i - 1; j >= 0; j-- {
		if cid := x.cold.id(j); x.coldLive(j) || x.hotHas(cid) {
			n = max(n, commonPrefixLen(id, cid)+1)
			break
		}
	}
	for j := i; j < x.coldN(); j++ {
		if cid := x.cold.id(j); cid != id && (x.coldLive(j) || x.hotHas(cid)) {
			n = max(n, commonPrefixLen(id, cid)+1)
			break
		}
	}
	return id[:min(n, len(id))]
}

// hotHas tells whether id is held in memory.
func (x *TaskIDSet) hotHas(id string) bool {
	i, ok := slices.BinarySearch(x.hot, id)
	return ok && i < len(x.hot)
}

// isLoaded tells whether the cache has been filled.
func (c *dirCache[T]) isLoaded() bool {
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
