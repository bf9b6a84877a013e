package tools

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aipm/aipm/filestore"
)

// A conversation request that a merge ended as a duplicate (the pair's other, active
// conversation came from another clone) is told to its initiator as such — not as a
// partner who never accepted — so that it starts it again once the other one ends.
func TestNextChatToldOfDuplicate(t *testing.T) {
	st, err := filestore.Init(t.TempDir(), filestore.InitOptions{OwnerID: "alice"}, filestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	owner := filestore.Actor{ID: "alice", Via: filestore.ViaCLI}
	for _, id := range []string{"w1", "w2"} {
		if _, _, err := st.AddAgent(owner, filestore.NewAgent{ID: id, ParentID: "alice", Passkey: id + "-passkey"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.SendMessage(owner, filestore.SendRequest{To: "w1", Content: "talk to w2"}); err != nil {
		t.Fatal(err)
	}
	s := New(st, Options{PID: os.Getpid(), Logf: t.Logf})
	if out, isErr := invoke(t, s, s.tools["authenticate"], map[string]any{"agent_id": "w1", "passkey": "w1-passkey"}); isErr || out["purpose"] != "chat" {
		t.Fatalf("authenticate: %v", out)
	}
	out, isErr := invoke(t, s, s.tools["start_conversation"], map[string]any{"target_agent_id": "w2", "purpose": "ask", "initial_message": "hello"})
	if isErr {
		t.Fatalf("start_conversation: %v", out)
	}
	mine := out["conversation_id"].(string)

	// What a merge brings: w2's conversation with w1, started a moment earlier and picked
	// up on its machine. The older one is kept.
	cv, err := st.Conversation(mine)
	if err != nil {
		t.Fatal(err)
	}
	other := *cv
	// The same millisecond, the random part all zeros: it sorts before mine.
	other.ID = mine[:len(filestore.PrefixConversation)+1+10] + strings.Repeat("0", 16)
	other.InitiatorID, other.ParticipantID = "w2", "w1"
	at := st.Now()
	other.State, other.ActivatedAt = filestore.ConvActive, &at
	b, err := json.MarshalIndent(&other, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(st.Dir(), "conversations", other.ID+".json"), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RepairMerged(filestore.SystemSender); err != nil {
		t.Fatal(err)
	}

	for i := 0; i < 5; i++ {
		out, isErr = invoke(t, s, s.tools["get_next_action"], map[string]any{"timeout_seconds": float64(0)})
		if isErr {
			t.Fatalf("get_next_action: %v", out)
		}
		if out["action"] == "conversation_expired" {
			break
		}
	}
	if out["action"] != "conversation_expired" || out["conversation_id"] != mine || out["reason"] != filestore.EndDuplicate {
		t.Fatalf("get_next_action = %v, want conversation_expired of %s with reason %q", out, mine, filestore.EndDuplicate)
	}
	if in, _ := out["instruction"].(string); !strings.Contains(in, "duplicate") || !strings.Contains(in, "start_conversation") || strings.Contains(in, "did not accept") {
		t.Errorf("instruction %q does not say to start it again", in)
	}
}
