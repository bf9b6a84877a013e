package filestore

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// An index kept in step by updates, whichever keys each one changes, holds what an index
// built from the final keys holds.
func TestTaskIndexUpdateMatchesRebuild(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	keysOf := func() []string {
		k := []string{pick("", "tsk_p1", "tsk_p2"), pick("", "w1", "w2"), pick(StatusTodo, StatusInProgress, StatusDone)}
		for range rng.IntN(3) {
			k = append(k, pick("tsk_d1", "tsk_d2", "tsk_d3"))
		}
		return k
	}
	var x taskIndex
	x.reset()
	cur := map[string][]string{}
	for i := range 2000 {
		id := fmt.Sprintf("tsk_%d", rng.IntN(20))
		var next []string
		if rng.IntN(10) > 0 {
			next = keysOf()
			if old := cur[id]; old != nil && rng.IntN(2) == 0 {
				next = append([]string(nil), old...) // a write that keeps every key
				next[tkStatus] = pick(StatusTodo, StatusDone)
			}
		}
		x.update(id, cur[id], next)
		if next == nil {
			delete(cur, id)
		} else {
			cur[id] = next
		}
		var want taskIndex
		want.reset()
		for id, k := range cur {
			want.update(id, nil, k)
		}
		if !reflect.DeepEqual(x, want) {
			t.Fatalf("after update %d (%s → %v) the index differs from one rebuilt:\n got  %v\n want %v", i, id, next, x, want)
		}
	}
}
