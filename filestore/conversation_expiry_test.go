package filestore

import (
	"os"
	"testing"
	"time"
)

// chatSession opens a chat session for agent (served by this test process, so live).
func chatSession(t *testing.T, s *Store, agent string) *Session {
	t.Helper()
	if _, err := s.OpenChat(as("owner"), agent); err != nil {
		t.Fatal(err)
	}
	r, err := s.Authenticate(AuthRequest{AgentID: agent, Passkey: agent + "-passkey", Purpose: PurposeChat, PID: os.Getpid()})
	if err != nil {
		t.Fatalf("chat session for %s: %v", agent, err)
	}
	return r.Session
}

func TestSessionExpired(t *testing.T) {
	s, clk := clockedStore(t)
	w1 := chatSession(t, s, "w1")
	c := mustStart(t, s, "w1", "w2", ConversationRequest{InitialMessage: "しりとり"})
	w2 := chatSession(t, s, "w2")
	if _, err := s.TakeConversationRequest(as("w2")); err != nil {
		t.Fatal(err)
	}
	// Both sides live: nothing expires, however long the silence (up to the active timeout).
	clk.Advance(5 * time.Minute)
	if n, err := s.RefreshConversations(); err != nil || n != 0 {
		t.Fatalf("both live: refresh = %d, %v", n, err)
	}
	// w2's process exits: its session ends. Within the grace (60 s) the conversation lives
	// on; a new chat session in time would keep it.
	if err := s.EndSession(w2.ID, "stdin_closed"); err != nil {
		t.Fatal(err)
	}
	gone := clk.Now()
	clk.Advance(59 * time.Second)
	if n, _ := s.RefreshConversations(); n != 0 || mustConv(t, s, c.ID).State != ConvActive {
		t.Fatalf("within the grace: changed %d, state %s", n, mustConv(t, s, c.ID).State)
	}
	clk.Advance(2 * time.Second)
	// Several noticing at once write it once: the first; the others find nothing due.
	n, err := s.RefreshConversations()
	if err != nil || n != 1 {
		t.Fatalf("after the grace: refresh = %d, %v; want 1", n, err)
	}
	if n, _ := s.RefreshConversations(); n != 0 {
		t.Errorf("second refresh changed %d", n)
	}
	got := mustConv(t, s, c.ID)
	if got.State != ConvTerminating || got.EndReason != EndSessionExpired || got.EndedBy != "" ||
		got.EndedAt == nil || !got.EndedAt.Equal(gone.Add(60*time.Second)) {
		t.Fatalf("expired conversation: %+v (gone at %s)", got, gone)
	}
	evs, err := s.Events(c.ID)
	if err != nil {
		t.Fatal(err)
	}
	last := evs[len(evs)-1]
	if last.To != ConvTerminating || last.Reason != EndSessionExpired || last.Actor != SystemSender {
		t.Errorf("history: %+v", last)
	}
	// The live initiator is told; so is the gone side when it comes back.
	if cv, err := s.TakeEndedNotice(as("w1")); err != nil || cv == nil || cv.EndReason != EndSessionExpired {
		t.Fatalf("initiator's notice: %+v, %v", cv, err)
	}
	chatSession(t, s, "w2")
	if cv, err := s.TakeEndedNotice(as("w2")); err != nil || cv == nil || cv.State != ConvEnded {
		t.Fatalf("returning side's notice: %+v, %v", cv, err)
	}
	_ = w1
}

func TestSessionExpiredNoticedByTheLiveSide(t *testing.T) {
	s, clk := clockedStore(t)
	setSettings(t, s, func(st *Settings) { st.ConversationSessionGraceSeconds = 10 })
	chatSession(t, s, "w1")
	c := mustStart(t, s, "w1", "w2", ConversationRequest{})
	w2 := chatSession(t, s, "w2")
	if _, err := s.TakeConversationRequest(as("w2")); err != nil {
		t.Fatal(err)
	}
	if err := s.EndSession(w2.ID, "logout"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(11 * time.Second)
	// No timer ran: the initiator's own next step applies it and hears of it at once.
	cv, err := s.TakeEndedNotice(as("w1"))
	if err != nil || cv == nil || cv.ID != c.ID || cv.EndReason != EndSessionExpired {
		t.Fatalf("initiator's notice: %+v, %v", cv, err)
	}
	t.Setenv(EnvSessionGrace, "x")
	if _, err := s.SessionGrace(); code(err) != "invalid_setting" {
		t.Errorf("bad %s: %v", EnvSessionGrace, err)
	}
}

// A side that comes back within the grace keeps the conversation; a gap of the grace
// between two of its sessions ends it, dated at the gap.
func TestSessionExpiredGapBetweenSessions(t *testing.T) {
	s, clk := clockedStore(t)
	setSettings(t, s, func(st *Settings) { st.ConversationActiveTimeoutSeconds = 86400 })
	chatSession(t, s, "w1")
	c := mustStart(t, s, "w1", "w2", ConversationRequest{})
	w2 := chatSession(t, s, "w2")
	if _, err := s.TakeConversationRequest(as("w2")); err != nil {
		t.Fatal(err)
	}
	if err := s.EndSession(w2.ID, "stdin_closed"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(30 * time.Second)
	back := chatSession(t, s, "w2")
	clk.Advance(time.Hour - time.Minute)
	// The return kept it (the active timeout is a day here).
	if p, err := s.newChatPresence(); err != nil {
		t.Fatal(err)
	} else if _, ok, _ := p.expiry(mustRaw(t, s, c.ID)); ok {
		t.Errorf("returned within the grace, yet expired")
	}
	if err := s.EndSession(back.ID, "stdin_closed"); err != nil {
		t.Fatal(err)
	}
	left := clk.Now()
	clk.Advance(2 * time.Minute)
	chatSession(t, s, "w2")
	p, err := s.newChatPresence()
	if err != nil {
		t.Fatal(err)
	}
	at, ok, err := p.expiry(mustRaw(t, s, c.ID))
	if err != nil || !ok || !at.Equal(left.Add(time.Minute)) {
		t.Errorf("gap of two minutes: expiry %s %v %v; want %s", at, ok, err, left.Add(time.Minute))
	}
}

func mustRaw(t *testing.T, s *Store, id string) *Conversation {
	t.Helper()
	c, err := s.readConversation(id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The partner's authenticate, which finds the expired request is no work, writes the
// expiry it noticed: the file does not wait for the initiator's next step.
func TestAuthenticateWritesPassedDeadline(t *testing.T) {
	s, clk := clockedStore(t)
	chatSession(t, s, "w1")
	c := mustStart(t, s, "w1", "w2", ConversationRequest{})
	clk.Advance(301 * time.Second)
	if raw := mustRaw(t, s, c.ID); raw.State != ConvPending {
		t.Fatalf("before anyone looked: %s", raw.State)
	}
	_, err := s.Authenticate(AuthRequest{AgentID: "w2", Passkey: "w2-passkey", Purpose: PurposeChat, PID: os.Getpid()})
	if code(err) != "no_work" {
		t.Fatalf("w2's authenticate: %v", err)
	}
	if raw := mustRaw(t, s, c.ID); raw.State != ConvExpired || raw.EndReason != EndTimeout {
		t.Errorf("after w2's authenticate: %s (%s)", raw.State, raw.EndReason)
	}
}
