package coordinator

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/aipm/aipm/filestore"
)

// BenchmarkLook is one evaluation of aipm run (what it does on every change it sees) in a
// project whose history holds AIPM_BENCH_LOOK_TASKS finished tasks (default 10,000)
// beside a few open ones, next to the same look in a project with no history: what the
// coordinator pays per change must not grow with the history.
func BenchmarkLook(b *testing.B) {
	n := 10_000
	if v := os.Getenv("AIPM_BENCH_LOOK_TASKS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatalf("AIPM_BENCH_LOOK_TASKS=%q: want a number", v)
		}
	}
	for _, finished := range []int{0, n} {
		b.Run(fmt.Sprintf("finished=%d", finished), func(b *testing.B) {
			s := lookStore(b, finished)
			c, err := New(s, Options{})
			if err != nil {
				b.Fatal(err)
			}
			c.evaluate(time.Now()) // settles what the first look repairs or claims
			b.ResetTimer()
			for b.Loop() {
				c.evaluate(time.Now())
			}
		})
	}
}

// lookStore is a project of a manager and three workers with a few open tasks, plus
// finished top-level tasks with two finished sub-tasks each written straight to files,
// as a long history leaves them.
func lookStore(b *testing.B, finished int) *filestore.Store {
	b.Helper()
	human := filestore.Actor{ID: "owner", Via: filestore.ViaCLI}
	s, err := filestore.Init(b.TempDir(), filestore.InitOptions{Name: "look", OwnerID: "owner"}, filestore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, a := range []filestore.NewAgent{{ID: "m1", Hierarchy: filestore.HierarchyManager, ParentID: "owner"},
		{ID: "w1", ParentID: "m1"}, {ID: "w2", ParentID: "m1"}, {ID: "w3", ParentID: "m1"}} {
		if _, _, err := s.AddAgent(human, a); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 5 {
		if _, err := s.CreateTask(human, filestore.NewTask{Title: fmt.Sprintf("open %d", i), AssigneeID: "w1"}); err != nil {
			b.Fatal(err)
		}
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	dir := filepath.Join(s.Dir(), "tasks")
	var parent string
	for i := range finished {
		t := filestore.Task{ID: fmt.Sprintf("tsk_%06dhist%016d", i, i), Title: fmt.Sprintf("finished %d", i), Status: filestore.StatusDone,
			Priority: "medium", AssigneeID: "w2", CreatedBy: "owner", Dependencies: []string{}, Approval: filestore.ApprovalApproved,
			CreatedAt: at, UpdatedAt: at, CompletedAt: &at, Version: 3}
		if i%3 == 0 {
			parent = t.ID
		} else {
			t.ParentID = parent
		}
		data, err := json.MarshalIndent(t, "", "  ")
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, t.ID+".json"), append(data, '\n'), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	s2, err := filestore.Open(s.Root(), filestore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	// aipm run watches the store, so its looks trust the cache between the watcher's
	// reports; nothing changes here between looks.
	s2.Watched()
	return s2
}
