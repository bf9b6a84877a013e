package tools

import (
	"os"
	"testing"
)

// A session token works only in the server that opened the session: another server with
// the same pid (a separate pid namespace, or the session file's pid edited to match) refuses
// it.
func TestTokenBoundToOpeningServer(t *testing.T) {
	a, st := newTestServer(t)
	out, isErr := invoke(t, a, a.tools["authenticate"], map[string]any{"agent_id": "w1", "passkey": "w1-passkey"})
	if isErr {
		t.Fatalf("authenticate: %v", out)
	}
	tok, _ := out["session_token"].(string)
	if tok == "" {
		t.Fatalf("no token: %v", out)
	}
	if out, isErr := invoke(t, a, a.tools["get_my_task"], map[string]any{"session_token": tok}); isErr {
		t.Fatalf("the opening server refuses its own token: %v", out)
	}
	b := New(st, Options{PID: os.Getpid(), Logf: t.Logf}) // same pid, another server
	out, isErr = invoke(t, b, b.tools["get_my_task"], map[string]any{"session_token": tok})
	if !isErr || out["error"] != "invalid_session" {
		t.Errorf("another server with the same pid accepted the token: %v", out)
	}
}
