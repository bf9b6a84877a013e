package tools

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/mcp"
)

func newTestServer(t *testing.T) (*Server, *filestore.Store) {
	t.Helper()
	st, err := filestore.Init(t.TempDir(), filestore.InitOptions{OwnerID: "alice"}, filestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	owner := filestore.Actor{ID: "alice", Via: filestore.ViaCLI}
	if _, _, err := st.AddAgent(owner, filestore.NewAgent{ID: "w1", ParentID: "alice", Passkey: "w1-passkey"}); err != nil {
		t.Fatal(err)
	}
	tk, err := st.CreateTask(owner, filestore.NewTask{Title: "t", Status: filestore.StatusTodo, AssigneeID: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetTaskStatus(owner, tk.ID, filestore.StatusInProgress, ""); err != nil {
		t.Fatal(err)
	}
	return New(st, Options{PID: os.Getpid(), Logf: t.Logf}), st
}

// invoke calls a tool through its envelope, as the stdio server would.
func invoke(t *testing.T, s *Server, tl *tool, args any) (map[string]any, bool) {
	t.Helper()
	var req mcp.CallToolRequest
	req.Params.Name = tl.def.Name
	req.Params.Arguments = args
	res, err := s.envelope(tl)(context.Background(), req)
	if err != nil {
		t.Fatalf("%s returned a Go error (would become a JSON-RPC error): %v", tl.def.Name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d content blocks, want 1", tl.def.Name, len(res.Content))
	}
	text := res.Content[0].(mcp.TextContent).Text
	var out map[string]any
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("%s: result is not a JSON object: %s", tl.def.Name, text)
	}
	return out, res.IsError
}

func TestPanicBecomesErrorResult(t *testing.T) {
	s, _ := newTestServer(t)
	if _, isErr := invoke(t, s, s.tools["authenticate"], map[string]any{"agent_id": "w1", "passkey": "w1-passkey"}); isErr {
		t.Fatal("authenticate failed")
	}
	boom := &tool{def: mcp.NewTool("boom"), perm: Authenticated, handle: func(context.Context, *call) (any, error) {
		var m map[string]int
		m["x"] = 1 // nil map write: a handler bug
		return nil, nil
	}}
	out, isErr := invoke(t, s, boom, map[string]any{})
	if !isErr || out["error"] != "internal_error" || !strings.Contains(out["message"].(string), "boom failed unexpectedly") {
		t.Errorf("panic result: %v (isError %v)", out, isErr)
	}
	if out["notification"] != "no notifications" {
		t.Errorf("error result to an authenticated agent lacks notification: %v", out)
	}
}

func TestHostileArguments(t *testing.T) {
	s, _ := newTestServer(t)
	huge := strings.Repeat("x", maxArgChars+1)
	cases := []struct {
		tool string
		args any
		want string
	}{
		{"authenticate", "not an object", "invalid_argument"},
		{"authenticate", []any{1, 2}, "invalid_argument"},
		{"authenticate", map[string]any{"agent_id": 7, "passkey": "x"}, "invalid_argument"},
		{"authenticate", map[string]any{"agent_id": huge, "passkey": "x"}, "invalid_argument"},
		{"authenticate", map[string]any{"agent_id": "../../etc", "passkey": "x"}, "invalid_id"},
		{"authenticate", map[string]any{"agent_id": "w1", "passkey": "w1-passkey", "purpose": "admin"}, "invalid_argument"},
		{"get_my_profile", map[string]any{"session_token": "../../x.y"}, "invalid_session"},
		{"get_my_profile", map[string]any{"session_token": []any{}}, "invalid_argument"},
		{"get_my_profile", map[string]any{}, "authentication_required"},
		{"help", map[string]any{"tool_name": 3}, "invalid_argument"},
	}
	for _, tc := range cases {
		out, isErr := invoke(t, s, s.tools[tc.tool], tc.args)
		if !isErr || out["error"] != tc.want {
			t.Errorf("%s(%v): got %v, want error %s", tc.tool, clipName(strings.TrimSpace(strings.ReplaceAll(toJSON(tc.args), huge, "<huge>"))), out["error"], tc.want)
		}
		if out["message"] == "" || out["hint"] == "" {
			t.Errorf("%s: error without message or hint: %v", tc.tool, out)
		}
	}
	entries, _ := os.ReadDir(s.store.Dir() + "/runtime/sessions")
	if len(entries) != 0 {
		t.Errorf("hostile calls created %d sessions", len(entries))
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// An argument a tool does not take is refused by name, for every tool, before anything
// runs: dropped silently, it would leave the agent believing it had said something.
func TestUnknownArgumentsAreRefused(t *testing.T) {
	s, st := newTestServer(t)
	if _, isErr := invoke(t, s, s.tools["authenticate"], map[string]any{"agent_id": "w1", "passkey": "w1-passkey"}); isErr {
		t.Fatal("authenticate failed")
	}
	se, agent := s.currentSession()
	for name, tl := range s.tools {
		if tl.perm != Unauthenticated && permits(tl.perm, se, agent) != nil {
			// Refused for the session first; the check itself still names the argument.
			if err := unknownArgs(tl, map[string]any{"zz_not_a_param": "x"}); err == nil || !strings.Contains(err.Error(), `"zz_not_a_param"`) {
				t.Errorf("%s: unknownArgs = %v", name, err)
			}
			continue
		}
		out, isErr := invoke(t, s, tl, map[string]any{"zz_not_a_param": "x"})
		if !isErr || out["error"] != "invalid_argument" || !strings.Contains(out["message"].(string), `"zz_not_a_param"`) {
			t.Errorf("%s with an unknown argument: %v (isError %v)", name, out, isErr)
		}
	}
	if live, _ := st.LiveSessions("w1"); len(live) != 1 {
		t.Errorf("refused calls changed the sessions: %d live", len(live))
	}
	// Every parameter a schema names is accepted by name (refusals, if any, are others).
	for name, tl := range s.tools {
		for p := range tl.def.InputSchema.Properties {
			if err := unknownArgs(tl, map[string]any{p: nil}); err != nil {
				t.Errorf("%s refuses its own parameter %s: %v", name, p, err)
			}
		}
	}
}
