package filestore

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// approvalStore extends newTestStore with a second chain under the owner, so that an agent
// has both human and AI ancestors and a human outside its chain exists:
//
//	owner (human) ─┬─ mgr (ai manager) ─┬─ w1, w2
//	               ├─ lead (human) ── mgr2 (ai manager) ── w3 (ai worker, max 3 in parallel)
//	               └─ po (human)
func approvalStore(t *testing.T) *Store {
	t.Helper()
	s := newTestStore(t)
	for _, n := range []NewAgent{
		{ID: "lead", Type: AgentHuman, Hierarchy: HierarchyManager, ParentID: "owner"},
		{ID: "po", Type: AgentHuman, Hierarchy: HierarchyManager, ParentID: "owner"},
		{ID: "mgr2", Hierarchy: HierarchyManager, ParentID: "lead", Passkey: "mgr2-passkey"},
		{ID: "w3", ParentID: "mgr2", Passkey: "w3-passkey", MaxParallelTasks: 3},
	} {
		if _, _, err := s.AddAgent(human, n); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// say puts a message from one agent into another's mailbox, as a chat would.
func say(t *testing.T, s *Store, from, to, content string) {
	t.Helper()
	m := Message{ID: NewID(PrefixMessage, s.Now()), SenderID: from, Content: content, CreatedAt: s.Now()}
	if err := s.locked(func() error { return s.appendMailbox(to, m) }); err != nil {
		t.Fatal(err)
	}
}

// mailbox returns every message line of an agent's chat.jsonl.
func mailbox(t *testing.T, s *Store, id string) []Message {
	t.Helper()
	data, err := os.ReadFile(s.mailboxPath(id))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []Message
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var m Message
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%s mailbox: bad line %q: %v", id, line, err)
		}
		out = append(out, m)
	}
	return out
}

func mustRequest(t *testing.T, s *Store, assignee, requester, title string) *RequestResult {
	t.Helper()
	if requester != "" && requester != assignee {
		say(t, s, requester, assignee, "please: "+title)
	}
	res, err := s.RequestTask(Actor{ID: assignee, Via: ViaTool}, requester, TaskRequest{Title: title})
	if err != nil {
		t.Fatalf("RequestTask(%s for %s): %v", assignee, requester, err)
	}
	return res
}

func TestRequestTaskFromAncestorIsApproved(t *testing.T) {
	s := approvalStore(t)
	say(t, s, "lead", "w3", "please fix the login page")
	res := mustRequest(t, s, "w3", "lead", "Fix login")
	tk := res.Task
	if tk.Approval != ApprovalApproved || tk.ApprovedBy != "lead" || tk.Status != StatusBacklog ||
		tk.AssigneeID != "w3" || tk.RequesterID != "lead" || tk.CreatedBy != "w3" {
		t.Errorf("task = %+v, want approved by lead, backlog, assigned to w3, requested by lead, created by w3", tk)
	}
	if len(res.Notified) != 0 {
		t.Errorf("notified %v, want nobody", res.Notified)
	}
	for _, id := range []string{"owner", "lead", "mgr2"} {
		if got := mailbox(t, s, id); len(got) != 0 {
			t.Errorf("%s mailbox holds %d lines, want none", id, len(got))
		}
	}
	if got, err := s.Task(tk.ID); err != nil || got.Approval != ApprovalApproved {
		t.Errorf("stored task: %+v, %v", got, err)
	}
	// An approved request starts like any task.
	if _, err := s.SetTaskStatus(human, tk.ID, StatusTodo, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetTaskStatus(human, tk.ID, StatusInProgress, ""); err != nil {
		t.Errorf("approved request cannot start: %v", err)
	}
}

func TestRequestTaskFromNonAncestorWaitsAndMessagesHumanAncestors(t *testing.T) {
	s := approvalStore(t)
	say(t, s, "po", "w3", "could you add search to the user list?")
	say(t, s, "mgr2", "w3", "ok with me") // a later message from someone else
	res := mustRequest(t, s, "w3", "po", "Add search")
	tk := res.Task
	if tk.Approval != ApprovalPending || tk.ApprovedBy != "" || tk.Status != StatusBacklog || tk.RequesterID != "po" {
		t.Errorf("task = %+v, want pending_approval, backlog, requested by po", tk)
	}
	if want := []string{"lead", "owner"}; !slices.Equal(res.Notified, want) {
		t.Errorf("notified %v, want %v (human ancestors, nearest first)", res.Notified, want)
	}
	for _, id := range []string{"lead", "owner"} {
		box := mailbox(t, s, id)
		if len(box) != 1 {
			t.Fatalf("%s mailbox holds %d lines, want exactly 1", id, len(box))
		}
		m := box[0]
		if m.SenderID != SystemSender || m.ReceiverID != "" || m.RelatedTaskID != tk.ID || ValidateEntityID(PrefixMessage, m.ID) != nil {
			t.Errorf("%s got %+v, want a system message about %s", id, m, tk.ID)
		}
		for _, want := range []string{tk.ID, "w3", "po", "aipm task approve " + tk.ID, "aipm task reject " + tk.ID} {
			if !strings.Contains(m.Content, want) {
				t.Errorf("%s message %q does not mention %q", id, m.Content, want)
			}
		}
	}
	// The AI ancestor, the requester and agents outside the chain get nothing.
	for _, id := range []string{"mgr", "po"} {
		if got := mailbox(t, s, id); len(got) != 0 {
			t.Errorf("%s mailbox holds %d lines, want none", id, len(got))
		}
	}
	if got := mailbox(t, s, "mgr2"); len(got) != 0 {
		t.Errorf("AI ancestor mgr2 was messaged: %+v", got)
	}
	// A pending request cannot start.
	if _, err := s.SetTaskStatus(human, tk.ID, StatusTodo, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetTaskStatus(human, tk.ID, StatusInProgress, ""); code(err) != "approval_required" {
		t.Errorf("pending request → in_progress: got %q, want approval_required", code(err))
	}
}

func TestRequestTaskByNonAncestors(t *testing.T) {
	s := newTestStore(t)
	// The caller itself and a sibling are not ancestors: both requests wait, and the only
	// human ancestor (owner) is told each time.
	say(t, s, "w2", "w1", "can you take the docs?")
	for _, requester := range []string{"", "w1", "w2"} {
		res := mustRequest(t, s, "w1", requester, "Docs "+requester)
		want := requester
		if want == "" {
			want = "w1"
		}
		if res.Task.Approval != ApprovalPending || res.Task.RequesterID != want {
			t.Errorf("requester %q: approval %s, requester_id %q; want pending_approval, %q", requester, res.Task.Approval, res.Task.RequesterID, want)
		}
		if !slices.Equal(res.Notified, []string{"owner"}) {
			t.Errorf("requester %q: notified %v, want [owner]", requester, res.Notified)
		}
	}
	if got := mailbox(t, s, "owner"); len(got) != 3 {
		t.Errorf("owner mailbox holds %d lines, want 3 (one per request)", len(got))
	}
	if got := mailbox(t, s, "mgr"); len(got) != 0 {
		t.Errorf("AI ancestor mgr was messaged: %+v", got)
	}
}

func TestRequestTaskRefusals(t *testing.T) {
	s := approvalStore(t)
	say(t, s, "po", "w3", "please: X")
	w3 := Actor{ID: "w3", Via: ViaTool}
	for _, tc := range []struct {
		name, requester string
		req             TaskRequest
		want            string
	}{
		// Naming an ancestor who never asked would approve the agent's own work.
		{"unverified ancestor", "lead", TaskRequest{Title: "x"}, "unverified_requester"},
		{"unverified outsider", "w1", TaskRequest{Title: "x"}, "unverified_requester"},
		{"unknown requester", "ghost", TaskRequest{Title: "x"}, "agent_not_found"},
		{"path-like requester", "../owner", TaskRequest{Title: "x"}, "invalid_id"},
		{"no title", "po", TaskRequest{Title: "  "}, "invalid_argument"},
		{"bad priority", "po", TaskRequest{Title: "x", Priority: "asap"}, "invalid_argument"},
		{"missing parent", "po", TaskRequest{Title: "x", ParentID: "tsk_nope"}, "task_not_found"},
		{"path-like parent", "po", TaskRequest{Title: "x", ParentID: "tsk_../x"}, "invalid_id"},
	} {
		if _, err := s.RequestTask(w3, tc.requester, tc.req); code(err) != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, code(err), tc.want)
		}
	}
	if _, err := s.RequestTask(Actor{ID: "../w3", Via: ViaTool}, "", TaskRequest{Title: "x"}); code(err) != "invalid_id" {
		t.Errorf("path-like assignee: got %q, want invalid_id", code(err))
	}
	if tasks, _ := s.Tasks(TaskFilter{}); len(tasks) != 0 {
		t.Errorf("refused requests created %d tasks", len(tasks))
	}
	if got := mailbox(t, s, "owner"); len(got) != 0 {
		t.Errorf("refused requests messaged the owner: %+v", got)
	}
}

func TestRequesterMustBeRecent(t *testing.T) {
	s := approvalStore(t)
	say(t, s, "lead", "w3", "an old request")
	for i := range requesterWindow {
		say(t, s, "po", "w3", "chatter "+string(rune('a'+i)))
	}
	if _, err := s.RequestTask(Actor{ID: "w3", Via: ViaTool}, "lead", TaskRequest{Title: "x"}); code(err) != "unverified_requester" {
		t.Errorf("requester outside the window: got %q, want unverified_requester", code(err))
	}
	if got, err := s.LastSender("w3"); err != nil || got != "po" {
		t.Errorf("LastSender = %q, %v; want po", got, err)
	}
	// System messages are nobody's request.
	say(t, s, SystemSender, "w3", "session started")
	if got, err := s.LastSender("w3"); err != nil || got != "po" {
		t.Errorf("LastSender after a system message = %q, %v; want po", got, err)
	}
	if got, err := s.LastSender("w1"); err != nil || got != "" {
		t.Errorf("LastSender of an empty mailbox = %q, %v; want none", got, err)
	}
}

func TestRecentSendersReadsOnlyWholeLines(t *testing.T) {
	s := approvalStore(t)
	say(t, s, "po", "w3", strings.Repeat("x", 100))
	say(t, s, "lead", "w3", "y")
	// A torn last line (a writer mid-append) is not a message.
	f, err := os.OpenFile(s.mailboxPath("w3"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"id":"msg_x","senderId":"owner","content":"tor`)
	f.Close()
	for _, tc := range []struct {
		n    int
		want []string
	}{{1, []string{"lead"}}, {2, []string{"lead", "po"}}, {5, []string{"lead", "po"}}} {
		got, err := s.recentSenders("w3", tc.n)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("recentSenders(%d) = %v, %v; want %v", tc.n, got, err, tc.want)
		}
	}
	// A window that cuts a line drops that line, not a neighbour; one that starts exactly
	// on a line keeps it.
	raw, err := os.ReadFile(s.mailboxPath("w3"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(raw), "\n") // po's, lead's, the torn one
	torn, lead := len(lines[2]), lines[1]
	for _, tc := range []struct {
		limit int
		want  string
	}{
		{len(lead) + torn - 1, ""},
		{len(lead) + torn, lead},
		{len(lead) + torn + 10, lead},
		{len(raw), lines[0] + lead},
		{len(raw) + 100, lines[0] + lead},
	} {
		data, err := readTail(s.mailboxPath("w3"), int64(tc.limit))
		if err != nil || string(data) != tc.want {
			t.Errorf("readTail(%d) = %q, %v; want %q", tc.limit, data, err, tc.want)
		}
	}
}

func TestApproveAndReject(t *testing.T) {
	s := approvalStore(t)
	say(t, s, "po", "w3", "three things, please")
	a := mustRequest(t, s, "w3", "po", "A").Task
	b := mustRequest(t, s, "w3", "po", "B").Task
	c := mustRequest(t, s, "w3", "", "C").Task

	// Not ancestors of w3: another human outside the chain, a manager of another chain,
	// a sibling chain's worker, the assignee itself.
	for _, who := range []string{"po", "mgr", "w1", "w3"} {
		_, err := s.ApproveTask(Actor{ID: who, Via: ViaCLI}, a.ID)
		if code(err) != "unauthorized" {
			t.Errorf("approve by %s: got %q, want unauthorized", who, code(err))
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, who) || !strings.Contains(msg, "w3") {
			t.Errorf("approve by %s: message %q should name %s and w3", who, msg, who)
		}
		if _, err := s.RejectTask(Actor{ID: who, Via: ViaCLI}, a.ID, "no"); code(err) != "unauthorized" {
			t.Errorf("reject by %s: got %q, want unauthorized", who, code(err))
		}
	}
	if got, _ := s.Task(a.ID); got.Approval != ApprovalPending || got.Version != a.Version {
		t.Fatalf("refused decisions changed the task: %+v", got)
	}

	// The AI manager of the chain approves A; it can then start.
	approved, err := s.ApproveTask(Actor{ID: "mgr2", Via: ViaTool}, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if approved.Approval != ApprovalApproved || approved.ApprovedBy != "mgr2" || approved.Version != a.Version+1 || approved.Status != StatusBacklog {
		t.Errorf("approved = %+v", approved)
	}
	if got, _ := s.Task(a.ID); got.Approval != ApprovalApproved || got.ApprovedBy != "mgr2" {
		t.Errorf("stored after approve: %+v", got)
	}
	for _, id := range []string{a.ID, b.ID, c.ID} {
		if _, err := s.SetTaskStatus(human, id, StatusTodo, ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.SetTaskStatus(human, a.ID, StatusInProgress, ""); err != nil {
		t.Errorf("approved task cannot start: %v", err)
	}

	// The human grand-parent rejects B; it keeps its status and can never start.
	rejected, err := s.RejectTask(Actor{ID: "lead", Via: ViaCLI}, b.ID, "not this quarter")
	if err != nil {
		t.Fatal(err)
	}
	if rejected.Approval != ApprovalRejected || rejected.RejectedReason != "not this quarter" || rejected.ApprovedBy != "" || rejected.Status != StatusTodo {
		t.Errorf("rejected = %+v", rejected)
	}
	if _, err := s.SetTaskStatus(human, b.ID, StatusInProgress, ""); code(err) != "task_rejected" {
		t.Errorf("rejected → in_progress: got %q, want task_rejected", code(err))
	}

	// Only pending requests are decided, once.
	for _, tc := range []struct {
		name string
		do   func() error
	}{
		{"approve approved", func() error { _, err := s.ApproveTask(human, a.ID); return err }},
		{"reject approved", func() error { _, err := s.RejectTask(human, a.ID, ""); return err }},
		{"approve rejected", func() error { _, err := s.ApproveTask(human, b.ID); return err }},
		{"reject rejected", func() error { _, err := s.RejectTask(human, b.ID, ""); return err }},
		{"approve ordinary task", func() error {
			tk := mustTask(t, s, NewTask{Title: "ordinary", AssigneeID: "w3"})
			_, err := s.ApproveTask(human, tk.ID)
			return err
		}},
	} {
		if err := tc.do(); code(err) != "not_pending_approval" {
			t.Errorf("%s: got %q, want not_pending_approval", tc.name, code(err))
		}
	}
	for _, id := range []string{"../tasks/x", "tsk_/etc", ""} {
		if _, err := s.ApproveTask(human, id); code(err) != "invalid_id" {
			t.Errorf("approve %q: got %q, want invalid_id", id, code(err))
		}
	}
	if _, err := s.ApproveTask(human, "tsk_missing"); code(err) != "task_not_found" {
		t.Errorf("approve missing: got %q, want task_not_found", code(err))
	}
	if _, err := s.ApproveTask(Actor{ID: "../owner", Via: ViaCLI}, c.ID); code(err) != "invalid_id" {
		t.Errorf("path-like approver: got %q, want invalid_id", code(err))
	}

	// The owner, at the root, may decide for anyone below.
	if _, err := s.ApproveTask(human, c.ID); err != nil {
		t.Errorf("owner approve: %v", err)
	}

	// History: who requested, who decided, through what.
	type ev struct{ actor, via, change, from, to, reason, requester string }
	var got []ev
	for _, id := range []string{a.ID, b.ID} {
		evs, err := s.Events(id)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.Change != "status" {
				got = append(got, ev{e.Actor, e.Via, e.Change, e.From, e.To, e.Reason, e.RequesterID})
			}
		}
	}
	want := []ev{
		{"w3", ViaTool, "created", "", StatusBacklog, "", "po"},
		{"mgr2", ViaTool, "approval", ApprovalPending, ApprovalApproved, "", "po"},
		{"w3", ViaTool, "created", "", StatusBacklog, "", "po"},
		{"lead", ViaCLI, "approval", ApprovalPending, ApprovalRejected, "not this quarter", "po"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("history:\n got %+v\nwant %+v", got, want)
	}
}

func TestApproveNeedsAssignee(t *testing.T) {
	s := approvalStore(t)
	tk := mustTask(t, s, NewTask{Title: "orphan", Approval: ApprovalPending})
	if _, err := s.ApproveTask(human, tk.ID); code(err) != "assignee_required" {
		t.Errorf("approve unassigned: got %q, want assignee_required", code(err))
	}
}

func TestRequesterProofMustAskForTheTask(t *testing.T) {
	s := approvalStore(t)
	say(t, s, "lead", "w3", "good morning")
	w3 := Actor{ID: "w3", Via: ViaTool}
	if _, err := s.RequestTask(w3, "lead", TaskRequest{Title: "Deploy to production"}); code(err) != "unverified_requester" {
		t.Errorf("a greeting as proof: got %q, want unverified_requester", code(err))
	}
	// a message that mentions the title is no request, least of all a negated one
	say(t, s, "lead", "w3", "Please do NOT deploy to production until Monday")
	say(t, s, "lead", "w3", "Should we deploy to production?")
	if _, err := s.RequestTask(w3, "lead", TaskRequest{Title: "Deploy to production"}); code(err) != "unverified_requester" {
		t.Errorf("a negated mention as proof: got %q, want unverified_requester", code(err))
	}
	say(t, s, "lead", "w3", "Please  DEPLOY to production.")
	msgs, _, _ := s.Unread("w3")
	ids := map[string]string{}
	for _, m := range msgs {
		ids[m.Content] = m.ID
	}
	// the message named by id must itself be the request
	for _, c := range []string{"good morning", "Please do NOT deploy to production until Monday"} {
		if _, err := s.RequestTask(w3, "lead", TaskRequest{Title: "Deploy to production", RequestMessageID: ids[c]}); code(err) != "unverified_requester" {
			t.Errorf("%q named by id: got %q, want unverified_requester", c, code(err))
		}
	}
	res, err := s.RequestTask(w3, "lead", TaskRequest{Title: "Deploy to production", RequestMessageID: ids["Please  DEPLOY to production."]})
	if err != nil || res.Task.Approval != ApprovalApproved {
		t.Fatalf("the asking message: %v", err)
	}
	if res, err := s.RequestTask(w3, "lead", TaskRequest{Title: "deploy to production"}); err != nil || res.Task.ApprovedBy != "lead" {
		t.Errorf("the asking message found by title: %v", err)
	}
	// a message of someone else named by id is no proof of lead's request
	say(t, s, "w1", "w3", "deploy to production")
	var other string
	for _, m := range mailbox(t, s, "w3") {
		if m.SenderID == "w1" {
			other = m.ID
		}
	}
	if _, err := s.RequestTask(w3, "lead", TaskRequest{Title: "deploy to production", RequestMessageID: other}); code(err) != "unverified_requester" {
		t.Errorf("another sender's message named by id: got %q, want unverified_requester", code(err))
	}
}

func TestIsRequestFor(t *testing.T) {
	const title = "Deploy to production"
	for _, tc := range []struct {
		content string
		want    bool
	}{
		{"deploy to production", true},
		{"  Deploy   TO production! ", true},
		{"Please deploy to production.", true},
		{"please: deploy to production", true},
		{"Task: Deploy to production", true},
		{"request_task: deploy to production", true},
		{"@@タスク作成: deploy to production --priority high", true},
		{"and could you deploy to production?", true},
		{"Can you please deploy to production", true},
		{"Deploy to production, please!", true},
		{"could you not deploy to production?", false},
		{"can you tell me why we deploy to production?", false},
		{"Please do NOT deploy to production", false},
		{"do not deploy to production", false},
		{"Never deploy to production", false},
		{"Should we deploy to production?", false},
		{"please deploy to production tonight", false},
		{"pleasedeploy to production", false},
		{"deploy to production --priority high", false},
		{"", false},
	} {
		if got := isRequestFor(tc.content, title); got != tc.want {
			t.Errorf("isRequestFor(%q, %q) = %v, want %v", tc.content, title, got, tc.want)
		}
	}
}
