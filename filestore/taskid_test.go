package filestore

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func TestTaskIDsAreShortAndOrdered(t *testing.T) {
	s := newTestStore(t)
	// A task of an older store, with a time-based id, stays valid and apart.
	legacy := "tsk_01jd0000000000000000000001"
	if err := os.WriteFile(s.taskPath(legacy), []byte(`{"id":"`+legacy+`","title":"old","status":"todo","priority":"medium"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	a := mustTask(t, s, NewTask{Title: "a"})
	b := mustTask(t, s, NewTask{Title: "b", ParentID: a.ID})
	batch, _, err := s.CreateTasks(human, a.ID, []BatchItem{{LocalID: "x", NewTask: NewTask{Title: "x"}}, {LocalID: "y", NewTask: NewTask{Title: "y"}}})
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{a.ID, b.ID, batch[0].ID, batch[1].ID}
	for i, want := range []string{"tsk_8001", "tsk_8002", "tsk_8003", "tsk_8004"} {
		if !strings.HasPrefix(ids[i], want) || len(ids[i]) != len(legacy) {
			t.Errorf("id %d = %s, want %s… of %d characters", i, ids[i], want, len(legacy))
		}
		if err := ValidateEntityID(PrefixTask, ids[i]); err != nil {
			t.Errorf("minted id %s is invalid: %v", ids[i], err)
		}
	}
	if !slices.IsSorted(ids) || legacy > ids[0] {
		t.Errorf("ids do not sort in creation order after the older store's: %v", ids)
	}
	all, err := s.TaskIDs()
	if err != nil {
		t.Fatal(err)
	}
	short := ShortTaskIDs(all)
	if short[batch[0].ID] != "tsk_8003" || short[legacy] != "tsk_01jd" {
		t.Errorf("short ids: %v", short)
	}
}

// Ten thousand tasks, the last thousand minted on two clones at the same time from the same
// sequence numbers: every short id has at most 7 characters after "tsk_" (5 here: the
// clones' tags differ).
func TestShortTaskIDsAtTenThousand(t *testing.T) {
	var ids []string
	for i := range 9000 {
		ids = append(ids, seqTaskID(seqMin+i, "k3"))
	}
	for i := 8000; i < 9000; i++ {
		ids = append(ids, seqTaskID(seqMin+i, "m7"))
	}
	slices.Sort(ids)
	short := ShortTaskIDs(ids)
	longest := 0
	for _, id := range ids {
		n := len(short[id]) - len("tsk_")
		longest = max(longest, n)
		if n > 7 {
			t.Fatalf("%s is shown as %s", id, short[id])
		}
	}
	if longest != 5 {
		t.Errorf("longest short id has %d characters, want 5", longest)
	}
}

func TestTaskSeqRunsOut(t *testing.T) {
	s := newTestStore(t)
	last := seqTaskID(seqMax, "aa")
	if err := os.WriteFile(s.taskPath(last), []byte(`{"id":"`+last+`","title":"last","status":"todo","priority":"medium"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tk := mustTask(t, s, NewTask{Title: "after"})
	if !strings.HasPrefix(tk.ID, "tsk_z") || tk.ID <= last || ValidateEntityID(PrefixTask, tk.ID) != nil {
		t.Errorf("after the last sequence number: %s", tk.ID)
	}
}
