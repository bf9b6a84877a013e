package filestore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aipm/aipm/filestore/internal/engine"
)

// testClock is a clock a test moves by hand, for timeouts.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// clockedStore is newTestStore's project opened with a clock that moves only when told.
func clockedStore(t *testing.T) (*Store, *testClock) {
	t.Helper()
	base := newTestStore(t)
	clk := &testClock{now: time.Date(2026, 2, 1, 9, 0, 0, 0, time.UTC)}
	s, err := Open(base.Root(), Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return s, clk
}

// as is the actor of an agent's tool call (or a human's CLI command).
func as(id string) Actor {
	if id == "owner" || id == "bob" {
		return Actor{ID: id, Via: ViaCLI}
	}
	return Actor{ID: id, Via: ViaTool}
}

// send sends a message and fails the test on error.
func send(t *testing.T, s *Store, from, to, content string) *Sent {
	t.Helper()
	r, err := s.SendMessage(as(from), SendRequest{To: to, Content: content})
	if err != nil {
		t.Fatalf("SendMessage(%s → %s, %q): %v", from, to, content, err)
	}
	return r
}

// addAgents adds a human "bob" (under owner) and an inactive AI worker "gone".
func addAgents(t *testing.T, s *Store) {
	t.Helper()
	for _, n := range []NewAgent{
		{ID: "bob", Type: AgentHuman, ParentID: "owner"},
		{ID: "gone", ParentID: "mgr", Passkey: "gone-passkey"},
	} {
		if _, _, err := s.AddAgent(human, n); err != nil {
			t.Fatal(err)
		}
	}
	setAgentStatus(t, s, "gone", AgentInactive)
}

func setAgentStatus(t *testing.T, s *Store, id, status string) {
	t.Helper()
	a, err := s.Agent(id)
	if err != nil {
		t.Fatal(err)
	}
	a.Status = status
	if err := engine.WriteJSON(s.agentPath(id), a, 0o644); err != nil {
		t.Fatal(err)
	}
}

// setSettings rewrites project.json with changed settings, as a human editing it would.
func setSettings(t *testing.T, s *Store, fn func(*Settings)) {
	t.Helper()
	p, err := s.Project()
	if err != nil {
		t.Fatal(err)
	}
	fn(&p.Settings)
	if err := engine.WriteJSON(s.path("project.json"), p, 0o644); err != nil {
		t.Fatal(err)
	}
}

func fileBytes(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return data
}

func TestSendMessageDualWrite(t *testing.T) {
	s := newTestStore(t)
	tk := mustTask(t, s, NewTask{Title: "api", AssigneeID: "w1"})
	got, err := s.SendMessage(as("owner"), SendRequest{To: "w1", Content: "タスクXについて質問があります", RelatedTaskID: tk.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got.Conversation != nil || got.Terminated {
		t.Errorf("human → AI got a conversation: %+v", got)
	}
	m := got.Message
	if m.SenderID != "owner" || m.ReceiverID != "w1" || m.RelatedTaskID != tk.ID || !strings.HasPrefix(m.ID, "msg_") {
		t.Errorf("returned message %+v", m)
	}
	sent, recv := mailbox(t, s, "owner"), mailbox(t, s, "w1")
	if len(sent) != 1 || len(recv) != 1 {
		t.Fatalf("mailboxes: owner %d lines, w1 %d lines; want 1 each", len(sent), len(recv))
	}
	if sent[0] != m {
		t.Errorf("sender's copy %+v, want %+v", sent[0], m)
	}
	want := m
	want.ReceiverID = ""
	if recv[0] != want {
		t.Errorf("receiver's copy %+v, want %+v (no receiverId)", recv[0], want)
	}
	// The receiver's line really has no receiverId key: the original's format.
	if bytes.Contains(fileBytes(t, s.mailboxPath("w1")), []byte("receiverId")) {
		t.Error("receiver's line carries receiverId")
	}
	// The reply goes back the same way, and neither side reads its own copy as unread.
	send(t, s, "w1", "owner", "了解しました")
	if n, _ := s.UnreadCount("w1"); n != 1 {
		t.Errorf("w1 unread = %d, want 1 (its reply is not unread)", n)
	}
	if n, _ := s.UnreadCount("owner"); n != 1 {
		t.Errorf("owner unread = %d, want 1", n)
	}
}

func TestSendMessageRefusals(t *testing.T) {
	s := newTestStore(t)
	addAgents(t, s)
	ja4000 := strings.Repeat("あ", 4000)
	for _, tc := range []struct {
		name string
		from string
		r    SendRequest
		want string
	}{
		{"empty", "owner", SendRequest{To: "w1"}, "empty_content"},
		{"blank", "owner", SendRequest{To: "w1", Content: " \n\t"}, "empty_content"},
		{"4001 code points", "owner", SendRequest{To: "w1", Content: ja4000 + "い"}, "content_too_long"},
		{"self", "w1", SendRequest{To: "w1", Content: "hi"}, "cannot_message_self"},
		{"unknown target", "owner", SendRequest{To: "ghost", Content: "hi"}, "agent_not_found"},
		{"inactive target", "owner", SendRequest{To: "gone", Content: "hi"}, "target_agent_not_in_project"},
		{"unknown sender", "ghost", SendRequest{To: "w1", Content: "hi"}, "agent_not_found"},
		{"inactive sender", "gone", SendRequest{To: "owner", Content: "hi"}, "agent_not_assigned_to_project"},
		{"path-like target", "owner", SendRequest{To: "../w1", Content: "hi"}, "invalid_id"},
		{"bad task id", "owner", SendRequest{To: "w1", Content: "hi", RelatedTaskID: "tsk_../x"}, "invalid_id"},
		{"unknown task", "owner", SendRequest{To: "w1", Content: "hi", RelatedTaskID: "tsk_nope"}, "task_not_found"},
		{"conversation in a human chat", "owner", SendRequest{To: "w1", Content: "hi", ConversationID: "cnv_x"}, "invalid_argument"},
		{"AI to AI without conversation", "w1", SendRequest{To: "w2", Content: "hi"}, "conversation_required_for_ai_to_ai"},
		{"manager to worker without conversation", "mgr", SendRequest{To: "w1", Content: "hi"}, "conversation_required_for_ai_to_ai"},
	} {
		_, err := s.SendMessage(as(tc.from), tc.r)
		if code(err) != tc.want {
			t.Errorf("%s: got %q (%v), want %s", tc.name, code(err), err, tc.want)
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Message == "" || e.Hint == "" {
			t.Errorf("%s: error without message or hint: %#v", tc.name, err)
		}
	}
	for _, id := range []string{"owner", "w1", "w2", "mgr", "gone"} {
		if msgs := mailbox(t, s, id); len(msgs) != 0 {
			t.Errorf("a refused send wrote to %s's mailbox: %+v", id, msgs)
		}
	}
	// Exactly 4000 characters pass, although they are 12000 bytes.
	if len(ja4000) != 12000 {
		t.Fatalf("test text is %d bytes", len(ja4000))
	}
	send(t, s, "owner", "w1", ja4000)
	// AI ↔ human needs no conversation, in either direction and for humans other than
	// the owner.
	send(t, s, "w1", "bob", "hello")
	send(t, s, "bob", "w2", "hello")
}

func TestMessageLimitIsAProjectSetting(t *testing.T) {
	s := newTestStore(t)
	setSettings(t, s, func(st *Settings) { st.MessageMaxChars = 5 })
	send(t, s, "owner", "w1", "日本語です")
	if _, err := s.SendMessage(as("owner"), SendRequest{To: "w1", Content: "日本語ですね"}); code(err) != "content_too_long" {
		t.Errorf("6 characters with a limit of 5: got %q", code(err))
	} else if !strings.Contains(err.Error(), "6 characters (max 5)") {
		t.Errorf("message %q does not name the count and the limit", err)
	}
}

func TestSystemMessageHasNoSenderCopy(t *testing.T) {
	s := newTestStore(t)
	got, err := s.SendMessage(Actor{ID: SystemSender, Via: ViaCoordinator}, SendRequest{To: "w1", Content: "chat opened"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Message.SenderID != SystemSender {
		t.Errorf("sender %q", got.Message.SenderID)
	}
	if msgs := mailbox(t, s, "w1"); len(msgs) != 1 || msgs[0].SenderID != SystemSender || msgs[0].ReceiverID != "" {
		t.Errorf("w1 mailbox %+v", msgs)
	}
	if _, err := os.Stat(s.path("agents", SystemSender)); !os.IsNotExist(err) {
		t.Errorf("a mailbox for the system pseudo-sender exists (%v)", err)
	}
	// Even between AI agents' worlds, system messages need no conversation.
	if _, err := s.SendMessage(Actor{ID: SystemSender, Via: ViaTool}, SendRequest{To: "w2", Content: "x", ConversationID: "cnv_x"}); code(err) != "invalid_argument" {
		t.Errorf("system message with a conversation: got %q", code(err))
	}
}

// TestUnreadCursorKeepsLateMessages: a message that lands between reading the unread
// messages and marking them read stays unread (anchor defect 9.4.31).
func TestUnreadCursorKeepsLateMessages(t *testing.T) {
	s := newTestStore(t)
	send(t, s, "owner", "w1", "one")
	send(t, s, "owner", "w1", "two")
	msgs, next, err := s.Unread("w1")
	if err != nil || len(msgs) != 2 {
		t.Fatalf("Unread = %d messages, %v", len(msgs), err)
	}
	send(t, s, "owner", "w1", "three") // arrives during the read
	if err := s.MarkRead("w1", next); err != nil {
		t.Fatal(err)
	}
	msgs, _, err = s.Unread("w1")
	if err != nil || len(msgs) != 1 || msgs[0].Content != "three" {
		t.Fatalf("after MarkRead: %+v, %v; want only the late message", msgs, err)
	}
	// The cursor never moves back.
	if err := s.MarkRead("w1", 1); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.UnreadCount("w1"); n != 1 {
		t.Errorf("unread after a backward MarkRead = %d, want 1", n)
	}
	got, err := s.TakeUnread("w1")
	if err != nil || len(got) != 1 || got[0].Content != "three" {
		t.Fatalf("TakeUnread = %+v, %v", got, err)
	}
	if got, _ := s.TakeUnread("w1"); len(got) != 0 {
		t.Errorf("second TakeUnread = %+v, want nothing", got)
	}
}

// TestUnreadWhileMessagesArrive reads a mailbox in a loop while another process (a second
// Store) keeps writing to it: every message is read exactly once, in order.
func TestUnreadWhileMessagesArrive(t *testing.T) {
	s := newTestStore(t)
	writer, err := Open(s.Root(), Options{Now: s.now})
	if err != nil {
		t.Fatal(err)
	}
	const n = 60
	done := make(chan error, 1)
	go func() {
		for i := range n {
			if _, err := writer.SendMessage(as("owner"), SendRequest{To: "w1", Content: fmt.Sprint(i)}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	var got []string
	read := func(useTake bool) {
		if useTake {
			msgs, err := s.TakeUnread("w1")
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range msgs {
				got = append(got, m.Content)
			}
			return
		}
		msgs, next, err := s.Unread("w1")
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			got = append(got, m.Content)
		}
		if err := s.MarkRead("w1", next); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; ; i++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			read(false)
			read(true)
			want := make([]string, n)
			for i := range want {
				want[i] = fmt.Sprint(i)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("read %v\nwant %v", got, want)
			}
			return
		default:
			read(i%2 == 0)
		}
	}
}

func TestTornMailboxTail(t *testing.T) {
	s := newTestStore(t)
	send(t, s, "owner", "w1", "whole")
	f, err := os.OpenFile(s.mailboxPath("w1"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"id":"msg_torn","senderId":"owner","content":"half`)
	f.Close()
	msgs, next, err := s.Unread("w1")
	if err != nil || len(msgs) != 1 || msgs[0].Content != "whole" {
		t.Fatalf("Unread with a torn tail = %+v, %v", msgs, err)
	}
	if err := s.MarkRead("w1", next); err != nil {
		t.Fatal(err)
	}
	if recent, err := s.RecentMessages("w1", 5); err != nil || len(recent) != 1 {
		t.Errorf("RecentMessages with a torn tail = %+v, %v", recent, err)
	}
	// The next send repairs the tail and is read; the torn line is gone.
	send(t, s, "owner", "w1", "after")
	msgs, _, err = s.Unread("w1")
	if err != nil || len(msgs) != 1 || msgs[0].Content != "after" {
		t.Fatalf("after repair: %+v, %v", msgs, err)
	}
	if all := mailbox(t, s, "w1"); len(all) != 2 {
		t.Errorf("mailbox after repair: %+v", all)
	}
}

// TestScanBack compares the backward reader with engine.ReadLines on files with torn tails,
// empty lines and lines longer than its chunk.
func TestScanBack(t *testing.T) {
	long := strings.Repeat("x", 150_000)
	for _, content := range []string{
		"",
		"torn",
		"a\n",
		"a\nb\n",
		"a\nb\ntorn",
		"\n\n",
		"a\n\nb\n",
		long + "\n",
		"a\n" + long + "\nb\n" + long[:70_000] + "\n" + long,
		strings.Repeat("0123456789\n", 20_000),
	} {
		path := filepath.Join(t.TempDir(), "f.jsonl")
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		lines, err := engine.ReadLines(path, 0)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, l := range slices.Backward(lines) {
			want = append(want, string(l.Data))
		}
		var got []string
		if err := scanBack(path, func(line []byte) bool { got = append(got, string(line)); return true }); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("content of %d bytes: scanBack gave %d lines, engine.ReadLines %d", len(content), len(got), len(want))
		}
		// Stopping early stops.
		n := 0
		scanBack(path, func([]byte) bool { n++; return false })
		if n != min(1, len(want)) {
			t.Errorf("content of %d bytes: fn called %d times after returning false", len(content), n)
		}
	}
	if err := scanBack(filepath.Join(t.TempDir(), "missing"), func([]byte) bool { t.Error("line in a missing file"); return true }); err != nil {
		t.Errorf("missing file: %v", err)
	}
}

func TestRecentMessagesReadsBothDirections(t *testing.T) {
	s := newTestStore(t)
	// Long Japanese messages make the mailbox span several read chunks.
	long := strings.Repeat("長", 3000)
	var want []string
	for i := range 30 {
		from, to := "owner", "w1"
		if i%3 == 2 {
			from, to = "w1", "owner"
		}
		content := fmt.Sprintf("%d %s", i, long)
		send(t, s, from, to, content)
		want = append(want, content)
	}
	got, err := s.RecentMessages("w1", 5)
	if err != nil {
		t.Fatal(err)
	}
	var contents []string
	for _, m := range got {
		contents = append(contents, m.Content)
	}
	if !slices.Equal(contents, want[25:]) {
		t.Errorf("last 5: got %d messages starting %q", len(contents), firstWord(contents))
	}
	if got[1].SenderID != "w1" || got[1].ReceiverID != "owner" {
		t.Errorf("sent copy in context: %+v", got[1].SenderID)
	}
	if all, _ := s.RecentMessages("w1", 0); len(all) != DefaultContextMessages {
		t.Errorf("default context: %d messages, want %d", len(all), DefaultContextMessages)
	}
	if none, err := s.RecentMessages("w2", 10); err != nil || len(none) != 0 {
		t.Errorf("empty mailbox: %+v, %v", none, err)
	}
}

func firstWord(ss []string) []string {
	var out []string
	for _, s := range ss {
		w, _, _ := strings.Cut(s, " ")
		out = append(out, w)
	}
	return out
}

func TestMessagesWith(t *testing.T) {
	s := newTestStore(t)
	addAgents(t, s)
	send(t, s, "owner", "w1", "o1")
	send(t, s, "bob", "w1", "b1")
	send(t, s, "w1", "owner", "w1")
	send(t, s, "owner", "w1", "o2")
	send(t, s, "w1", "bob", "w2")
	send(t, s, "owner", "w1", "o3")
	page, err := s.MessagesWith("w1", "owner", 3)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range page.Messages {
		got = append(got, m.Content)
	}
	if !slices.Equal(got, []string{"w1", "o2", "o3"}) || !page.Truncated {
		t.Errorf("last 3 with owner: %v truncated=%v", got, page.Truncated)
	}
	page, _ = s.MessagesWith("owner", "w1", 0)
	if len(page.Messages) != 4 || page.Truncated {
		t.Errorf("owner's side: %d messages truncated=%v, want 4", len(page.Messages), page.Truncated)
	}
	if page, _ := s.MessagesWith("w1", "bob", 1000); len(page.Messages) != 2 {
		t.Errorf("with bob: %+v", page.Messages)
	}
	if _, err := s.MessagesWith("w1", "../etc", 1); code(err) != "invalid_id" {
		t.Errorf("path-like partner: %q", code(err))
	}
	if pageLimit(0) != DefaultMessageLimit || pageLimit(1000) != MaxMessageLimit || pageLimit(7) != 7 {
		t.Error("page limits: default 50, max 200")
	}
}

func TestUnansweredSender(t *testing.T) {
	s := newTestStore(t)
	addAgents(t, s)
	if who, err := s.UnansweredSender("w1"); err != nil || who != "" {
		t.Fatalf("empty mailbox: %q, %v", who, err)
	}
	send(t, s, "owner", "w1", "question 1")
	if _, err := s.SendMessage(Actor{ID: SystemSender, Via: ViaTool}, SendRequest{To: "w1", Content: "notice"}); err != nil {
		t.Fatal(err)
	}
	send(t, s, "bob", "w1", "question 2")
	send(t, s, "owner", "w1", "question 3")
	if who, _ := s.UnansweredSender("w1"); who != "owner" {
		t.Errorf("oldest unanswered = %q, want owner", who)
	}
	send(t, s, "w1", "owner", "answer")
	if who, _ := s.UnansweredSender("w1"); who != "bob" {
		t.Errorf("after answering owner: %q, want bob", who)
	}
	send(t, s, "w1", "bob", "answer")
	if who, _ := s.UnansweredSender("w1"); who != "" {
		t.Errorf("all answered: %q, want none (system messages are not answered)", who)
	}
	send(t, s, "owner", "w1", "follow-up")
	if who, _ := s.UnansweredSender("w1"); who != "owner" {
		t.Errorf("follow-up after the answer: %q, want owner", who)
	}
}

func TestOpenAndCloseChat(t *testing.T) {
	s := newTestStore(t)
	addAgents(t, s)
	if w, _ := s.DetectWork("w1"); w.Chat {
		t.Fatalf("chat work before anything happened: %+v", w)
	}
	st, err := s.OpenChat(as("owner"), "w1")
	if err != nil {
		t.Fatal(err)
	}
	if !st.Open || st.OpenedBy != "owner" || st.Version != 1 {
		t.Errorf("state %+v", st)
	}
	w, err := s.DetectWork("w1")
	if err != nil || !w.Chat || !w.ChatOpened {
		t.Fatalf("an opened chat is chat work: %+v, %v", w, err)
	}
	// A human's open chat lets the agent open a chat session with nothing unread.
	r, err := s.Authenticate(AuthRequest{AgentID: "w1", Passkey: "w1-passkey", Purpose: PurposeChat, PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	if w, _ := s.DetectWork("w1"); w.Chat || w.ChatOpened || !w.LiveChat {
		t.Errorf("served chat still counts as work: %+v", w)
	}
	if closed, _ := s.ChatClosed("w1", r.Session.CreatedAt); closed {
		t.Error("chat reads closed while open")
	}
	if err := s.EndSession(r.Session.ID, "logout"); err != nil {
		t.Fatal(err)
	}
	// Still open, but already served: no respawn loop after the session logs out.
	if w, _ := s.DetectWork("w1"); w.Chat {
		t.Errorf("served open chat is work again after logout: %+v", w)
	}
	if _, err := s.CloseChat(as("owner"), "w1"); err != nil {
		t.Fatal(err)
	}
	if closed, _ := s.ChatClosed("w1", r.Session.CreatedAt); !closed {
		t.Error("the session that served the chat is not told it closed")
	}
	if closed, _ := s.ChatClosed("w1", s.Now().Add(time.Second)); closed {
		t.Error("a session started after the close is told to exit")
	}
	before, _ := s.Chat("w1")
	st, _ = s.CloseChat(as("owner"), "w1") // idempotent
	if st.Version != before.Version {
		t.Errorf("closing a closed chat wrote: version %d, was %d", st.Version, before.Version)
	}
	for _, tc := range []struct {
		actor, agent, want string
	}{
		{"w2", "w1", "unauthorized"},
		{"owner", "bob", "invalid_argument"},
		{"owner", "ghost", "agent_not_found"},
		{"owner", "gone", "target_agent_not_in_project"},
		{"owner", "../x", "invalid_id"},
	} {
		if _, err := s.OpenChat(as(tc.actor), tc.agent); code(err) != tc.want {
			t.Errorf("OpenChat(%s, %s): %q, want %s", tc.actor, tc.agent, code(err), tc.want)
		}
	}
	var changes []string
	for _, e := range mustEvents(t, s, "w1") {
		if e.Entity == "chat" {
			changes = append(changes, e.Actor+" "+e.Change)
		}
	}
	if !slices.Equal(changes, []string{"owner opened", "owner closed"}) {
		t.Errorf("chat events %v", changes)
	}
}

func mustEvents(t *testing.T, s *Store, id string) []Event {
	t.Helper()
	evs, err := s.Events(id)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// TestConcurrentSendersLoseNothing: Stores standing in for processes send at once, humans
// and AI agents, inside and outside a conversation. Every acknowledged message is in both
// mailboxes exactly once, and the conversation counted every turn.
func TestConcurrentSendersLoseNothing(t *testing.T) {
	s := newTestStore(t)
	start, err := s.StartConversation(as("w1"), ConversationRequest{Target: "w2", MaxTurns: MaxMaxTurns})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.TakeConversationRequest(as("w2")); err != nil {
		t.Fatal(err)
	}
	type pair struct{ from, to string }
	const each = 15 // w1 and w2 send 30 turns together, under max_turns 40
	pairs := []pair{{"owner", "w1"}, {"owner", "w2"}, {"w1", "owner"}, {"mgr", "owner"}, {"owner", "mgr"}, {"w1", "w2"}, {"w2", "w1"}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	acked := map[string]pair{}
	for _, p := range pairs {
		other, err := Open(s.Root(), Options{Now: s.now})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				r, err := other.SendMessage(as(p.from), SendRequest{To: p.to, Content: fmt.Sprintf("%s→%s %d", p.from, p.to, i)})
				if err != nil {
					t.Errorf("%s → %s: %v", p.from, p.to, err)
					return
				}
				mu.Lock()
				acked[r.Message.ID] = p
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(acked) != len(pairs)*each {
		t.Fatalf("%d messages acknowledged, want %d", len(acked), len(pairs)*each)
	}
	copies := map[string][]string{} // message id → "sent:<box>" / "recv:<box>"
	for _, box := range []string{"owner", "mgr", "w1", "w2"} {
		for _, m := range mailbox(t, s, box) {
			kind := "recv:"
			if m.ReceiverID != "" {
				kind = "sent:"
			}
			copies[m.ID] = append(copies[m.ID], kind+box)
		}
	}
	for id, p := range acked {
		want := []string{"recv:" + p.to, "sent:" + p.from}
		got := slices.Sorted(slices.Values(copies[id]))
		if !slices.Equal(got, want) {
			t.Errorf("message %s %s→%s: copies %v, want %v", id, p.from, p.to, got, want)
		}
	}
	if len(copies) != len(acked) {
		t.Errorf("%d distinct messages on disk, %d acknowledged", len(copies), len(acked))
	}
	c, err := s.Conversation(start.Conversation.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c.Turns != 2*each || c.State != ConvActive {
		t.Errorf("conversation turns %d state %s, want %d active (a lost update drops turns)", c.Turns, c.State, 2*each)
	}
	if problems, _ := s.Check(); len(problems) != 0 {
		t.Errorf("doctor after concurrent sends: %v", problems)
	}
}

// The multi-process test: real processes send messages to one store at once, the flock
// half of the store lock doing the excluding. The test binary re-executes itself as
// TestChatHelperProcess with the role in AIPM_CHAT_HELPER.

const chatHelperEnv = "AIPM_CHAT_HELPER" // JSON chatHelperConfig

type chatHelperConfig struct {
	Root  string `json:"root"`
	From  string `json:"from"`
	To    []string
	Count int `json:"count"`
}

// TestChatHelperProcess is not a test: it is the body of TestMultiProcessMessages's
// subprocesses. It sends Count messages to each of To and prints each acknowledged id.
func TestChatHelperProcess(t *testing.T) {
	raw := os.Getenv(chatHelperEnv)
	if raw == "" {
		t.Skip("helper subprocess of TestMultiProcessMessages")
	}
	var cfg chatHelperConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		t.Fatal(err)
	}
	s, err := Open(cfg.Root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range cfg.Count {
		for _, to := range cfg.To {
			r, err := s.SendMessage(Actor{ID: cfg.From, Via: ViaTool}, SendRequest{To: to, Content: fmt.Sprintf("%d こんにちは", i)})
			if err != nil {
				t.Fatalf("%s → %s: %v", cfg.From, to, err)
			}
			fmt.Printf("ACK %s %s %s\n", r.Message.ID, cfg.From, to)
		}
	}
}

func TestMultiProcessMessages(t *testing.T) {
	if testing.Short() {
		t.Skip("starts subprocesses")
	}
	// The helpers run on the real clock, so this store does too: conversations started on
	// the test clock would be long timed out for them.
	s, err := Open(newTestStore(t).Root(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Two conversations, so AI agents message each other across processes as well.
	for _, p := range [][2]string{{"w1", "w2"}, {"mgr", "w1"}} {
		if _, err := s.StartConversation(as(p[0]), ConversationRequest{Target: p[1], MaxTurns: MaxMaxTurns}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.TakeConversationRequest(as(p[1])); err != nil {
			t.Fatal(err)
		}
	}
	const count = 6
	helpers := []chatHelperConfig{
		{From: "w1", To: []string{"owner", "w2", "mgr"}},
		{From: "w2", To: []string{"owner", "w1"}},
		{From: "mgr", To: []string{"owner", "w1"}},
		{From: "owner", To: []string{"w1", "w2", "mgr"}},
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	type run struct {
		out, errb bytes.Buffer
		err       error
	}
	runs := make([]*run, len(helpers))
	var wg sync.WaitGroup
	for i, h := range helpers {
		h.Root, h.Count = s.Root(), count
		conf, _ := json.Marshal(h)
		r := &run{}
		runs[i] = r
		cmd := exec.Command(exe, "-test.run=^TestChatHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), chatHelperEnv+"="+string(conf))
		cmd.Stdout, cmd.Stderr = &r.out, &r.errb
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.err = cmd.Run()
		}()
	}
	wg.Wait()
	acked := map[string][2]string{}
	for i, r := range runs {
		if r.err != nil {
			t.Fatalf("helper %d (%s): %v\n%s%s", i, helpers[i].From, r.err, r.out.String(), r.errb.String())
		}
		for _, line := range strings.Split(r.out.String(), "\n") {
			var id, from, to string
			if n, _ := fmt.Sscanf(line, "ACK %s %s %s", &id, &from, &to); n == 3 {
				acked[id] = [2]string{from, to}
			}
		}
	}
	want := 0
	for _, h := range helpers {
		want += count * len(h.To)
	}
	if len(acked) != want {
		t.Fatalf("%d acknowledged messages, want %d", len(acked), want)
	}
	seen := map[string]int{}
	for _, box := range []string{"owner", "mgr", "w1", "w2"} {
		for _, m := range mailbox(t, s, box) {
			p, ok := acked[m.ID]
			switch {
			case !ok:
				if m.ConversationID == "" {
					t.Errorf("%s: unacknowledged message %+v", box, m)
				}
			case m.ReceiverID != "" && (box != p[0] || m.ReceiverID != p[1]),
				m.ReceiverID == "" && (box != p[1] || m.SenderID != p[0]):
				t.Errorf("%s holds %+v, sent %s → %s", box, m, p[0], p[1])
			}
			seen[m.ID]++
		}
	}
	for id := range acked {
		if seen[id] != 2 {
			t.Errorf("message %s has %d copies, want 2", id, seen[id])
		}
	}
	convs, _ := s.Conversations(ConversationFilter{})
	for _, c := range convs {
		// w1↔w2: w1 and w2 each send count; mgr↔w1: mgr and w1 each send count.
		if c.Turns != 2*count {
			t.Errorf("conversation %s↔%s counted %d turns, want %d", c.InitiatorID, c.ParticipantID, c.Turns, 2*count)
		}
	}
	if problems, _ := s.Check(); len(problems) != 0 {
		t.Errorf("doctor: %v", problems)
	}
}

// A `git pull` rewrites a mailbox under the read cursor: a merge appends the other clone's
// lines, a rebase puts them before this clone's, an editor may drop lines. Every received
// message is still read exactly once.
func TestUnreadSurvivesAMailboxRewrite(t *testing.T) {
	contents := func(msgs []Message) []string {
		var out []string
		for _, m := range msgs {
			out = append(out, m.Content)
		}
		return out
	}
	mailboxLines := func(t *testing.T, s *Store) []string {
		data, err := os.ReadFile(s.mailboxPath("w1"))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.SplitAfter(string(data), "\n")
		return lines[:len(lines)-1] // after the last newline: nothing
	}
	for _, c := range []struct {
		name string
		// rewrite builds the new mailbox from the lines read (ours) and the other
		// clone's lines (theirs).
		rewrite func(ours, theirs []string) []string
		want    []string // unread after the rewrite
	}{
		{"merge: theirs after ours", func(o, th []string) []string { return append(o, th...) }, []string{"b1", "b2"}},
		{"rebase: theirs before ours", func(o, th []string) []string { return append(slices.Clone(th), o...) }, []string{"b1", "b2"}},
		{"interleaved", func(o, th []string) []string { return []string{o[0], th[0], o[1], th[1]} }, []string{"b1", "b2"}},
		{"an editor dropped a read line", func(o, th []string) []string { return append([]string{o[1]}, th...) }, []string{"b1", "b2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newTestStore(t)
			send(t, s, "owner", "w1", "a1")
			send(t, s, "owner", "w1", "a2")
			if got, err := s.TakeUnread("w1"); err != nil || len(got) != 2 {
				t.Fatalf("TakeUnread = %v, %v", contents(got), err)
			}
			ours := mailboxLines(t, s)
			// The other clone's lines: made in a second store, copied over.
			other := newTestStore(t)
			send(t, other, "owner", "w1", "b1")
			send(t, other, "owner", "w1", "b2")
			theirs := mailboxLines(t, other)
			if err := os.WriteFile(s.mailboxPath("w1"), []byte(strings.Join(c.rewrite(ours, theirs), "")), 0o644); err != nil {
				t.Fatal(err)
			}
			msgs, _, err := s.Unread("w1")
			if err != nil || !slices.Equal(contents(msgs), c.want) {
				t.Fatalf("Unread after the rewrite = %v, %v; want %v", contents(msgs), err, c.want)
			}
			if n, _ := s.UnreadCount("w1"); n != len(c.want) {
				t.Errorf("UnreadCount = %d, want %d", n, len(c.want))
			}
			got, err := s.TakeUnread("w1")
			if err != nil || !slices.Equal(contents(got), c.want) {
				t.Fatalf("TakeUnread after the rewrite = %v, %v", contents(got), err)
			}
			send(t, s, "owner", "w1", "c1")
			got, err = s.TakeUnread("w1")
			if err != nil || !slices.Equal(contents(got), []string{"c1"}) {
				t.Fatalf("the next message = %v, %v; want only c1", contents(got), err)
			}
			if got, _ := s.TakeUnread("w1"); len(got) != 0 {
				t.Errorf("nothing left, got %v", contents(got))
			}
		})
	}
}

// BenchmarkUnreadCount measures the chat check of the wake path on a mailbox of 2000
// messages: all read (the cursor at the end), 5 new past the cursor, right after a rewrite
// that put 5 lines from another clone first (rebuilt from the read log on every call until
// the next MarkRead), and, for comparison, a no-op floor (reading the cursor file alone).
func BenchmarkUnreadCount(b *testing.B) {
	setup := func(b *testing.B) *Store {
		s, err := Init(b.TempDir(), InitOptions{Name: "bench", OwnerID: "owner"}, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := s.AddAgent(human, NewAgent{ID: "w1", ParentID: "owner", Passkey: "w1-passkey"}); err != nil {
			b.Fatal(err)
		}
		for i := range 2000 {
			if _, err := s.SendMessage(human, SendRequest{To: "w1", Content: fmt.Sprintf("message %d", i)}); err != nil {
				b.Fatal(err)
			}
		}
		for { // a take reads at most a page of messages
			msgs, err := s.TakeUnread("w1")
			if err != nil {
				b.Fatal(err)
			}
			if len(msgs) == 0 {
				break
			}
		}
		return s
	}
	run := func(b *testing.B, s *Store, want int) {
		for b.Loop() {
			if n, err := s.UnreadCount("w1"); err != nil || n != want {
				b.Fatalf("%d %v", n, err)
			}
		}
	}
	b.Run("floor_cursor_read", func(b *testing.B) {
		s := setup(b)
		for b.Loop() {
			if _, err := s.readCursor("w1"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("all_read", func(b *testing.B) { run(b, setup(b), 0) })
	b.Run("5_new", func(b *testing.B) {
		s := setup(b)
		for i := range 5 {
			if _, err := s.SendMessage(human, SendRequest{To: "w1", Content: fmt.Sprintf("new %d", i)}); err != nil {
				b.Fatal(err)
			}
		}
		run(b, s, 5)
	})
	b.Run("after_rewrite", func(b *testing.B) {
		s := setup(b)
		data, err := os.ReadFile(s.mailboxPath("w1"))
		if err != nil {
			b.Fatal(err)
		}
		other := setup(b)
		for i := range 5 {
			if _, err := other.SendMessage(human, SendRequest{To: "w1", Content: fmt.Sprintf("theirs %d", i)}); err != nil {
				b.Fatal(err)
			}
		}
		theirs, err := os.ReadFile(other.mailboxPath("w1"))
		if err != nil {
			b.Fatal(err)
		}
		lines := bytes.SplitAfter(theirs, []byte("\n"))
		tail := bytes.Join(lines[2000:], nil) // the 5 new lines
		if err := os.WriteFile(s.mailboxPath("w1"), append(tail, data...), 0o644); err != nil {
			b.Fatal(err)
		}
		run(b, s, 5)
	})
}

// An agent that only sends keeps its read cursor at the start; Unread then goes over its
// sent copies once per process, not on every call, and still finds what arrives after
// them: from this process, from another one, and in a mailbox rewritten by hand or by a
// merge (a message put among the copies already gone over).
func TestUnreadOfASender(t *testing.T) {
	s := newTestStore(t)
	unread := func(st *Store) []string {
		t.Helper()
		msgs, next, err := st.Unread("w1")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range msgs {
			out = append(out, m.Content)
		}
		if len(msgs) == 0 {
			if fi, err := os.Stat(st.mailboxPath("w1")); err == nil && next != fi.Size() {
				t.Errorf("next = %d with nothing unread, want the mailbox's end %d", next, fi.Size())
			}
		}
		return out
	}
	for i := range 20 {
		send(t, s, "w1", "owner", fmt.Sprint("sent ", i))
		if got := unread(s); len(got) != 0 {
			t.Fatalf("after %d sends: unread %v", i+1, got)
		}
	}
	send(t, s, "owner", "w1", "r1")
	if got := unread(s); !slices.Equal(got, []string{"r1"}) {
		t.Fatalf("unread = %v, want r1", got)
	}
	send(t, s, "w1", "owner", "sent 20")
	other := reopen(t, s)
	send(t, other, "owner", "w1", "r2")
	if got := unread(s); !slices.Equal(got, []string{"r1", "r2"}) {
		t.Fatalf("unread = %v, want r1 r2", got)
	}
	if _, err := s.TakeUnread("w1"); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		send(t, s, "w1", "owner", fmt.Sprint("more ", i))
	}
	if got := unread(s); len(got) != 0 {
		t.Fatalf("unread = %v after reading", got)
	}
	// By hand: a received message put among the copies gone over, the last lines kept.
	data, err := os.ReadFile(s.mailboxPath("w1"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	lines = lines[:len(lines)-1]
	late := newTestStore(t)
	send(t, late, "owner", "w1", "from the other clone")
	theirs, err := os.ReadFile(late.mailboxPath("w1"))
	if err != nil {
		t.Fatal(err)
	}
	at := len(lines) - 3
	rewritten := strings.Join(lines[:at], "") + string(theirs) + strings.Join(lines[at:], "")
	if err := os.WriteFile(s.mailboxPath("w1"), []byte(rewritten), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := unread(s); !slices.Equal(got, []string{"from the other clone"}) {
		t.Fatalf("unread after the rewrite = %v", got)
	}
}

// BenchmarkUnreadOfASender measures Unread for an agent that sent 2000 messages and never
// received one (its read cursor at the start), beside a no-op floor (reading the cursor
// file alone): the copies are gone over once, then each call starts past them.
func BenchmarkUnreadOfASender(b *testing.B) {
	s, err := Init(b.TempDir(), InitOptions{Name: "bench", OwnerID: "owner"}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := s.AddAgent(human, NewAgent{ID: "w1", ParentID: "owner", Passkey: "w1-passkey"}); err != nil {
		b.Fatal(err)
	}
	w1 := Actor{ID: "w1", Via: ViaTool}
	for i := range 2000 {
		if _, err := s.SendMessage(w1, SendRequest{To: "owner", Content: fmt.Sprintf("progress %d", i)}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("floor_cursor_read", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.readCursor("w1"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unread", func(b *testing.B) {
		for b.Loop() {
			if msgs, _, err := s.Unread("w1"); err != nil || len(msgs) != 0 {
				b.Fatalf("%d %v", len(msgs), err)
			}
		}
	})
}
