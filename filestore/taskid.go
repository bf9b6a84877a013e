package filestore

import (
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"os"
	"strings"
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
	// The names alone, unsorted and unvalidated (taskSeq reads only a well-formed number):
	// this runs for every task created, and a directory of 10,000 tasks is read in a few
	// milliseconds so.
	next := seqMin
	d, err := os.Open(s.path("tasks"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err == nil {
		names, err := d.Readdirnames(-1)
		d.Close()
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			next = max(next, taskSeq(name)+1)
		}
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
