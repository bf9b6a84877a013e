package filestore

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// The id set of the index answers as a listing of tasks/ does: every file, readable or
// not, held in memory or only in the index file, after changes beside aipm too.
func TestTaskIDSetAsTheDirectory(t *testing.T) {
	s := newTestStore(t)
	var ids []string
	for i := range 40 {
		tk := mustTask(t, s, NewTask{Title: fmt.Sprint("t", i), AssigneeID: "w1"})
		ids = append(ids, tk.ID)
		if i%3 == 0 {
			finish(t, s, tk.ID)
		}
	}
	saveIndex(t, s)
	check := func(when string, o *Store) {
		t.Helper()
		listed, err := o.tasks.ListIDs()
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(listed)
		x, err := o.TaskIDSet()
		if err != nil {
			t.Fatal(err)
		}
		if got := x.All(); !slices.Equal(got, listed) {
			t.Fatalf("%s: set %v\nlisted %v", when, got, listed)
		}
		want := ShortTaskIDs(listed)
		for _, id := range listed {
			if got := x.Short(id); got != want[id] {
				t.Errorf("%s: Short(%s) = %s, want %s", when, id, got, want[id])
			}
		}
		for _, p := range []string{"", "tsk_", listed[0][:6], listed[len(listed)-1][:9], listed[len(listed)/2]} {
			var wantP []string
			for _, id := range listed {
				if strings.HasPrefix(id, p) {
					wantP = append(wantP, id)
				}
			}
			if got := x.WithPrefix(p); !slices.Equal(got, wantP) {
				t.Errorf("%s: WithPrefix(%q) = %v, want %v", when, p, got, wantP)
			}
		}
		if x.Has("tsk_zzzz") || x.Short("tsk_zzzz") != "tsk_zzzz" {
			t.Errorf("%s: an id without a file is in the set", when)
		}
	}
	o := reopen(t, s)
	if !fromIndex(t, o) {
		t.Fatal("not started from the index file")
	}
	check("from the index file", o)
	// Beside aipm: a finished task's file removed, one broken, a new one copied in.
	os.Remove(s.taskPath(ids[3]))
	os.WriteFile(s.taskPath(ids[6]), []byte("{ broken"), 0o644)
	data, _ := os.ReadFile(s.taskPath(ids[7]))
	os.WriteFile(s.taskPath(ids[7][:len(ids[7])-1]+"x"), data, 0o644)
	check("after changes beside aipm", o)
	mustTask(t, reopen(t, s), NewTask{Title: "through aipm"})
	check("after a write by another process", o)
}
