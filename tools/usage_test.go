package tools

import (
	"context"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// countedCall calls a tool as the stdio server does, usage count included.
func countedCall(t *testing.T, s *Server, name string, args map[string]any) {
	t.Helper()
	var req mcp.CallToolRequest
	req.Params.Name = name
	req.Params.Arguments = args
	if _, err := s.counted(name, s.envelope(s.tools[name]))(context.Background(), req); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// A session's counts reach its file within usageEvery of a call, without another call;
// report_completed, which closes the run record of a spawned session, writes every call
// at once, itself included.
func TestUsageWrittenLateButWhole(t *testing.T) {
	s, st := newTestServer(t)
	countedCall(t, s, "authenticate", map[string]any{"agent_id": "w1", "passkey": "w1-passkey", "purpose": "task"})
	se, _ := s.currentSession()
	if se == nil {
		t.Fatal("no session")
	}
	for range 3 {
		countedCall(t, s, "get_my_task", nil)
	}
	deadline := time.Now().Add(10 * usageEvery)
	for {
		u, err := st.SessionUsage(se.ID)
		if err != nil {
			t.Fatal(err)
		}
		if u.Calls == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("usage file says %d calls %v after the last call, want 4", u.Calls, 10*usageEvery)
		}
		time.Sleep(usageEvery / 5)
	}
	countedCall(t, s, "get_my_task", nil)
	countedCall(t, s, "report_completed", map[string]any{"result": "success", "summary": "done"})
	if u, err := st.SessionUsage(se.ID); err != nil || u.Calls != 6 {
		t.Errorf("usage right after report_completed: %d calls, %v; want 6", u.Calls, err)
	}
}

// A server that stops writes what it counted before its sessions end.
func TestUsageWrittenOnClose(t *testing.T) {
	s, st := newTestServer(t)
	countedCall(t, s, "authenticate", map[string]any{"agent_id": "w1", "passkey": "w1-passkey", "purpose": "task"})
	se, _ := s.currentSession()
	countedCall(t, s, "get_my_task", nil)
	countedCall(t, s, "get_my_profile", nil)
	s.Close("stdin_closed")
	if u, err := st.SessionUsage(se.ID); err != nil || u.Calls != 3 {
		t.Errorf("usage after Close: %d calls, %v; want 3", u.Calls, err)
	}
}
