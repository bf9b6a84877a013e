package filestore

import (
	"os"
	"path/filepath"
	"testing"
)

func TestUnfinishedCountsWhatProcessesHold(t *testing.T) {
	s := newTestStore(t)
	a := mustTask(t, s, NewTask{Title: "a"})
	mustTask(t, s, NewTask{Title: "b"})
	if _, err := s.SetTaskStatus(human, a.ID, StatusCancelled, "not needed"); err != nil {
		t.Fatal(err)
	}
	mustStart(t, s, "w1", "w2", ConversationRequest{Purpose: "talk"})
	mustDelegate(t, s, "mgr", "w1", "", "ask w1")
	want := map[string]int{KindTask: 1, KindConversation: 1, KindDelegation: 1, KindAgent: 0}
	for kind, n := range want {
		if got, err := s.UnfinishedCount(kind); err != nil || got != n {
			t.Errorf("UnfinishedCount(%s) = %d, %v; want %d", kind, got, err, n)
		}
	}
	// A file written beside aipm counts once it is seen, as every process would hold it.
	id := NewID(PrefixTask, s.Now())
	body := []byte(`{"id":"` + id + `","title":"by hand","status":"todo"}` + "\n")
	if err := os.WriteFile(filepath.Join(s.Dir(), "tasks", id+".json"), body, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := s.UnfinishedCount(KindTask); err != nil || got != 2 {
		t.Errorf("after a task file written by hand: UnfinishedCount(task) = %d, %v; want 2", got, err)
	}

	for _, tc := range []struct {
		kind, data string
		want       bool
	}{
		{KindTask, `{"status":"todo"}`, true},
		{KindTask, `{"status":"in_progress"}`, true},
		{KindTask, `{"status":"done"}`, false},
		{KindTask, `{"status":"cancelled"}`, false},
		{KindConversation, `{"state":"active"}`, true},
		{KindConversation, `{"state":"ended"}`, false},
		{KindDelegation, `{"status":"pending"}`, true},
		{KindDelegation, `{"status":"failed"}`, false},
		{KindAgent, `{"status":"todo"}`, false},
		{KindTask, `not json`, false},
	} {
		if got := Unfinished(tc.kind, []byte(tc.data)); got != tc.want {
			t.Errorf("Unfinished(%s, %s) = %v, want %v", tc.kind, tc.data, got, tc.want)
		}
	}
}
