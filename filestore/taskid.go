package filestore

import (
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/aipm/aipm/filestore/internal/engine"
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
	at engine.Stamp
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
	pos := s.eng.PullJournal() // counts the writes of other processes (journaled)
	fi, statErr := engine.Lstat(s.path("tasks"))
	q := &s.seq
	q.mu.Lock()
	known := q.ok
	q.mu.Unlock()
	if !known && statErr == nil && !s.tasks.IsLoaded() {
		s.seqFromFile(pos) // a process's first mint, from what the last one left
	}
	q.mu.Lock()
	if statErr == nil && q.ok {
		if now := engine.DirStamp(fi); now.Mtime == q.at.Mtime && now.Ino == q.at.Ino {
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
		now := engine.DirStamp(fi)
		if hi, at, ok := s.tasks.MaxOf(taskSeq); ok && now.Mtime == at.Mtime && (at.Ino == 0 || now.Ino == at.Ino) {
			q.mu.Lock()
			q.hi, q.at, q.ok = hi, now, true
			q.mu.Unlock()
			return max(seqMin, hi+1), nil
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	// The names alone, unsorted and unvalidated (taskSeq reads only a well-formed number).
	names, err := engine.ReadDirNames(s.path("tasks"))
	if errors.Is(err, os.ErrNotExist) {
		return seqMin, nil
	}
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
		q.hi, q.at, q.ok = hi, engine.DirStamp(fi), true
	}
	return max(seqMin, hi+1), nil
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
				n = max(n, engine.CommonPrefixLen(id, ids[j])+1)
			}
		}
		out[id] = id[:min(n, len(id))]
	}
	return out
}

// TaskIDSet is the id of every task file as the index knows it at one moment: what a
// command line needs to abbreviate ids and expand abbreviations, without listing tasks/.
type TaskIDSet struct{ ids *engine.IDSet }

// TaskIDSet returns the ids of the task files, readable or not, from the index; a process
// without a watcher compares the directory with it first, as every query does.
func (s *Store) TaskIDSet() (*TaskIDSet, error) {
	ids, err := s.tasks.IDs()
	return &TaskIDSet{ids}, err
}

// Has tells whether id is a task file's id.
func (x *TaskIDSet) Has(id string) bool { return x.ids.Has(id) }

// WithPrefix returns the ids that start with prefix, sorted.
func (x *TaskIDSet) WithPrefix(prefix string) []string { return x.ids.WithPrefix(prefix) }

// All returns every id, sorted.
func (x *TaskIDSet) All() []string { return x.ids.All() }

// Short abbreviates id as ShortTaskIDs does among all the set's ids: to its shortest
// prefix no other id shares, at least MinShortTask characters after "tsk_". An id not in
// the set is returned whole.
func (x *TaskIDSet) Short(id string) string {
	return x.ids.Short(id, len(PrefixTask)+1+MinShortTask)
}
