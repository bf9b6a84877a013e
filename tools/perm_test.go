package tools

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/aipm/aipm/filestore"
)

// specPerm is the permission of every tool in SPEC §5.1. A tool missing here fails the
// test, so a new tool cannot ship without its permission being decided.
var specPerm = map[string]Perm{
	"authenticate": Unauthenticated, "help": Unauthenticated,
	"logout": Authenticated, "get_session_guide": Authenticated, "get_my_profile": Authenticated,
	"get_next_action": Authenticated, "get_my_tasks": Authenticated, "list_tasks": Authenticated,
	"get_task": Authenticated, "request_task": Authenticated, "get_notifications": Authenticated,
	"get_my_execution_history": Authenticated, "get_execution_log": Authenticated,
	"dispatch_subtasks": ManagerOnly,
	"get_my_task":       TaskOnly, "create_task": TaskOnly, "create_tasks_batch": TaskOnly, "split_task": TaskOnly,
	"update_task_status": TaskOnly, "update_task_dependencies": TaskOnly, "report_completed": TaskOnly, "delegate_to_chat_session": TaskOnly,
	"get_task_conversations": TaskOnly, "get_conversation_messages": TaskOnly,
	"send_message": ChatOnly, "respond_chat": ChatOnly, "get_pending_messages": ChatOnly,
	"start_conversation": ChatOnly, "end_conversation": ChatOnly, "report_delegation_completed": ChatOnly,
	"start_task_from_chat": ChatOnly, "update_task_from_chat": ChatOnly, "notify_task_session": ChatOnly,
	"assign_task": ManagerOnly, "list_subordinates": ManagerOnly, "get_subordinate_profile": ManagerOnly,
	"select_action": ManagerOnly, "approve_task_request": ManagerOnly, "reject_task_request": ManagerOnly,
}

// TestToolPermissions calls every tool from a caller its permission excludes and checks
// the refusal code, before any handler runs (nothing is written).
func TestToolPermissions(t *testing.T) {
	s, st := newTestServer(t)
	// w1 has an in_progress task (newTestServer) and an unread message: a task session and
	// a chat session.
	mbox := filepath.Join(st.Dir(), "agents", "w1", "chat.jsonl")
	if err := os.WriteFile(mbox, []byte(`{"id":"msg_01jd0000000000000000000001","senderId":"alice","content":"hi","createdAt":"2026-01-02T03:04:05Z"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	auth := func(purpose string) string {
		out, isErr := invoke(t, s, s.tools["authenticate"], map[string]any{"agent_id": "w1", "passkey": "w1-passkey", "purpose": purpose})
		if isErr {
			t.Fatalf("authenticate %s: %v", purpose, out)
		}
		return out["session_token"].(string)
	}
	task, chat := auth(filestore.PurposeTask), auth(filestore.PurposeChat)
	before, err := st.Tasks(filestore.TaskFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for name, tl := range s.tools {
		want, ok := specPerm[name]
		if !ok {
			t.Errorf("tool %s has no permission in specPerm (SPEC §5.1)", name)
			continue
		}
		if tl.perm != want {
			t.Errorf("tool %s: permission %v, SPEC says %v", name, tl.perm, want)
		}
		var cases []struct{ token, code string }
		switch tl.perm {
		case TaskOnly:
			cases = append(cases, struct{ token, code string }{chat, "task_session_required"})
		case ChatOnly:
			cases = append(cases, struct{ token, code string }{task, "chat_session_required"})
		case ManagerOnly:
			cases = append(cases, struct{ token, code string }{task, "unauthorized"}, struct{ token, code string }{chat, "unauthorized"})
		}
		if tl.perm != Unauthenticated {
			cases = append(cases, struct{ token, code string }{"", "authentication_required"}, struct{ token, code string }{"ses_01jd0000000000000000000001.x", "invalid_session"})
		}
		for _, c := range cases {
			args := map[string]any{"task_id": "tsk_01jd0000000000000000000001", "action": "wait"}
			if c.token != "" {
				args["session_token"] = c.token
			}
			srv := s
			if c.code == "authentication_required" {
				srv = New(st, Options{Logf: t.Logf}) // a connection that never authenticated
			}
			out, isErr := invoke(t, srv, srv.tools[name], args)
			if !isErr || out["error"] != c.code {
				t.Errorf("%s as %s: got %v, want %s", name, c.code, out["error"], c.code)
			}
		}
	}
	after, err := st.Tasks(filestore.TaskFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("refused calls changed the tasks: %d → %d", len(before), len(after))
	}
}
