package tools

import (
	"context"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// waitActivity polls the session's usage file until it says whether a call is in flight
// as wanted.
func waitActivity(t *testing.T, s *Server, id string, inFlight bool) time.Time {
	t.Helper()
	deadline := time.Now().Add(20 * usageEvery)
	for {
		at, in, err := s.store.SessionActivity(id)
		if err != nil {
			t.Fatal(err)
		}
		if in == inFlight && !at.IsZero() {
			return at
		}
		if time.Now().After(deadline) {
			t.Fatalf("usage file says in flight %v %v on, want %v", in, 20*usageEvery, inFlight)
		}
		time.Sleep(usageEvery / 5)
	}
}

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

// A call the server is still serving (a long poll, say) is written as in flight within
// usageEvery, and as over once it returns: the coordinator does not take a session inside
// a call for a silent one.
func TestCallInFlightRecorded(t *testing.T) {
	s, _ := newTestServer(t)
	countedCall(t, s, "authenticate", map[string]any{"agent_id": "w1", "passkey": "w1-passkey", "purpose": "task"})
	se, _ := s.currentSession()
	if se == nil {
		t.Fatal("no session")
	}
	release := make(chan struct{})
	done := make(chan struct{})
	long := s.counted("get_next_action", func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-release
		return mcp.NewToolResultText("{}"), nil
	})
	go func() {
		defer close(done)
		var req mcp.CallToolRequest
		req.Params.Name = "get_next_action"
		long(context.Background(), req)
	}()
	waitActivity(t, s, se.ID, true)
	close(release)
	<-done
	waitActivity(t, s, se.ID, false)
}
