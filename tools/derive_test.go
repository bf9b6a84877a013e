package tools

import (
	"testing"

	"github.com/aipm/aipm/filestore"
)

// A session's derivation passes over changes of other agents' tasks, and still tells the
// change of its own task that follows them.
func TestDeriveSkipsOthersChangesNotOwn(t *testing.T) {
	s, st := newTestServer(t)
	if out, isErr := invoke(t, s, s.tools["authenticate"], map[string]any{"agent_id": "w1", "passkey": "w1-passkey", "purpose": "task"}); isErr {
		t.Fatalf("authenticate: %v", out)
	}
	se, _ := s.currentSession()
	other, err := filestore.Open(st.Root(), filestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	owner := filestore.Actor{ID: "alice", Via: filestore.ViaCLI}
	for range 3 {
		if _, err := other.CreateTask(owner, filestore.NewTask{Title: "someone else's", Status: filestore.StatusTodo}); err != nil {
			t.Fatal(err)
		}
		if err := s.deriveFor(se); err != nil {
			t.Fatal(err)
		}
	}
	if _, interrupts, err := st.UnreadCounts(se); err != nil || interrupts != 0 {
		t.Fatalf("interrupts after others' changes: %d, %v", interrupts, err)
	}
	if _, err := other.SetTaskStatus(owner, se.TaskID, filestore.StatusBlocked, "waits for a decision"); err != nil {
		t.Fatal(err)
	}
	if err := s.deriveFor(se); err != nil {
		t.Fatal(err)
	}
	if _, interrupts, err := st.UnreadCounts(se); err != nil || interrupts != 1 {
		t.Errorf("interrupts after the session's task was blocked: %d, %v; want 1", interrupts, err)
	}
}
