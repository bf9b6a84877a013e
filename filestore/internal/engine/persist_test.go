package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// An index file far behind the journal is written again only once it is older than what
// its entities are worth (indexSavePace), so a team writing without pause does not rebuild
// a large store's file every few hundred writes; one dated in the future is stale.
func TestIndexFreshRule(t *testing.T) {
	for _, c := range []struct {
		lag      int64
		age      time.Duration
		entities int
		want     bool
	}{
		{indexLag - 1, time.Hour, 10, true},
		{indexLag, time.Hour, 100_000, false},
		{indexLag, time.Second, 100_000, true},
		{indexLag, 3 * time.Second, 100_000, false},
		{indexLag, time.Second, 1_000, false},
		{indexLag, -time.Second, 100_000, false},
	} {
		if got := indexFresh(c.lag, c.age, c.entities); got != c.want {
			t.Errorf("indexFresh(lag %d, age %v, %d entities) = %v, want %v", c.lag, c.age, c.entities, got, c.want)
		}
	}
}

// TestColdSectionRoundTrip: what buildCold writes, parseCold reads back record for
// record — id order, identities, keys, and each index's lists — whatever order the
// records come in, with keys shared between records and repeated within one.
func TestColdSectionRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	slot := func(pos int) int { return min(pos, 3) } // parent, assignee, status, dependencies, as tasks
	for _, n := range []int{0, 1, 2, 50, 2000} {
		var recs []coldRec
		for i := range n {
			keys := []string{fmt.Sprintf("p%d", rng.IntN(n/3+1)), []string{"", "w1", "w2"}[rng.IntN(3)], []string{"done", "cancelled"}[rng.IntN(2)]}
			for range rng.IntN(4) {
				keys = append(keys, fmt.Sprintf("d%d", rng.IntN(5))) // a dependency may come twice
			}
			if i%7 == 0 {
				keys[0] = keys[1] // a key filed in two indexes
			}
			recs = append(recs, coldRec{id: fmt.Sprintf("tsk_%06d", rng.IntN(1_000_000)*10+i%10),
				st: Stamp{Ino: rng.Uint64(), Size: rng.Int64(), Mtime: rng.Int64(), Ctime: rng.Int64()}, keys: keys})
		}
		recs = slices.CompactFunc(recs, func(a, b coldRec) bool { return a.id == b.id })
		want := slices.Clone(recs)
		slices.SortFunc(want, cmpRecID)
		want = slices.CompactFunc(want, func(a, b coldRec) bool { return a.id == b.id })
		if len(want) != len(recs) {
			continue // an id drawn twice: not a section aipm writes
		}
		x, err := parseCold(buildCold(recs, 4, slot), 4, 0, true)
		if err != nil {
			t.Fatalf("%d records: %v", n, err)
		}
		if x.n != len(want) {
			t.Fatalf("%d records read back, want %d", x.n, len(want))
		}
		lists := make([]map[string][]string, 4)
		for i := range lists {
			lists[i] = map[string][]string{}
		}
		for i, r := range want {
			if got := x.id(i); got != r.id {
				t.Fatalf("record %d: id %s, want %s", i, got, r.id)
			}
			if got := x.stamp(i); got != r.st {
				t.Fatalf("record %s: identity %v, want %v", r.id, got, r.st)
			}
			if got := x.recKeys(i); !slices.Equal(got, r.keys) {
				t.Fatalf("record %s: keys %q, want %q", r.id, got, r.keys)
			}
			for pos, k := range r.keys {
				l := lists[slot(pos)][k]
				if len(l) == 0 || l[len(l)-1] != r.id {
					lists[slot(pos)][k] = append(l, r.id)
				}
			}
		}
		for idx, m := range lists {
			for k, ids := range m {
				post := x.posting(idx, k)
				var got []string
				for j := range len(post) / 4 {
					got = append(got, x.id(int(u32at(post, j))))
				}
				if !slices.Equal(got, ids) {
					t.Fatalf("%d records, index %d, key %q: %q, want %q", n, idx, k, got, ids)
				}
			}
			if got := x.counts(idx); len(got) != len(m) {
				t.Fatalf("index %d: %d keys with lists, want %d", idx, len(got), len(m))
			}
		}
	}
}
