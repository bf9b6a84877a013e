package tools

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/mcp"
)

// With timeout_seconds, delegate_to_chat_session waits for the delegation to finish and
// answers with its result: the step that needs the answer goes on without a
// get_next_action that would only say to wait. Without it, it answers at once (seed 003).
func TestDelegateWaitsForTheResult(t *testing.T) {
	s, st := newTestServer(t)
	owner := filestore.Actor{ID: "alice", Via: filestore.ViaCLI}
	if _, _, err := st.AddAgent(owner, filestore.NewAgent{ID: "w2", ParentID: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, isErr := invoke(t, s, s.tools["authenticate"], map[string]any{"agent_id": "w1", "passkey": "w1-passkey"}); isErr {
		t.Fatal("authenticate failed")
	}
	delegate := s.tools["delegate_to_chat_session"]

	res, isErr := invoke(t, s, delegate, map[string]any{"target_agent_id": "w2", "purpose": "ask: what is in seed.txt?"})
	if isErr || res["status"] != filestore.DelegationPending || res["result"] != nil {
		t.Fatalf("without timeout_seconds: %v, want a pending delegation at once", res)
	}

	type answer struct {
		text  string
		isErr bool
	}
	done := make(chan answer, 1)
	go func() {
		var req mcp.CallToolRequest
		req.Params.Name = "delegate_to_chat_session"
		req.Params.Arguments = map[string]any{"target_agent_id": "w2", "purpose": "ask: what is in result.txt?", "timeout_seconds": 30.0} // as JSON decodes it
		r, err := s.envelope(delegate)(context.Background(), req)
		if err != nil {
			done <- answer{err.Error(), true}
			return
		}
		done <- answer{r.Content[0].(mcp.TextContent).Text, r.IsError}
	}()

	// the chat session's part: take the delegations and finish the waited one
	w1 := filestore.Actor{ID: "w1", Via: filestore.ViaTool}
	var waited *filestore.Delegation
	for deadline := time.Now().Add(20 * time.Second); waited == nil; {
		d, err := st.TakeDelegation(w1)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case d != nil && d.Purpose == "ask: what is in result.txt?":
			waited = d
		case d == nil && time.Now().After(deadline):
			select {
			case a := <-done:
				t.Fatalf("the waiting delegation was never created: %s", a.text)
			default:
				t.Fatal("the waiting delegation was never created")
			}
		case d == nil:
			time.Sleep(10 * time.Millisecond) // the call has not created it yet
		}
	}
	select {
	case a := <-done:
		t.Fatalf("delegate answered before the delegation finished: %s", a.text)
	default:
	}
	if _, err := st.CompleteDelegation(w1, waited.ID, filestore.DelegationCompleted, "84"); err != nil {
		t.Fatal(err)
	}
	a := <-done
	var got map[string]any
	if err := json.Unmarshal([]byte(a.text), &got); err != nil || a.isErr {
		t.Fatalf("delegate with timeout_seconds: %s", a.text)
	}
	if got["status"] != filestore.DelegationCompleted || got["result"] != "84" || got["delegation_id"] != waited.ID {
		t.Errorf("delegate with timeout_seconds answered %v, want the completed delegation %s with its result 84", got, waited.ID)
	}
}
