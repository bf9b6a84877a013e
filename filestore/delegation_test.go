package filestore

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/aipm/aipm/filestore/internal/engine"
)

func mustDelegate(t *testing.T, s *Store, from, to, taskID, purpose string) *Delegation {
	t.Helper()
	d, err := s.CreateDelegation(as(from), DelegationRequest{TaskID: taskID, TargetAgentID: to, Purpose: purpose})
	if err != nil {
		t.Fatalf("CreateDelegation(%s → %s): %v", from, to, err)
	}
	return d
}

func TestDelegationLifecycle(t *testing.T) {
	s := newTestStore(t)
	tk := mustTask(t, s, NewTask{Title: "needs a chat", AssigneeID: "w1"})
	d1, err := s.CreateDelegation(as("w1"), DelegationRequest{TaskID: tk.ID, TargetAgentID: "w2", Purpose: "6往復しりとりをしてほしい", Context: "最初は「りんご」で"})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := s.Project()
	if d1.Status != DelegationPending || d1.AgentID != "w1" || d1.TaskID != tk.ID || d1.ProjectID != p.ID || d1.Version != 1 ||
		!strings.HasPrefix(d1.ID, "dlg_") || d1.ProcessedAt != nil {
		t.Errorf("created %+v", d1)
	}
	d2 := mustDelegate(t, s, "w1", "owner", "", "tell the owner") // humans are fine targets
	mustDelegate(t, s, "w2", "w1", "", "someone else's")
	pending, err := s.PendingDelegations("w1")
	if err != nil || len(pending) != 2 || pending[0].ID != d1.ID || pending[1].ID != d2.ID {
		t.Fatalf("PendingDelegations = %+v, %v", pending, err)
	}
	// Taken oldest first.
	got, err := s.TakeDelegation(as("w1"))
	if err != nil || got == nil || got.ID != d1.ID || got.Status != DelegationProcessing || got.ProcessedAt == nil {
		t.Fatalf("TakeDelegation = %+v, %v", got, err)
	}
	if got, _ := s.TakeDelegation(as("w1")); got == nil || got.ID != d2.ID {
		t.Fatalf("second TakeDelegation = %+v", got)
	}
	if got, _ := s.TakeDelegation(as("w1")); got != nil {
		t.Fatalf("third TakeDelegation = %+v, want none", got)
	}
	done, err := s.CompleteDelegation(as("w1"), d1.ID, "", "6往復完了")
	if err != nil || done.Status != DelegationCompleted || done.Result != "6往復完了" || done.CompletedAt == nil {
		t.Fatalf("CompleteDelegation = %+v, %v", done, err)
	}
	failed, err := s.CompleteDelegation(as("w1"), d2.ID, DelegationFailed, "owner did not answer")
	if err != nil || failed.Status != DelegationFailed {
		t.Fatalf("failing = %+v, %v", failed, err)
	}
	byTask, err := s.Delegations(DelegationFilter{TaskID: tk.ID})
	if err != nil || len(byTask) != 1 || byTask[0].ID != d1.ID || byTask[0].Status != DelegationCompleted {
		t.Errorf("by task: %+v, %v", byTask, err)
	}
	var changes []string
	for _, e := range mustEvents(t, s, d1.ID) {
		changes = append(changes, e.Actor+" "+e.Change+" "+e.From+"→"+e.To)
	}
	want := []string{"w1 created →pending", "w1 status pending→processing", "w1 status processing→completed"}
	if !slices.Equal(changes, want) {
		t.Errorf("history %q", changes)
	}
}

func TestCreateDelegationRefusals(t *testing.T) {
	s := newTestStore(t)
	addAgents(t, s)
	for _, tc := range []struct {
		name, from string
		r          DelegationRequest
		want       string
	}{
		{"self", "w1", DelegationRequest{TargetAgentID: "w1", Purpose: "x"}, "cannot_delegate_to_self"},
		{"unknown target", "w1", DelegationRequest{TargetAgentID: "ghost", Purpose: "x"}, "agent_not_found"},
		{"inactive target", "w1", DelegationRequest{TargetAgentID: "gone", Purpose: "x"}, "target_agent_not_in_project"},
		{"inactive delegator", "gone", DelegationRequest{TargetAgentID: "w1", Purpose: "x"}, "agent_not_assigned_to_project"},
		{"human delegator", "owner", DelegationRequest{TargetAgentID: "w1", Purpose: "x"}, "invalid_argument"},
		{"empty purpose", "w1", DelegationRequest{TargetAgentID: "w2", Purpose: " "}, "invalid_argument"},
		{"long purpose", "w1", DelegationRequest{TargetAgentID: "w2", Purpose: strings.Repeat("目", 4001)}, "content_too_long"},
		{"long context", "w1", DelegationRequest{TargetAgentID: "w2", Purpose: "x", Context: strings.Repeat("目", 4001)}, "content_too_long"},
		{"unknown task", "w1", DelegationRequest{TargetAgentID: "w2", Purpose: "x", TaskID: "tsk_nope"}, "task_not_found"},
		{"path-like task", "w1", DelegationRequest{TargetAgentID: "w2", Purpose: "x", TaskID: "../tsk"}, "invalid_id"},
	} {
		if _, err := s.CreateDelegation(as(tc.from), tc.r); code(err) != tc.want {
			t.Errorf("%s: got %q (%v), want %s", tc.name, code(err), err, tc.want)
		}
	}
	if list, _ := s.Delegations(DelegationFilter{}); len(list) != 0 {
		t.Errorf("refusals created %d delegations", len(list))
	}
}

func TestCompleteDelegationRules(t *testing.T) {
	s := newTestStore(t)
	d := mustDelegate(t, s, "w1", "w2", "", "ask")
	for _, tc := range []struct {
		actor, id, status, want string
	}{
		{"w2", d.ID, "", "not_delegation_owner"},
		{"w1", "dlg_nope", "", "delegation_not_found"},
		{"w1", d.ID, "done", "invalid_argument"},
		{"w1", "tsk_x", "", "invalid_id"},
	} {
		if _, err := s.CompleteDelegation(as(tc.actor), tc.id, tc.status, "r"); code(err) != tc.want {
			t.Errorf("%+v: got %q", tc, code(err))
		}
	}
	// Seed 003: pending → processing → completed | failed. A delegation never taken up
	// cannot be reported, neither completed nor failed, and stays pending.
	for _, status := range []string{DelegationCompleted, DelegationFailed} {
		if _, err := s.CompleteDelegation(as("w1"), d.ID, status, "done"); code(err) != "delegation_not_processing" {
			t.Errorf("%s straight from pending: %q (%v)", status, code(err), err)
		}
	}
	if got, _ := s.Delegation(d.ID); got.Status != DelegationPending || got.Result != "" || got.ProcessedAt != nil {
		t.Fatalf("a refused report changed the delegation: %+v", got)
	}
	if _, err := s.TakeDelegation(as("w1")); err != nil {
		t.Fatal(err)
	}
	got, err := s.CompleteDelegation(as("w1"), d.ID, DelegationCompleted, "done")
	if err != nil || got.ProcessedAt == nil || got.Status != DelegationCompleted {
		t.Fatalf("completing a processing delegation: %+v, %v", got, err)
	}
	if _, err := s.CompleteDelegation(as("w1"), d.ID, DelegationFailed, "again"); code(err) != "delegation_already_finished" {
		t.Errorf("second completion: %q", code(err))
	}
	if got, _ := s.Delegation(d.ID); got.Result != "done" {
		t.Errorf("second completion changed the result: %q", got.Result)
	}
}

func TestConversationServesDelegation(t *testing.T) {
	s := newTestStore(t)
	tk := mustTask(t, s, NewTask{Title: "coordinate", AssigneeID: "w1"})
	d := mustDelegate(t, s, "w1", "w2", tk.ID, "agree on the API")
	other := mustDelegate(t, s, "w1", "mgr", "", "report")
	if _, err := s.TakeDelegation(as("w1")); err != nil {
		t.Fatal(err)
	}
	// A conversation with the delegation's target inherits its task and is linked to it.
	res, err := s.StartConversation(as("w1"), ConversationRequest{Target: "w2", InitialMessage: "API?"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Conversation.TaskID != tk.ID || res.Delegation == nil || res.Delegation.ID != d.ID {
		t.Fatalf("conversation %+v, delegation %+v", res.Conversation, res.Delegation)
	}
	if got, _ := s.Delegation(d.ID); got.ConversationID != res.Conversation.ID || got.Status != DelegationProcessing {
		t.Errorf("delegation after start: %+v", got)
	}
	if list, _ := s.Conversations(ConversationFilter{TaskID: tk.ID}); len(list) != 1 {
		t.Errorf("conversations by task: %d", len(list))
	}
	// An explicit delegation id links a still-pending delegation and starts processing it;
	// an explicit task id is kept.
	res, err = s.StartConversation(as("w1"), ConversationRequest{Target: "mgr", DelegationID: other.ID, TaskID: tk.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Delegation(other.ID); got.ConversationID != res.Conversation.ID || got.Status != DelegationProcessing || got.ProcessedAt == nil {
		t.Errorf("explicitly linked delegation: %+v", got)
	}
	if res.Conversation.TaskID != tk.ID {
		t.Errorf("explicit task id lost: %q", res.Conversation.TaskID)
	}
	// Someone else's delegation is refused, and so is a finished one.
	theirs := mustDelegate(t, s, "w2", "mgr", "", "x")
	if _, err := s.StartConversation(as("w2"), ConversationRequest{Target: "mgr", DelegationID: d.ID}); code(err) != "not_delegation_owner" {
		t.Errorf("someone else's delegation: %q", code(err))
	}
	if _, err := s.TakeDelegation(as("w2")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CompleteDelegation(as("w2"), theirs.ID, "", "skip"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartConversation(as("w2"), ConversationRequest{Target: "mgr", DelegationID: theirs.ID}); code(err) != "delegation_already_finished" {
		t.Errorf("finished delegation: %q", code(err))
	}
}

func TestDoctorChecksDelegations(t *testing.T) {
	s := newTestStore(t)
	d := mustDelegate(t, s, "w1", "w2", "", "ask")
	if _, err := s.OpenChat(as("owner"), "w1"); err != nil {
		t.Fatal(err)
	}
	if problems, _ := s.Check(); len(problems) != 0 {
		t.Fatalf("clean store: %v", problems)
	}
	bad := *d
	bad.ID, bad.Status, bad.TargetAgentID, bad.ConversationID, bad.TaskID = "dlg_bad", "lost", "ghost", "cnv_missing", "tsk_missing"
	data, _ := engine.EncodeJSON(&bad)
	if err := os.WriteFile(s.delegationPath("dlg_bad"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.delegationPath("dlg_torn"), []byte(`{"id": "dlg_torn",`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.chatStatePath("ghost"), []byte(`{"agent_id":"ghost","open":true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	problems, err := s.Check()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.String())
	}
	for _, want := range []string{
		`.ai-pm/delegations/dlg_bad.json:9: invalid status "lost"`,
		`.ai-pm/delegations/dlg_bad.json:6: target_agent_id "ghost" does not exist`,
		`.ai-pm/delegations/dlg_bad.json:5: task "tsk_missing" does not exist`,
		`.ai-pm/delegations/dlg_bad.json:11: conversation "cnv_missing" does not exist`,
		`.ai-pm/delegations/dlg_torn.json:1: invalid JSON`,
		`.ai-pm/runtime/chat/ghost.json:1: agent "ghost" does not exist`,
	} {
		if !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, want) }) {
			t.Errorf("missing problem %q", want)
		}
	}
	if len(got) != 6 {
		t.Errorf("%d problems:\n%s", len(got), strings.Join(got, "\n"))
	}
	// Readers skip the broken file.
	if list, err := s.Delegations(DelegationFilter{}); err != nil || len(list) != 2 {
		t.Errorf("Delegations with a broken file: %d, %v", len(list), err)
	}
}

func TestDelegationFileIsStable(t *testing.T) {
	s := newTestStore(t)
	d := mustDelegate(t, s, "w1", "w2", "", "ask")
	data := fileBytes(t, s.delegationPath(d.ID))
	got, err := s.Delegation(d.ID)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := engine.EncodeJSON(got)
	if string(again) != string(data) {
		t.Errorf("rewriting changes the bytes")
	}
	var keys []string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if k, _, ok := strings.Cut(line, `":`); ok && strings.HasPrefix(line, `"`) {
			keys = append(keys, strings.TrimPrefix(k, `"`))
		}
	}
	want := []string{"id", "project_id", "agent_id", "task_id", "target_agent_id", "purpose", "context", "status", "result",
		"conversation_id", "created_at", "processed_at", "completed_at", "updated_at", "version"}
	if !slices.Equal(keys, want) {
		t.Errorf("keys %v", keys)
	}
}

// TestResumeEndsAnUnlinkedConversation: a chat session that dies between writing the
// conversation it started for a delegation and linking the delegation to it leaves a
// conversation only the conversation names; the next session's hand-over ends it too, so
// the partner is told and a fresh conversation can start.
func TestResumeEndsAnUnlinkedConversation(t *testing.T) {
	s := newTestStore(t)
	tk := mustTask(t, s, NewTask{Title: "coordinate", AssigneeID: "w1"})
	d := mustDelegate(t, s, "w1", "w2", tk.ID, "agree on the API")
	if _, err := s.TakeDelegation(as("w1")); err != nil {
		t.Fatal(err)
	}
	res, err := s.StartConversation(as("w1"), ConversationRequest{Target: "w2", DelegationID: d.ID, InitialMessage: "API?"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Conversation.DelegationID != d.ID {
		t.Fatalf("the conversation does not name its delegation: %+v", res.Conversation)
	}
	// The state the dead session left: the delegation does not name the conversation yet.
	unlinked, _ := s.Delegation(d.ID)
	unlinked.ConversationID = ""
	writeRaw(t, s.delegationPath(d.ID), unlinked)

	got, prev, err := s.ResumeDelegation(as("w1"), &Session{ID: "ses_next", AgentID: "w1", CreatedAt: s.Now()})
	if err != nil || got == nil || got.ID != d.ID {
		t.Fatalf("ResumeDelegation = %+v, %v", got, err)
	}
	if prev != res.Conversation.ID {
		t.Errorf("previous conversation %q, want %q", prev, res.Conversation.ID)
	}
	c, err := s.Conversation(res.Conversation.ID)
	if err != nil || c.Live() || c.EndReason != EndSessionExpired {
		t.Errorf("the unlinked conversation after the hand-over: %+v, %v", c, err)
	}
	if _, err := s.StartConversation(as("w1"), ConversationRequest{Target: "w2", DelegationID: d.ID}); err != nil {
		t.Errorf("a fresh conversation for the delegation: %v", err)
	}
}

// What waits on an agent that will not answer ends at once: the delegations that target
// it fail with a result naming it and why, its live conversations end with the reason
// (its partner is told, it is not waited for); other agents' talks stay as they were, and
// a second pass finds nothing to do.
func TestEndTalksWith(t *testing.T) {
	s := newTestStore(t)
	tk := mustTask(t, s, NewTask{Title: "needs a chat", AssigneeID: "w1"})
	taken := mustDelegate(t, s, "w1", "w2", tk.ID, "ask w2")
	queued := mustDelegate(t, s, "w1", "w2", tk.ID, "ask w2 again")
	other := mustDelegate(t, s, "w1", "mgr", tk.ID, "ask mgr")
	if _, err := s.TakeDelegation(as("w1")); err != nil { // the oldest: taken is processing, queued pending
		t.Fatal(err)
	}
	c := mustStart(t, s, "w1", "w2", ConversationRequest{Purpose: "ask", InitialMessage: "hello", DelegationID: taken.ID})
	keep := mustStart(t, s, "w1", "mgr", ConversationRequest{Purpose: "ask", InitialMessage: "hello"})

	if _, _, err := s.EndTalksWith([]Unreachable{{AgentID: "w2", Reason: "gone"}}); code(err) != "invalid_argument" {
		t.Errorf("an unknown reason: %v, want invalid_argument", err)
	}
	dlgs, convs, err := s.EndTalksWith([]Unreachable{{AgentID: "w2", Reason: EndAgentInactive}})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(dlgs)
	want := []string{taken.ID, queued.ID}
	slices.Sort(want)
	if !slices.Equal(dlgs, want) || !slices.Equal(convs, []string{c.ID}) {
		t.Fatalf("ended %v and %v, want %v and [%s]", dlgs, convs, want, c.ID)
	}
	for _, id := range want {
		d, _ := s.Delegation(id)
		if d.Status != DelegationFailed || d.CompletedAt == nil || !strings.HasPrefix(d.Result, "w2 was made inactive and will not answer") {
			t.Errorf("%s: %+v", id, d)
		}
	}
	if d, _ := s.Delegation(other.ID); d.Status != DelegationPending {
		t.Errorf("a delegation to another agent changed: %+v", d)
	}
	got := mustConv(t, s, c.ID)
	if got.State != ConvTerminating || got.EndReason != EndAgentInactive || !got.WasNotified("w2") || got.WasNotified("w1") {
		t.Errorf("the conversation with w2: %+v", got)
	}
	if got := mustConv(t, s, keep.ID); got.State != ConvPending {
		t.Errorf("a conversation with another agent changed: %+v", got)
	}
	if d, cv, err := s.EndTalksWith([]Unreachable{{AgentID: "w2", Reason: EndAgentInactive}}); err != nil || len(d)+len(cv) != 0 {
		t.Errorf("second pass: %v, %v, %v; want nothing", d, cv, err)
	}
	// One whose command cannot start: the result says what failed.
	d := mustDelegate(t, s, "w1", "w2", tk.ID, "ask w2 once more")
	if _, _, err := s.EndTalksWith([]Unreachable{{AgentID: "w2", Reason: EndAgentCannotStart, Detail: "it did not authenticate"}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Delegation(d.ID); got.Status != DelegationFailed || !strings.HasPrefix(got.Result, "w2 cannot be started (it did not authenticate)") {
		t.Errorf("cannot start: %+v", got)
	}
}
