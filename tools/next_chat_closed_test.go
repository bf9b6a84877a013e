package tools

import (
	"testing"

	"github.com/aipm/aipm/filestore"
)

// A chat the human closes while an evaluation is under way ends the session as closed by
// the user, never as idle: every wait the close wakes gives the same answer, whichever of
// the evaluation's reads saw the close first.
func TestChatClosedDuringEvaluation(t *testing.T) {
	s, st := newTestServer(t)
	owner := filestore.Actor{ID: "alice", Via: filestore.ViaCLI}
	if _, err := st.OpenChat(owner, "w1"); err != nil {
		t.Fatal(err)
	}
	if out, isErr := invoke(t, s, s.tools["authenticate"], map[string]any{"agent_id": "w1", "passkey": "w1-passkey", "purpose": "chat"}); isErr || out["purpose"] != "chat" {
		t.Fatalf("authenticate: %v", out)
	}
	testHookAfterClosedCheck = func() {
		testHookAfterClosedCheck = nil
		if _, err := st.CloseChat(owner, "w1"); err != nil {
			t.Error(err)
		}
	}
	defer func() { testHookAfterClosedCheck = nil }()
	out, isErr := invoke(t, s, s.tools["get_next_action"], map[string]any{"timeout_seconds": float64(0)})
	if isErr || out["action"] != "exit" || out["reason"] != "user_closed_chat" {
		t.Fatalf("get_next_action = %v, want exit for user_closed_chat", out)
	}
}
