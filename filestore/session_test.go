package filestore

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aipm/aipm/filestore/internal/engine"
)

func startTask(t *testing.T, s *Store, assignee string) *Task {
	t.Helper()
	tk := mustTask(t, s, NewTask{Title: "work for " + assignee, Status: StatusTodo, AssigneeID: assignee})
	if _, err := s.SetTaskStatus(human, tk.ID, StatusInProgress, ""); err != nil {
		t.Fatal(err)
	}
	return tk
}

func TestAuthenticateOneLiveTaskSession(t *testing.T) {
	s := newTestStore(t)
	tk := startTask(t, s, "w1")
	// Separate Store values stand in for separate processes racing for the one task session.
	const n = 8
	var wg sync.WaitGroup
	wins := make(chan *AuthResult, n)
	errs := make(chan error, n)
	for range n {
		other, err := Open(s.Root(), Options{Now: s.now})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := other.Authenticate(AuthRequest{AgentID: "w1", Passkey: "w1-passkey", PID: os.Getpid()})
			if err != nil {
				errs <- err
				return
			}
			wins <- r
		}()
	}
	wg.Wait()
	close(wins)
	close(errs)
	if len(wins) != 1 {
		t.Fatalf("%d task sessions opened, want exactly 1", len(wins))
	}
	for err := range errs {
		if code(err) != "no_work" {
			t.Errorf("loser got %q, want no_work", code(err))
		}
	}
	r := <-wins
	if r.Session.Purpose != PurposeTask || r.Session.TaskID != tk.ID {
		t.Errorf("session %+v", r.Session)
	}
	if _, err := s.Session(r.Token); err != nil {
		t.Errorf("token does not resolve: %v", err)
	}
	if _, err := s.Session(r.Session.ID + ".wrongsecret"); code(err) != "invalid_session" {
		t.Errorf("wrong secret: got %q", code(err))
	}
}

func TestDeadProcessEndsOnlyItsOwnSession(t *testing.T) {
	s := newTestStore(t)
	startTask(t, s, "w1")
	if err := os.WriteFile(s.mailboxPath("w1"), []byte(`{"id":"msg_1","senderId":"mgr","content":"hi","createdAt":"2026-01-02T03:04:05Z"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A pid that cannot be alive: the task session's server is "dead".
	dead, err := s.Authenticate(AuthRequest{AgentID: "w1", Passkey: "w1-passkey", PID: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Session(dead.Token); code(err) != "session_expired" {
		t.Errorf("dead process's session: got %q, want session_expired", code(err))
	}
	// The chat session opens in a live process; whoever notices the orphan ends it.
	chat, err := s.Authenticate(AuthRequest{AgentID: "w1", Passkey: "w1-passkey", Purpose: PurposeChat, PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	ended, err := s.readSession(dead.Session.ID)
	if err != nil || ended.State != SessionEnded || ended.EndReason != "process_gone" {
		t.Fatalf("dead session not ended as an orphan: %+v, %v", ended, err)
	}
	// Ended sessions leave the directory that work detection lists.
	if all, _ := s.Sessions("w1"); len(all) != 1 || all[0].ID != chat.Session.ID {
		t.Fatalf("listed sessions = %+v, want only the live chat session", all)
	}
	if _, err := os.Stat(s.endedSessionPath(dead.Session.ID)); err != nil {
		t.Errorf("ended session not in sessions/ended: %v", err)
	}
	if n, err := s.EndOrphans("w1"); err != nil || n != 0 {
		t.Fatalf("EndOrphans = %d, %v; want 0 (already ended)", n, err)
	}
	if _, err := s.Session(chat.Token); err != nil {
		t.Errorf("the live chat session was touched: %v", err)
	}
	again, err := s.Authenticate(AuthRequest{AgentID: "w1", Passkey: "w1-passkey", PID: os.Getpid()})
	if err != nil || again.Session.Purpose != PurposeTask {
		t.Fatalf("re-authenticate after the dead session: %v %+v", err, again)
	}
}

func TestAuthenticateRefusals(t *testing.T) {
	s := newTestStore(t)
	for _, tc := range []struct {
		req  AuthRequest
		want string
	}{
		{AuthRequest{AgentID: "ghost", Passkey: "x"}, "agent_not_found"},
		{AuthRequest{AgentID: "w1", Passkey: "nope"}, "invalid_passkey"},
		{AuthRequest{AgentID: "owner", Passkey: "anything"}, "invalid_passkey"},
		{AuthRequest{AgentID: "w1", Passkey: "w1-passkey"}, "no_work"},
		{AuthRequest{AgentID: "w1", Passkey: "w1-passkey", Purpose: "party"}, "invalid_argument"},
		{AuthRequest{AgentID: "../w1", Passkey: "w1-passkey"}, "invalid_id"},
	} {
		if _, err := s.Authenticate(tc.req); code(err) != tc.want {
			t.Errorf("Authenticate(%+v): got %q, want %s", tc.req, code(err), tc.want)
		}
	}
	startTask(t, s, "w1")
	if _, err := s.Authenticate(AuthRequest{AgentID: "w1", Passkey: "w1-passkey", Purpose: PurposeChat, PID: os.Getpid()}); code(err) != "no_work" {
		t.Errorf("explicit chat purpose without chat work: got %q", code(err))
	}
}

func TestTouchRenewsLease(t *testing.T) {
	s := newTestStore(t)
	startTask(t, s, "w1")
	r, err := s.Authenticate(AuthRequest{AgentID: "w1", Passkey: "w1-passkey", PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	base := r.Session.LastActivityAt
	var now time.Time
	clocked, err := Open(s.Root(), Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	lease := time.Hour
	// A call soon after the last one writes nothing.
	now = base.Add(time.Second)
	if err := clocked.Touch(r.Session, lease); err != nil {
		t.Fatal(err)
	}
	if se, _ := clocked.Session(r.Token); !se.ExpiresAt.Equal(r.Session.ExpiresAt) {
		t.Errorf("lease renewed after 1s: %v → %v", r.Session.ExpiresAt, se.ExpiresAt)
	}
	// Later, the lease moves forward from the call.
	now = base.Add(50 * time.Minute)
	if err := clocked.Touch(r.Session, lease); err != nil {
		t.Fatal(err)
	}
	se, err := clocked.Session(r.Token)
	if err != nil {
		t.Fatal(err)
	}
	if want := now.Add(lease); !se.ExpiresAt.Equal(want) {
		t.Errorf("expires_at %v, want %v", se.ExpiresAt, want)
	}
	// Without calls, the lease runs out and the session is dead.
	now = now.Add(lease + time.Second)
	if _, err := clocked.Session(r.Token); code(err) != "session_expired" {
		t.Errorf("after the lease: got %q, want session_expired", code(err))
	}
}

// A session record read on every call is kept as last read, and read again as soon as its
// file changes: a write by another process, an edit in place, an end.
func TestSessionReadAgainWhenItsFileChanges(t *testing.T) {
	s := newTestStore(t)
	startTask(t, s, "w1")
	r, err := s.Authenticate(AuthRequest{AgentID: "w1", Passkey: "w1-passkey", PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	se, err := s.Session(r.Token)
	if err != nil {
		t.Fatal(err)
	}
	se.Workflow = "changed by the caller" // a copy: the memo is not touched
	o := reopen(t, s)
	if err := o.updateSession(se.ID, func(cur *Session) error { cur.Workflow = "by another process"; return nil }); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Session(r.Token); err != nil || got.Workflow != "by another process" {
		t.Fatalf("after another process's write: %q, %v", got.Workflow, err)
	}
	// In place, same size: only the modification and change times say so.
	data, err := os.ReadFile(s.sessionPath(se.ID))
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(data), "by another process", "by another prOcess", 1)
	f, err := os.OpenFile(s.sessionPath(se.ID), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(edited)
	f.Close()
	if got, err := s.Session(r.Token); err != nil || got.Workflow != "by another prOcess" {
		t.Fatalf("after an edit in place: %q, %v", got.Workflow, err)
	}
	if err := o.EndSession(se.ID, "logout"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Session(r.Token); code(err) != "session_expired" {
		t.Errorf("after the end: %v, want session_expired", err)
	}
}

// TestSessionsListAsTheFilesSay: the listing of sessions comes from the records as last
// read while their files keep their identity, so every change of a file shows: another
// process's write, an edit in place, a removal, a new session; and a copy handed out is
// the caller's.
func TestSessionsListAsTheFilesSay(t *testing.T) {
	s := newTestStore(t)
	if _, _, err := s.AddAgent(human, NewAgent{ID: "w3", ParentID: "mgr", Passkey: "w3-passkey"}); err != nil {
		t.Fatal(err)
	}
	o := reopen(t, s)
	var ids []string
	for _, a := range []string{"w1", "w2", "w3"} {
		startTask(t, s, a)
		if a == "w3" {
			continue // authenticated later
		}
		r, err := s.Authenticate(AuthRequest{AgentID: a, Passkey: a + "-passkey", PID: os.Getpid()})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, strings.Split(r.Token, ".")[0])
	}
	// What the files say, read afresh.
	truth := func() string {
		var b strings.Builder
		for _, id := range ids {
			var se Session
			if err := o.readJSON(s.sessionPath(id), &se); err != nil {
				continue
			}
			b.WriteString(id + " " + se.Purpose + " " + se.Workflow + "\n")
		}
		return b.String()
	}
	check := func(step string) {
		t.Helper()
		all, err := s.Sessions("")
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, se := range all {
			b.WriteString(se.ID + " " + se.Purpose + " " + se.Workflow + "\n")
		}
		if got, want := b.String(), truth(); got != want {
			t.Fatalf("%s: listed\n%swant\n%s", step, got, want)
		}
		for _, se := range all {
			se.Workflow = "changed by the caller"
		}
	}
	check("first listing")
	check("listed again")
	if err := o.updateSession(ids[0], func(cur *Session) error { cur.Workflow = "by another process"; return nil }); err != nil {
		t.Fatal(err)
	}
	check("after another process's write")
	data, err := os.ReadFile(s.sessionPath(ids[0]))
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(data), "by another process", "by another prOcess", 1)
	if err := os.WriteFile(s.sessionPath(ids[0]), []byte(edited), 0o600); err != nil { // in place, same size
		t.Fatal(err)
	}
	check("after an edit in place")
	if err := os.Remove(s.sessionPath(ids[1])); err != nil {
		t.Fatal(err)
	}
	check("after a removal")
	s.sessMu.Lock()
	_, held := s.sessMemo[ids[1]]
	s.sessMu.Unlock()
	if held {
		t.Errorf("the record of the removed session %s is still held", ids[1])
	}
	r, err := o.Authenticate(AuthRequest{AgentID: "w3", Passkey: "w3-passkey", PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	ids = append(ids, strings.Split(r.Token, ".")[0])
	check("after a new session")
}

// BenchmarkSessions lists 60 sessions (thirty agents' task and chat sessions), as each
// process does every second while a conversation is open (its deadlines and the sides'
// presence), beside the floor of listing their directory.
func BenchmarkSessions(b *testing.B) {
	s, err := Init(b.TempDir(), InitOptions{Name: "bench", OwnerID: "owner"}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	if err := engine.EnsureDir(s.path("runtime", "sessions")); err != nil {
		b.Fatal(err)
	}
	now := s.Now()
	for i := range 60 {
		se := &Session{ID: NewID(PrefixSession, now), AgentID: fmt.Sprintf("w%d", i/2), Purpose: []string{PurposeTask, PurposeChat}[i%2],
			State: SessionActive, PID: os.Getpid(), CreatedAt: now, LastActivityAt: now, ExpiresAt: now.Add(time.Hour), UpdatedAt: now, Version: 1}
		if err := engine.WriteJSON(s.sessionPath(se.ID), se, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("floor_readdir", func(b *testing.B) {
		for b.Loop() {
			if e, err := os.ReadDir(s.path("runtime", "sessions")); err != nil || len(e) != 60 {
				b.Fatal(len(e), err)
			}
		}
	})
	b.Run("sessions", func(b *testing.B) {
		for b.Loop() {
			if all, err := s.Sessions(""); err != nil || len(all) != 60 {
				b.Fatal(len(all), err)
			}
		}
	})
}
