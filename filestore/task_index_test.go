package filestore

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
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
	x.settle() // kept in order from here on, as after a load
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
			want.update(id, nil, k) // in bulk, as a load
		}
		want.settle()
		if !reflect.DeepEqual(x, want) {
			t.Fatalf("after update %d (%s → %v) the index differs from one rebuilt:\n got  %v\n want %v", i, id, next, x, want)
		}
	}
}

// The in-progress count by assignee, kept by each change, equals a count of the files:
// in the process that writes, in another that learns of the writes, after a hand edit,
// and in a process that starts from the index file.
func TestInProgressByAssigneeFollowsChanges(t *testing.T) {
	a := newTestStore(t)
	b, err := Open(a.Root(), Options{Now: a.now})
	if err != nil {
		t.Fatal(err)
	}
	fromFiles := func() map[string]int {
		out := map[string]int{}
		tasks, err := Open(a.Root(), Options{Now: a.now})
		if err != nil {
			t.Fatal(err)
		}
		all, err := tasks.Tasks(TaskFilter{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tk := range all {
			if tk.Status == StatusInProgress {
				out[tk.AssigneeID]++
			}
		}
		return out
	}
	var last map[string]int
	moved := 0 // steps that changed the count
	check := func(step int, what string) {
		t.Helper()
		want := fromFiles()
		if !reflect.DeepEqual(want, last) {
			moved++
		}
		last = want
		fresh, err := Open(a.Root(), Options{Now: a.now})
		if err != nil {
			t.Fatal(err)
		}
		for name, s := range map[string]*Store{"writer": a, "other process": b, "new process": fresh} {
			got, err := s.InProgressByAssignee()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Fatalf("step %d (%s), %s: in progress by assignee %v, the files say %v", step, what, name, got, want)
			}
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	var ids []string
	for step := range 300 {
		w := []*Store{a, b}[rng.IntN(2)]
		who := []string{"w1", "w2", ""}[rng.IntN(3)]
		var what string
		switch r := rng.IntN(10); {
		case r < 3 || len(ids) == 0:
			what = "create"
			tk, err := w.CreateTask(human, NewTask{Title: fmt.Sprint("t", step), Status: StatusTodo, AssigneeID: who})
			if err == nil {
				ids = append(ids, tk.ID)
			}
		case r < 6:
			what = "start"
			w.SetTaskStatus(human, ids[rng.IntN(len(ids))], StatusInProgress, "")
		case r < 8:
			what = "finish"
			w.SetTaskStatus(human, ids[rng.IntN(len(ids))], StatusDone, "")
		case r < 9:
			what = "reassign"
			w.AssignTask(human, ids[rng.IntN(len(ids))], who)
		default:
			what = "hand edit"
			id := ids[rng.IntN(len(ids))]
			p := filepath.Join(a.Dir(), "tasks", id+".json")
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			var tk map[string]any
			if err := json.Unmarshal(data, &tk); err != nil {
				t.Fatal(err)
			}
			tk["status"], tk["assignee_id"] = StatusInProgress, who
			out, _ := json.MarshalIndent(tk, "", "  ")
			if err := os.WriteFile(p, append(out, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
			// As the watchers of both processes report it.
			a.Changed("tasks/" + id + ".json")
			b.Changed("tasks/" + id + ".json")
		}
		check(step, what)
	}
	if moved < 20 {
		t.Fatalf("the count changed in only %d steps: the test did not exercise it", moved)
	}
}
