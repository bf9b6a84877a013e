package filestore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aipm/aipm/filestore/internal/engine"
)

// bothSessions gives the agent an in_progress task and a chat a human opened, and
// authenticates a live task session and a live chat session for it.
func bothSessions(t *testing.T, s *Store, agentID string) (task, chat *Session) {
	t.Helper()
	startTask(t, s, agentID)
	ts, err := s.Authenticate(AuthRequest{AgentID: agentID, Passkey: agentID + "-passkey", Purpose: PurposeTask, PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.OpenChat(human, agentID); err != nil {
		t.Fatal(err)
	}
	cs, err := s.Authenticate(AuthRequest{AgentID: agentID, Passkey: agentID + "-passkey", Purpose: PurposeChat, PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	return ts.Session, cs.Session
}

// ntf is a valid notification for an agent; tests change what they test.
func ntf(agentID, typ, purpose, msg string) Notification {
	return Notification{TargetAgentID: agentID, TargetPurpose: purpose, Type: typ, Action: "check", Message: msg, Instruction: "do " + msg}
}

func mustNotify(t *testing.T, s *Store, n Notification) *Notification {
	t.Helper()
	got, created, err := s.AddNotification(human, n)
	if err != nil {
		t.Fatalf("AddNotification(%+v): %v", n, err)
	}
	if !created {
		t.Fatalf("AddNotification(%+v) created nothing", n)
	}
	return got
}

// messages returns the messages of notifications, in order.
func messages(ns []Notification) []string {
	out := []string{}
	for _, n := range ns {
		out = append(out, n.Message)
	}
	return out
}

func sessionMessages(t *testing.T, s *Store, se *Session, unreadOnly bool) []string {
	t.Helper()
	ns, err := s.SessionNotifications(se, unreadOnly)
	if err != nil {
		t.Fatal(err)
	}
	return messages(ns)
}

func counts(t *testing.T, s *Store, se *Session) [2]int {
	t.Helper()
	total, interrupts, err := s.UnreadCounts(se)
	if err != nil {
		t.Fatal(err)
	}
	return [2]int{total, interrupts}
}

func TestAddNotificationWritesOneCanonicalLine(t *testing.T) {
	s := newTestStore(t)
	tk := mustTask(t, s, NewTask{Title: "api", AssigneeID: "w1"})
	n := mustNotify(t, s, Notification{TargetAgentID: "w1", Type: NotifyInterrupt, Action: ActionCancel, TaskID: tk.ID,
		Message: "タスクがキャンセルされました", Instruction: "stop and call report_completed"})
	if n.Priority != NotifyHigh || n.TargetPurpose != PurposeAny || n.FromAgentID != "owner" || n.CreatedAt.IsZero() {
		t.Errorf("defaults not applied: %+v", n)
	}
	if err := ValidateEntityID(PrefixNotification, n.ID); err != nil {
		t.Errorf("id: %v", err)
	}
	data := fileBytes(t, s.inboxPath("w1"))
	if bytes.Count(data, []byte("\n")) != 1 {
		t.Fatalf("inbox has %d lines, want 1:\n%s", bytes.Count(data, []byte("\n")), data)
	}
	var back Notification
	if err := json.Unmarshal(bytes.TrimSuffix(data, []byte("\n")), &back); err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(back)
	if !bytes.Equal(append(again, '\n'), data) {
		t.Errorf("line does not round-trip:\n got %s\nwant %s", again, data)
	}
	if bytes.Contains(data, []byte("read_at")) {
		t.Errorf("read state leaked into the inbox: %s", data)
	}
	// Key order is the struct's: id first, created_at last.
	if !bytes.HasPrefix(data, []byte(`{"id":"ntf_`)) || !bytes.Contains(data, []byte(`"target_agent_id":"w1","target_purpose":"any","type":"interrupt","action":"cancel","priority":"high"`)) {
		t.Errorf("unexpected line %s", data)
	}
}

func TestAddNotificationValidation(t *testing.T) {
	s := newTestStore(t)
	addAgents(t, s) // bob (human), gone (inactive)
	task, _ := bothSessions(t, s, "w2")
	long := strings.Repeat("あ", 4001)
	cases := []struct {
		name string
		edit func(n *Notification)
		want string
	}{
		{"unknown type", func(n *Notification) { n.Type = "urgent" }, "invalid_argument"},
		{"unknown purpose", func(n *Notification) { n.TargetPurpose = "both" }, "invalid_argument"},
		{"chat notice to the chat session", func(n *Notification) { n.Type, n.TargetPurpose = NotifyChatSession, PurposeChat }, "invalid_argument"},
		{"bad action", func(n *Notification) { n.Action = "Cancel!" }, "invalid_argument"},
		{"no action", func(n *Notification) { n.Action = "" }, "invalid_argument"},
		{"bad priority", func(n *Notification) { n.Priority = "urgent" }, "invalid_argument"},
		{"empty message", func(n *Notification) { n.Message = "  " }, "empty_content"},
		{"empty instruction", func(n *Notification) { n.Instruction = "" }, "empty_content"},
		{"long instruction", func(n *Notification) { n.Instruction = long }, "content_too_long"},
		{"unknown target", func(n *Notification) { n.TargetAgentID = "nobody" }, "agent_not_found"},
		{"inactive target", func(n *Notification) { n.TargetAgentID = "gone" }, "target_agent_not_in_project"},
		{"path in target", func(n *Notification) { n.TargetAgentID = "../w1" }, "invalid_id"},
		{"missing task", func(n *Notification) { n.TaskID = "tsk_missing" }, "task_not_found"},
		{"missing conversation", func(n *Notification) { n.ConversationID = "cnv_missing" }, "conversation_not_found"},
		{"bad session id", func(n *Notification) { n.TargetSessionID = "ses_../x" }, "invalid_id"},
		{"missing session", func(n *Notification) { n.TargetSessionID = "ses_missing" }, "session_not_found"},
		{"session of another agent", func(n *Notification) { n.TargetSessionID = task.ID }, "invalid_argument"},
		{"long key", func(n *Notification) { n.Key = strings.Repeat("k", 201) }, "invalid_argument"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := ntf("w1", NotifyMessage, "", "hello")
			c.edit(&n)
			if _, _, err := s.AddNotification(human, n); code(err) != c.want {
				t.Errorf("got %q (%v), want %s", code(err), err, c.want)
			}
		})
	}
	if _, err := os.Stat(s.inboxPath("w1")); !os.IsNotExist(err) {
		t.Errorf("a refused notification was written: %v", err)
	}
	// A named session must fit the purpose.
	n := ntf("w2", NotifyMessage, PurposeChat, "x")
	n.TargetSessionID = task.ID
	if _, _, err := s.AddNotification(human, n); code(err) != "invalid_argument" {
		t.Errorf("chat purpose naming a task session: got %q", code(err))
	}
}

func TestNotificationKeyDeduplicates(t *testing.T) {
	s := newTestStore(t)
	first := ntf("w1", NotifyStatusChange, "", "task moved")
	first.Key = "task:tsk_x:status:v3"
	a := mustNotify(t, s, first)
	second := first
	second.Message = "task moved (seen by another watcher)"
	b, created, err := s.AddNotification(as("w2"), second)
	if err != nil {
		t.Fatal(err)
	}
	if created || b.ID != a.ID || b.Message != "task moved" {
		t.Errorf("duplicate key: created=%v, got %+v, want the existing %s", created, b, a.ID)
	}
	if n := bytes.Count(fileBytes(t, s.inboxPath("w1")), []byte("\n")); n != 1 {
		t.Errorf("inbox has %d lines, want 1", n)
	}
	// Keys are per inbox: the same change told to another agent is another notification.
	other := first
	other.TargetAgentID = "w2"
	mustNotify(t, s, other)

	// The key index follows an inbox another process appended to, and one rewritten as a
	// whole (a merge that dropped the line): the key is then new again.
	o, err := Open(s.Root(), Options{Now: s.now})
	if err != nil {
		t.Fatal(err)
	}
	third := first
	third.Key = "task:tsk_y:status:v1"
	c := mustNotify(t, o, third)
	if d, created, _ := s.AddNotification(as("w2"), third); created || d.ID != c.ID {
		t.Errorf("key appended by another process not found: created=%v", created)
	}
	tmp := s.inboxPath("w1") + ".new"
	lines := bytes.SplitAfter(fileBytes(t, s.inboxPath("w1")), []byte("\n"))
	os.WriteFile(tmp, lines[1], 0o644) // only the third notification's line
	os.Rename(tmp, s.inboxPath("w1"))
	if _, created, _ := s.AddNotification(as("w2"), first); !created {
		t.Error("a key gone from a rewritten inbox still counted as present")
	}
}

func TestNotificationsReachOnlyTheirSessions(t *testing.T) {
	s := newTestStore(t)
	mustNotify(t, s, ntf("w1", NotifyInterrupt, PurposeAny, "before the sessions"))
	task, chat := bothSessions(t, s, "w1")
	_, w2chat := bothSessions(t, s, "w2")
	mustNotify(t, s, ntf("w1", NotifyChatSession, "", "chat→task"))
	mustNotify(t, s, ntf("w1", NotifyInterrupt, PurposeAny, "pause"))
	mustNotify(t, s, ntf("w1", NotifyStatusChange, PurposeChat, "for chat"))
	named := ntf("w1", NotifyMessage, "", "named task session")
	named.TargetSessionID = task.ID
	mustNotify(t, s, named)
	mustNotify(t, s, ntf("w2", NotifyMessage, PurposeAny, "for w2"))

	// Interrupts first, then the rest, each newest first: the order get_notifications
	// tells the agent to follow them in.
	if got, want := sessionMessages(t, s, task, true), []string{"pause", "named task session", "chat→task"}; !slices.Equal(got, want) {
		t.Errorf("task session sees %q, want %q (interrupts first, then newest first)", got, want)
	}
	if got, want := sessionMessages(t, s, chat, true), []string{"pause", "for chat"}; !slices.Equal(got, want) {
		t.Errorf("chat session sees %q, want %q", got, want)
	}
	if got, want := sessionMessages(t, s, w2chat, true), []string{"for w2"}; !slices.Equal(got, want) {
		t.Errorf("w2 sees %q, want %q", got, want)
	}
	if got := counts(t, s, task); got != [2]int{3, 1} {
		t.Errorf("task counts %v, want 3 unread, 1 interrupt", got)
	}
	sum, err := s.NotificationSummary(task)
	if err != nil {
		t.Fatal(err)
	}
	if sum.ChatNotice == nil || sum.ChatNotice.Message != "chat→task" {
		t.Errorf("chat notice %+v", sum.ChatNotice)
	}
	sum, err = s.NotificationSummary(chat)
	if err != nil {
		t.Fatal(err)
	}
	if sum.ChatNotice != nil || sum.Unread != 2 || sum.Interrupts != 1 {
		t.Errorf("chat session summary %+v: a chat_session_notification must never reach the chat session", sum)
	}

	// The task session reads: the chat session's copy of "pause" stays unread.
	took, err := s.TakeNotifications(task)
	if err != nil {
		t.Fatal(err)
	}
	if got := messages(took); !slices.Equal(got, []string{"pause", "named task session", "chat→task"}) {
		t.Errorf("took %q", got)
	}
	for _, n := range took {
		if n.ReadAt == nil {
			t.Errorf("taken notification %s has no read_at", n.ID)
		}
	}
	if got := counts(t, s, task); got != [2]int{0, 0} {
		t.Errorf("task counts after take %v", got)
	}
	if got := counts(t, s, chat); got != [2]int{2, 1} {
		t.Errorf("chat counts after the task session read: %v, want 2 unread, 1 interrupt", got)
	}
	again, err := s.TakeNotifications(task)
	if err != nil || len(again) != 0 {
		t.Errorf("second take: %v, %v", messages(again), err)
	}
	all, err := s.SessionNotifications(task, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 || all[0].ReadAt == nil || all[2].ReadAt == nil {
		t.Errorf("all notifications of the task session: %+v", all)
	}
	if probs, err := s.Check(); err != nil || len(probs) != 0 {
		t.Errorf("doctor: %v %v", probs, err)
	}
}

func TestMarkNotificationsRead(t *testing.T) {
	s := newTestStore(t)
	task, chat := bothSessions(t, s, "w1")
	a := mustNotify(t, s, ntf("w1", NotifyInterrupt, PurposeTask, "a"))
	b := mustNotify(t, s, ntf("w1", NotifyMessage, PurposeTask, "b"))
	c := mustNotify(t, s, ntf("w1", NotifyMessage, PurposeChat, "c"))

	if err := s.MarkNotificationsRead(task, []string{a.ID, c.ID}); code(err) != "notification_not_found" {
		t.Errorf("marking another session's notification: got %q", code(err))
	}
	if got := counts(t, s, task); got != [2]int{2, 1} {
		t.Errorf("a failed mark marked something: %v", got)
	}
	if err := s.MarkNotificationsRead(task, []string{"ntf_../../x"}); code(err) != "invalid_id" {
		t.Errorf("bad id: got %q", code(err))
	}
	if err := s.MarkNotificationsRead(task, []string{a.ID}); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkNotificationsRead(task, []string{a.ID}); err != nil {
		t.Errorf("marking twice: %v", err)
	}
	if got := counts(t, s, task); got != [2]int{1, 0} {
		t.Errorf("after marking the interrupt: %v", got)
	}
	if got := sessionMessages(t, s, task, true); !slices.Equal(got, []string{"b"}) {
		t.Errorf("unread %q", got)
	}
	if err := s.MarkNotificationsRead(chat, []string{c.ID}); err != nil {
		t.Fatal(err)
	}
	if got := counts(t, s, task); got != [2]int{1, 0} {
		t.Errorf("the chat session's mark changed the task session's count: %v", got)
	}
	_ = b
}

// TestNotificationCursorCompacts: a session's count reads only what arrived since its
// cursor; once more than compactAfter lines pile up, the count moves the cursor, and
// unread notifications behind it are still counted and found.
func TestNotificationCursorCompacts(t *testing.T) {
	s := newTestStore(t)
	task, _ := bothSessions(t, s, "w1")
	mustNotify(t, s, ntf("w1", NotifyChatSession, "", "check the chat"))
	for i := range compactAfter + 5 {
		mustNotify(t, s, ntf("w1", NotifyMessage, PurposeChat, fmt.Sprint("chat ", i)))
	}
	mustNotify(t, s, ntf("w1", NotifyInterrupt, PurposeTask, "stop"))
	if _, err := os.Stat(s.readsPath(task.ID)); !os.IsNotExist(err) {
		t.Fatalf("cursor written before any read: %v", err)
	}
	sum, err := s.NotificationSummary(task)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Unread != 2 || sum.Interrupts != 1 || sum.ChatNotice == nil {
		t.Errorf("summary %+v", sum)
	}
	var st notificationReads
	if err := s.readJSON(s.readsPath(task.ID), &st); err != nil {
		t.Fatalf("the long scan did not save a cursor: %v", err)
	}
	info, err := os.Stat(s.inboxPath("w1"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Offset != info.Size() || len(st.Unread) != 2 {
		t.Errorf("cursor %+v, want offset %d and 2 unread refs", st, info.Size())
	}
	// Now everything comes from the index: same answer, chat notice included.
	sum2, err := s.NotificationSummary(task)
	if err != nil {
		t.Fatal(err)
	}
	if sum2.Unread != 2 || sum2.Interrupts != 1 || sum2.ChatNotice == nil || sum2.ChatNotice.Message != "check the chat" {
		t.Errorf("summary from the index %+v", sum2)
	}
	if got := sessionMessages(t, s, task, true); !slices.Equal(got, []string{"stop", "check the chat"}) {
		t.Errorf("unread %q", got)
	}
	took, err := s.TakeNotifications(task)
	if err != nil || !slices.Equal(messages(took), []string{"stop", "check the chat"}) {
		t.Errorf("took %q, %v", messages(took), err)
	}
}

// TestNotificationInboxRewritten: a `git pull` union merge rewrites the inbox under a
// session's cursor. The session notices, rebuilds its index, and what it read stays read.
func TestNotificationInboxRewritten(t *testing.T) {
	s := newTestStore(t)
	task, _ := bothSessions(t, s, "w1")
	a := mustNotify(t, s, ntf("w1", NotifyMessage, PurposeTask, "a"))
	mustNotify(t, s, ntf("w1", NotifyMessage, PurposeTask, "b"))
	if err := s.MarkNotificationsRead(task, []string{a.ID}); err != nil {
		t.Fatal(err)
	}
	// Another clone's line lands first, shifting every offset.
	foreign := Notification{ID: NewID(PrefixNotification, s.Now()), TargetAgentID: "w1", TargetPurpose: PurposeTask, Type: NotifyMessage,
		Action: "check", Priority: NotifyNormal, Message: "from the other clone", Instruction: "read it", CreatedAt: s.Now()}
	line, _ := json.Marshal(foreign)
	old := fileBytes(t, s.inboxPath("w1"))
	if err := os.WriteFile(s.inboxPath("w1"), append(append(line, '\n'), old...), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := sessionMessages(t, s, task, true); !slices.Equal(got, []string{"from the other clone", "b"}) {
		t.Errorf("unread after the rewrite %q, want the foreign line and b (a stays read)", got)
	}
	if got := counts(t, s, task); got != [2]int{2, 0} {
		t.Errorf("counts after the rewrite %v", got)
	}
	took, err := s.TakeNotifications(task)
	if err != nil || !slices.Equal(messages(took), []string{"from the other clone", "b"}) {
		t.Errorf("took %q, %v", messages(took), err)
	}
}

func TestNotificationTornTail(t *testing.T) {
	s := newTestStore(t)
	task, _ := bothSessions(t, s, "w1")
	mustNotify(t, s, ntf("w1", NotifyMessage, PurposeTask, "whole"))
	f, err := os.OpenFile(s.inboxPath("w1"), os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"id":"ntf_01torn","target_agent_id":"w1","target_purpose":"any","type":"interr`)
	f.Close()
	if got := counts(t, s, task); got != [2]int{1, 0} {
		t.Errorf("counts with a torn tail %v", got)
	}
	probs, err := s.Check()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(probs, func(p Problem) bool { return strings.Contains(p.Problem, "torn last line") }) {
		t.Errorf("doctor missed the torn tail: %v", probs)
	}
	mustNotify(t, s, ntf("w1", NotifyInterrupt, PurposeTask, "after"))
	if got := sessionMessages(t, s, task, true); !slices.Equal(got, []string{"after", "whole"}) {
		t.Errorf("after repair %q", got)
	}
}

// TestNotificationsConcurrentAddAndTake: Stores standing in for processes add
// notifications while the session takes them: each is taken exactly once, none is lost.
func TestNotificationsConcurrentAddAndTake(t *testing.T) {
	s := newTestStore(t)
	task, _ := bothSessions(t, s, "w1")
	const writers, each = 4, 25
	var wg sync.WaitGroup
	for w := range writers {
		other, err := Open(s.Root(), Options{Now: s.now})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if _, _, err := other.AddNotification(human, ntf("w1", NotifyMessage, PurposeAny, fmt.Sprintf("%d-%d", w, i))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	taken := map[string]int{}
	var mu sync.Mutex
	done := make(chan struct{})
	reader, err := Open(s.Root(), Options{Now: s.now})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(done)
		for range 40 {
			ns, err := reader.TakeNotifications(task)
			if err != nil {
				t.Error(err)
				return
			}
			if _, _, err := reader.UnreadCounts(task); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			for _, n := range ns {
				taken[n.Message]++
			}
			mu.Unlock()
		}
	}()
	wg.Wait()
	<-done
	rest, err := s.TakeNotifications(task)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range rest {
		taken[n.Message]++
	}
	if len(taken) != writers*each {
		t.Errorf("took %d distinct notifications, want %d", len(taken), writers*each)
	}
	for m, n := range taken {
		if n != 1 {
			t.Errorf("%s taken %d times", m, n)
		}
	}
	if got := counts(t, s, task); got != [2]int{0, 0} {
		t.Errorf("unread left %v", got)
	}
}

func TestPendingNotifications(t *testing.T) {
	s := newTestStore(t)
	task, chat := bothSessions(t, s, "w1")
	pending := func() int {
		t.Helper()
		n, err := s.PendingNotifications("w1")
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if pending() != 0 {
		t.Fatal("pending before any notification")
	}
	mustNotify(t, s, ntf("w1", NotifyInterrupt, PurposeAny, "both"))
	mustNotify(t, s, ntf("w1", NotifyChatSession, "", "task only"))
	if got := pending(); got != 2 {
		t.Errorf("pending %d, want 2 (the one for both sessions counts once)", got)
	}
	if _, err := s.TakeNotifications(task); err != nil {
		t.Fatal(err)
	}
	if got := pending(); got != 1 {
		t.Errorf("pending %d after the task session read, want 1 (the chat session has not)", got)
	}
	if _, err := s.TakeNotifications(chat); err != nil {
		t.Fatal(err)
	}
	if got := pending(); got != 0 {
		t.Errorf("pending %d after both read", got)
	}
	// No live session: nothing waits (a later session starts fresh).
	mustNotify(t, s, ntf("w2", NotifyMessage, PurposeAny, "nobody listening"))
	if n, err := s.PendingNotifications("w2"); err != nil || n != 0 {
		t.Errorf("pending for an agent without sessions: %d, %v", n, err)
	}
}

func TestSetProjectStatus(t *testing.T) {
	s := approvalStore(t) // lead and po are human managers under the owner
	addAgents(t, s)       // bob: human worker
	task, chat := bothSessions(t, s, "w1")

	for _, c := range []struct {
		actor, status, want string
	}{
		{"w1", ProjectPaused, "unauthorized"},
		{"mgr", ProjectPaused, "unauthorized"},
		{"bob", ProjectPaused, "unauthorized"},
		{"owner", ProjectArchived, "invalid_argument"},
		{"owner", "stopped", "invalid_argument"},
		{"ghost", ProjectPaused, "agent_not_found"},
	} {
		if _, err := s.SetProjectStatus(as(c.actor), c.status); code(err) != c.want {
			t.Errorf("%s sets %s: got %q, want %s", c.actor, c.status, code(err), c.want)
		}
	}
	ch, err := s.SetProjectStatus(as("lead"), ProjectPaused)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Project.Status != ProjectPaused || ch.Previous != ProjectActive || !slices.Equal(ch.Notified, []string{"w1"}) {
		t.Errorf("pause: %+v", ch)
	}
	p, err := s.Project()
	if err != nil || p.Status != ProjectPaused {
		t.Fatalf("project.json not paused: %+v %v", p, err)
	}
	evs := mustEvents(t, s, p.ID)
	last := evs[len(evs)-1]
	if last.Actor != "lead" || last.Change != "status" || last.From != ProjectActive || last.To != ProjectPaused {
		t.Errorf("history %+v", last)
	}
	for _, se := range []*Session{task, chat} {
		ns, err := s.SessionNotifications(se, true)
		if err != nil {
			t.Fatal(err)
		}
		if len(ns) != 1 || ns[0].Type != NotifyInterrupt || ns[0].Action != ActionPause || ns[0].FromAgentID != "lead" {
			t.Errorf("%s session got %+v, want one pause interrupt", se.Purpose, ns)
		}
	}
	// No new session while paused.
	if _, err := s.Authenticate(AuthRequest{AgentID: "w2", Passkey: "w2-passkey", PID: os.Getpid()}); code(err) != "project_paused" {
		t.Errorf("authenticate while paused: got %q", code(err))
	}
	// Pausing again, or a watcher noticing the same pause, tells nobody twice.
	before := fileBytes(t, s.inboxPath("w1"))
	if ch, err := s.SetProjectStatus(as("owner"), ProjectPaused); err != nil || len(ch.Notified) != 0 {
		t.Errorf("second pause: %+v, %v", ch, err)
	}
	if got, err := s.NotifyProjectPaused(as("watcher")); err != nil || !slices.Equal(got, []string{"w1"}) {
		t.Errorf("NotifyProjectPaused: %v, %v", got, err)
	}
	if !bytes.Equal(before, fileBytes(t, s.inboxPath("w1"))) {
		t.Error("the same pause was notified twice")
	}
	ch, err = s.SetProjectStatus(as("owner"), ProjectActive)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Project.Status != ProjectActive || !slices.Equal(ch.Notified, []string{"w1"}) {
		t.Errorf("resume %+v", ch)
	}
	ns, err := s.SessionNotifications(task, true)
	if err != nil {
		t.Fatal(err)
	}
	// Unread, the pause is still listed first (interrupts first); the resume after it says
	// it is over.
	if len(ns) != 2 || ns[1].Action != ActionResume || ns[1].Type != NotifyStatusChange || ns[0].Action != ActionPause {
		t.Errorf("after resume the task session has %+v", ns)
	}
	if got, err := s.NotifyProjectPaused(as("watcher")); err != nil || len(got) != 0 {
		t.Errorf("NotifyProjectPaused on an active project: %v, %v", got, err)
	}
	// A second pause is a new change, told again.
	if ch, err := s.SetProjectStatus(as("owner"), ProjectPaused); err != nil || len(ch.Notified) != 1 {
		t.Errorf("second pause: %+v, %v", ch, err)
	}
	if got := counts(t, s, chat); got != [2]int{3, 2} {
		t.Errorf("chat session counts %v, want 3 unread (pause, resume, pause), 2 interrupts", got)
	}
	// An archived project stays archived.
	p, _ = s.Project()
	p.Status = ProjectArchived
	if err := engine.WriteJSON(s.path("project.json"), p, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetProjectStatus(as("owner"), ProjectActive); code(err) != "project_archived" {
		t.Errorf("resume archived: got %q", code(err))
	}
}

func TestProjectPauseInJapanese(t *testing.T) {
	s := newTestStore(t)
	setSettings(t, s, func(st *Settings) { st.Language = "ja" })
	task, _ := bothSessions(t, s, "w1")
	if _, err := s.SetProjectStatus(as("owner"), ProjectPaused); err != nil {
		t.Fatal(err)
	}
	ns, err := s.SessionNotifications(task, true)
	if err != nil || len(ns) != 1 || !strings.Contains(ns[0].Instruction, "一時停止") {
		t.Errorf("ja pause notice %+v, %v", ns, err)
	}
}

func TestDoctorChecksNotifications(t *testing.T) {
	s := newTestStore(t)
	mustNotify(t, s, ntf("w1", NotifyMessage, PurposeAny, "fine"))
	good := fileBytes(t, s.inboxPath("w1"))
	bad := strings.Join([]string{
		`{"id":"ntf_01a","target_agent_id":"w2","target_purpose":"task","type":"interrupt","action":"cancel","priority":"high","message":"m","instruction":"i","created_at":"2026-01-02T03:04:05Z"}`,
		`{"id":"ntf_01b","target_agent_id":"w1","target_purpose":"everyone","type":"shout","action":"","priority":"urgent","task_id":"tsk_gone","message":"","instruction":"i"}`,
		`not json`,
	}, "\n") + "\n"
	if err := os.WriteFile(s.inboxPath("w1"), append(good, bad...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.readsPath("ses_broken"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.readLogPath("ses_broken"), []byte(`{"at":"2026-01-02T03:04:05Z","ids":["../x"]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	probs, err := s.Check()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range probs {
		if strings.Contains(p.Path, "notification") {
			got = append(got, p.String())
		}
	}
	want := []string{
		`.ai-pm/agents/w1/notifications.jsonl:2: target_agent_id "w2" in the inbox of w1`,
		`.ai-pm/agents/w1/notifications.jsonl:3: invalid target_purpose "everyone" (want task, chat, any); invalid type "shout"`,
		`.ai-pm/agents/w1/notifications.jsonl:4: undecodable notification`,
		`.ai-pm/runtime/notifications/ses_broken.json:1: invalid JSON`,
		`.ai-pm/runtime/notifications/ses_broken.read.jsonl:1: invalid notification id "../x"`,
	}
	if len(got) != len(want) {
		t.Fatalf("problems:\n%s", strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d:\n got %s\nwant %s…", i, got[i], want[i])
		}
	}
	for _, frag := range []string{`invalid action ""`, `invalid priority "urgent"`, `task "tsk_gone" does not exist`, "message is empty", "created_at is missing"} {
		if !strings.Contains(got[1], frag) {
			t.Errorf("line 3 problem lacks %q: %s", frag, got[1])
		}
	}
}

// benchInbox makes a store whose agent w1 has n notifications in its inbox, a quarter of
// them for its task session, and returns the session (held in memory: the readers need
// only its id, agent, purpose and start).
func benchInbox(b *testing.B, n int) (*Store, *Session) {
	b.Helper()
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s, err := Init(b.TempDir(), InitOptions{Name: "bench", OwnerID: "owner"}, Options{Now: func() time.Time { return start }})
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := s.AddAgent(human, NewAgent{ID: "w1", ParentID: "owner"}); err != nil {
		b.Fatal(err)
	}
	se := &Session{ID: NewID(PrefixSession, start), AgentID: "w1", Purpose: PurposeTask, CreatedAt: start}
	benchAppend(b, s, start, n)
	return s, se
}

// benchAppend appends n notifications for w1, one in four for its task session, with
// message and instruction texts of a realistic size.
func benchAppend(b *testing.B, s *Store, start time.Time, n int) {
	b.Helper()
	purposes := []string{PurposeTask, PurposeChat, PurposeChat, PurposeChat}
	for i := range n {
		at := start.Add(time.Duration(i) * time.Millisecond)
		line := Notification{ID: NewID(PrefixNotification, at), TargetAgentID: "w1", TargetPurpose: purposes[i%4], Type: NotifyMessage,
			Action: "check", Priority: NotifyNormal, Message: strings.Repeat("message ", 20), Instruction: strings.Repeat("instruction ", 20), CreatedAt: at}
		if err := engine.AppendLine(s.inboxPath("w1"), line, false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNotificationSummary measures the envelope's per-tool-call notification check
// with 1000 notifications in the inbox (250 of them for the session): with the session's
// cursor up to date and everything read; with the 250 unread; with 10 new lines past the
// cursor; and, for comparison, a scan of the whole inbox — what the count would cost
// without the cursor.
func BenchmarkNotificationSummary(b *testing.B) {
	run := func(b *testing.B, s *Store, se *Session, want int) {
		for b.Loop() {
			sum, err := s.NotificationSummary(se)
			if err != nil || sum.Unread != want {
				b.Fatalf("%+v %v", sum, err)
			}
		}
	}
	b.Run("all_read", func(b *testing.B) {
		s, se := benchInbox(b, 1000)
		if _, err := s.TakeNotifications(se); err != nil {
			b.Fatal(err)
		}
		run(b, s, se, 0)
	})
	b.Run("250_unread", func(b *testing.B) {
		s, se := benchInbox(b, 1000)
		if _, err := s.NotificationSummary(se); err != nil { // the first count moves the cursor up
			b.Fatal(err)
		}
		run(b, s, se, 250)
	})
	b.Run("10_new", func(b *testing.B) {
		s, se := benchInbox(b, 1000)
		if _, err := s.TakeNotifications(se); err != nil {
			b.Fatal(err)
		}
		benchAppend(b, s, se.CreatedAt.Add(time.Hour), 10)
		run(b, s, se, 3)
	})
	b.Run("full_scan", func(b *testing.B) {
		s, se := benchInbox(b, 1000)
		for b.Loop() {
			hits, _, _, err := s.scanInbox(se, 0)
			if err != nil || len(hits) != 250 {
				b.Fatalf("%d %v", len(hits), err)
			}
		}
	})
}

// TestNotificationDuplicateLineAfterCursor: a union merge can append a copy of a line the
// session already read. The count may see it once, but reading never returns it again.
func TestNotificationDuplicateLineAfterCursor(t *testing.T) {
	s := newTestStore(t)
	task, _ := bothSessions(t, s, "w1")
	mustNotify(t, s, ntf("w1", NotifyInterrupt, PurposeTask, "stop"))
	if took, err := s.TakeNotifications(task); err != nil || len(took) != 1 {
		t.Fatalf("took %v, %v", messages(took), err)
	}
	data := fileBytes(t, s.inboxPath("w1"))
	if err := os.WriteFile(s.inboxPath("w1"), append(data, data...), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := sessionMessages(t, s, task, true); len(got) != 0 {
		t.Errorf("a read notification's copy is unread: %q", got)
	}
	if took, err := s.TakeNotifications(task); err != nil || len(took) != 0 {
		t.Errorf("the copy was taken again: %v, %v", messages(took), err)
	}
	if got := counts(t, s, task); got != [2]int{0, 0} {
		t.Errorf("counts after the repairing read %v", got)
	}
	if n, err := s.PendingNotifications("w1"); err != nil || n != 0 {
		t.Errorf("pending %d, %v", n, err)
	}
}
