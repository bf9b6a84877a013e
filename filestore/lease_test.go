package filestore

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aipm/aipm/filestore/internal/engine"
)

func claim(t *testing.T, s *Store, machine, agent string) *Lease {
	t.Helper()
	got, err := s.ClaimLeases(machine, []string{agent})
	if err != nil {
		t.Fatal(err)
	}
	return got[agent]
}

func TestLeaseClaimRenewTakeoverMove(t *testing.T) {
	s, clk := clockedStore(t)
	if l := claim(t, s, "m-a", "w1"); l == nil || l.MachineID != "m-a" || !l.ExpiresAt.Equal(clk.Now().Add(time.Minute)) {
		t.Fatalf("first claim: %+v", l)
	}
	if ev := latestEvent(t, s, "w1"); ev.Change != "lease" || ev.From != "" || ev.To != "m-a" {
		t.Errorf("history of the claim: %+v", ev)
	}
	// Another machine finds it taken, and writes nothing.
	clk.Advance(10 * time.Second)
	if l := claim(t, s, "m-b", "w1"); l.MachineID != "m-a" || l.Version != 1 {
		t.Fatalf("claim by another machine: %+v", l)
	}
	// Early on, the holder leaves it as it is; a third of it gone, it renews.
	if l := claim(t, s, "m-a", "w1"); l.Version != 1 {
		t.Errorf("renewed too early: %+v", l)
	}
	clk.Advance(15 * time.Second)
	renewed := claim(t, s, "m-a", "w1")
	if renewed.Version != 2 || !renewed.ExpiresAt.Equal(clk.Now().Add(time.Minute)) {
		t.Errorf("renewal: %+v", renewed)
	}
	// The holder stops renewing: once the lease lapses, another machine takes it over.
	clk.Advance(59 * time.Second)
	if l := claim(t, s, "m-b", "w1"); l.MachineID != "m-a" {
		t.Fatalf("taken before it lapsed: %+v", l)
	}
	clk.Advance(2 * time.Second)
	if l := claim(t, s, "m-b", "w1"); l.MachineID != "m-b" || !l.AcquiredAt.Equal(clk.Now()) {
		t.Fatalf("takeover: %+v", l)
	}
	if ev := latestEvent(t, s, "w1"); ev.From != "m-a" || ev.To != "m-b" || !strings.HasPrefix(ev.Reason, "the lease of m-a expired at ") || ev.Via != ViaCoordinator {
		t.Errorf("history of the takeover: %+v", ev)
	}
	// A human moves it back: the lease is m-a's at once, and m-b finds it taken.
	if _, err := s.MoveAgent(human, "w1", "m-a"); err != nil {
		t.Fatal(err)
	}
	if l := claim(t, s, "m-b", "w1"); l.MachineID != "m-a" {
		t.Fatalf("after the move: %+v", l)
	}
	if ev := latestEvent(t, s, "w1"); ev.From != "m-b" || ev.To != "m-a" || ev.Reason != "moved by owner" || ev.Actor != "owner" {
		t.Errorf("history of the move: %+v", ev)
	}
	if _, err := s.MoveAgent(human, "w1", "Not A Machine"); code(err) != "invalid_machine_id" {
		t.Errorf("move to a bad id: %v", err)
	}
	if _, err := s.MoveAgent(human, "ghost", "m-a"); code(err) != "agent_not_found" && !strings.Contains(code(err), "not") {
		t.Errorf("move of a missing agent: %v", code(err))
	}
	// Released, it is free to whoever claims first.
	if _, err := s.ReleaseAgent(human, "w1"); err != nil {
		t.Fatal(err)
	}
	if l := claim(t, s, "m-b", "w1"); l.MachineID != "m-b" {
		t.Fatalf("after the release: %+v", l)
	}
	if _, err := s.ReleaseAgent(human, "w2"); code(err) != "no_lease" {
		t.Errorf("release of an agent without a lease: %v", err)
	}
}

func TestLeasePresenceFollowsChatSessions(t *testing.T) {
	s, clk := clockedStore(t)
	if l := claim(t, s, "m-a", "w1"); l.ChatLive || l.ChatSeenAt != nil {
		t.Fatalf("no chat yet: %+v", l)
	}
	se := chatSession(t, s, "w1")
	clk.Advance(time.Second)
	// A change of presence is written at once, not at the next renewal.
	l := claim(t, s, "m-a", "w1")
	if !l.ChatLive || !l.ChatSeenAt.Equal(clk.Now()) {
		t.Fatalf("chat live: %+v", l)
	}
	clk.Advance(time.Second)
	if err := s.EndSession(se.ID, "stdin_closed"); err != nil {
		t.Fatal(err)
	}
	ended := clk.Now()
	clk.Advance(time.Second)
	if l := claim(t, s, "m-a", "w1"); l.ChatLive || !l.ChatSeenAt.Equal(ended) {
		t.Fatalf("chat ended at %s: %+v", ended, l)
	}
}

// TestConversationAcrossMachines: the partner's chat session lives on another machine, so
// this one sees no session of it; its lease says it is there, and the conversation lasts
// as long as that machine renews. Once it stops, the conversation expires a grace after
// the machine last saw the partner's session.
func TestConversationAcrossMachines(t *testing.T) {
	t.Setenv(EnvMachineID, "m-a")
	s, clk := clockedStore(t)
	chatSession(t, s, "w1")
	c := mustStart(t, s, "w1", "w2", ConversationRequest{InitialMessage: "hello"})
	w2 := chatSession(t, s, "w2")
	if _, err := s.TakeConversationRequest(as("w2")); err != nil {
		t.Fatal(err)
	}
	// From here on w2 lives on m-b: no session of it here, only its lease.
	if err := s.EndSession(w2.ID, "moved"); err != nil {
		t.Fatal(err)
	}
	renew := func() time.Time {
		now := clk.Now()
		l := &Lease{AgentID: "w2", MachineID: "m-b", AcquiredAt: now, RenewedAt: now, ExpiresAt: now.Add(time.Minute), ChatLive: true, ChatSeenAt: &now}
		writeRaw(t, s.leasePath("w2"), l)
		return now
	}
	renew()
	for range 12 { // four minutes of renewals every 20 s
		clk.Advance(20 * time.Second)
		renew()
		if n, err := s.RefreshConversations(); err != nil || n != 0 {
			t.Fatalf("partner's machine renewing: changed %d, %v", n, err)
		}
	}
	last := clk.Now()
	// m-b stops: no renewal any more. Within the grace of its last sight, still on.
	clk.Advance(59 * time.Second)
	if n, _ := s.RefreshConversations(); n != 0 {
		t.Fatalf("within the grace: changed %d", n)
	}
	clk.Advance(2 * time.Second)
	if n, err := s.RefreshConversations(); err != nil || n != 1 {
		t.Fatalf("after the grace: changed %d, %v", n, err)
	}
	got := mustConv(t, s, c.ID)
	if got.State != ConvTerminating || got.EndReason != EndSessionExpired || !got.EndedAt.Equal(last.Add(time.Minute)) {
		t.Errorf("got %s %s at %v, want session_expired at %v", got.State, got.EndReason, got.EndedAt, last.Add(time.Minute))
	}
}

func TestDoctorChecksLeases(t *testing.T) {
	s, clk := clockedStore(t)
	claim(t, s, "m-a", "w1")
	if got := problemsOf(t, s); len(got) != 0 {
		t.Fatalf("a clean lease: %v", got)
	}
	now := clk.Now()
	writeRaw(t, s.leasePath("ghost"), &Lease{AgentID: "ghost", MachineID: "m-a", ExpiresAt: now})
	writeRaw(t, s.leasePath("w2"), &Lease{AgentID: "w2", MachineID: "Bad Machine", ExpiresAt: now})
	got := problemsOf(t, s)
	for _, want := range []string{
		`.ai-pm/leases/ghost.json:2: lease of agent "ghost", which does not exist: delete the file`,
		`.ai-pm/leases/w2.json:3: invalid machine id "Bad Machine": move the agent with ` + "`aipm agent move w2 --to MACHINE`",
	} {
		if !hasPrefix(got, want) {
			t.Errorf("doctor lacks %q:\n%s", want, strings.Join(got, "\n"))
		}
	}
}

// TestLeavePresence: a coordinator that stops records its agents' chat sessions as ended
// without extending the leases, so partners elsewhere count the grace from then.
func TestLeavePresence(t *testing.T) {
	s, clk := clockedStore(t)
	se := chatSession(t, s, "w1")
	held := claim(t, s, "m-a", "w1")
	other := claim(t, s, "m-b", "w2")
	if !held.ChatLive {
		t.Fatalf("chat not live: %+v", held)
	}
	clk.Advance(5 * time.Second)
	if err := s.EndSession(se.ID, "stopping"); err != nil {
		t.Fatal(err)
	}
	ended := clk.Now()
	clk.Advance(time.Second)
	if err := s.LeavePresence("m-a"); err != nil {
		t.Fatal(err)
	}
	l, _ := s.Lease("w1")
	if l.ChatLive || !l.ChatSeenAt.Equal(ended) || !l.ExpiresAt.Equal(held.ExpiresAt) || l.MachineID != "m-a" {
		t.Errorf("after leaving: %+v (ended %s, expiry %s)", l, ended, held.ExpiresAt)
	}
	if o, _ := s.Lease("w2"); o.Version != other.Version {
		t.Errorf("another machine's lease was written: %+v", o)
	}
}

func TestMachineID(t *testing.T) {
	s := newTestStore(t) // Init makes this machine's id
	var m machineFile
	if err := s.readJSON(s.path("runtime", "machine.json"), &m); err != nil || ValidateMachineID(m.ID) != nil {
		t.Fatalf("machine.json after Init: %+v, %v", m, err)
	}
	if id, err := s.MachineID(); err != nil || id != m.ID {
		t.Errorf("MachineID = %q, %v; want %q", id, err, m.ID)
	}
	t.Setenv(EnvMachineID, "laptop-2")
	if id, err := s.MachineID(); err != nil || id != "laptop-2" {
		t.Errorf("with %s: %q, %v", EnvMachineID, id, err)
	}
	t.Setenv(EnvMachineID, "Laptop 2")
	if _, err := s.MachineID(); code(err) != "invalid_machine_id" {
		t.Errorf("a bad %s: %v", EnvMachineID, err)
	}
}

// A lease file from elsewhere claims no more than the lease duration allows: an expiry a
// century away lasts twice the duration from its renewal, and a renewal dated far ahead of
// this clock renews nothing; another machine then takes the agent.
func TestLeaseFromElsewhereIsClamped(t *testing.T) {
	s, clk := clockedStore(t)
	now := clk.Now()
	write := func(renewed, expires time.Time) {
		t.Helper()
		l := Lease{AgentID: "w1", MachineID: "m-evil", AcquiredAt: renewed, RenewedAt: renewed, ExpiresAt: expires, UpdatedAt: renewed, Version: 1}
		data, _ := json.MarshalIndent(l, "", "  ")
		if err := engine.WriteAtomic(s.leasePath("w1"), append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(now, now.AddDate(100, 0, 0))
	l, err := s.Lease("w1")
	if err != nil {
		t.Fatal(err)
	}
	if want := now.Add(2 * time.Minute); !l.ExpiresAt.Equal(want) {
		t.Fatalf("a century's expiry reads as %s, want %s", l.ExpiresAt, want)
	}
	clk.Advance(2*time.Minute + time.Second)
	if got := claim(t, s, "m-a", "w1"); got.MachineID != "m-a" {
		t.Fatalf("after twice the duration the lease is still %s's", got.MachineID)
	}
	write(clk.Now().AddDate(100, 0, 0), clk.Now().AddDate(100, 0, 1))
	if l, _ := s.Lease("w1"); l.Held(clk.Now()) {
		t.Fatalf("a renewal dated a century ahead holds the lease until %s", l.ExpiresAt)
	}
	if got := claim(t, s, "m-a", "w1"); got.MachineID != "m-a" {
		t.Fatalf("a lease renewed in the future kept the agent on %s", got.MachineID)
	}
}

// TestLeaseGoesHome: an agent a human placed on m-a and m-b took over while m-a was away
// goes back to m-a once m-a runs again and asks: m-b lets it go, a third machine leaves it
// to m-a, and m-a takes it. A home that stops asking lets the agent stay.
func TestLeaseGoesHome(t *testing.T) {
	s, clk := clockedStore(t)
	if _, err := s.MoveAgent(human, "w1", "m-a"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(61 * time.Second) // m-a is away: its lease lapses
	if l := claim(t, s, "m-b", "w1"); l.MachineID != "m-b" || l.Home != "m-a" || l.HomeBackAt != nil {
		t.Fatalf("takeover: %+v", l)
	}
	// m-b cannot let it go before m-a asks.
	if back, err := s.ReturnHome("m-b", "w1"); err != nil || back {
		t.Fatalf("returned unasked: %v, %v", back, err)
	}
	if err := s.AskHome("m-a", []string{"w1"}); err != nil {
		t.Fatal(err)
	}
	if l, _ := s.Lease("w1"); l.HomeBackAt == nil || !l.HomeBackAt.Equal(clk.Now()) || l.MachineID != "m-b" {
		t.Fatalf("asked home: %+v", l)
	}
	if back, err := s.ReturnHome("m-c", "w1"); err != nil || back {
		t.Fatalf("a machine that does not hold it let it go: %v, %v", back, err)
	}
	if back, err := s.ReturnHome("m-b", "w1"); err != nil || !back {
		t.Fatalf("return: %v, %v", back, err)
	}
	if ev := latestEvent(t, s, "w1"); ev.From != "m-b" || ev.To != "" || ev.Reason != "back to its home machine m-a, running again" {
		t.Errorf("history of the return: %+v", ev)
	}
	clk.Advance(time.Second)
	if l := claim(t, s, "m-c", "w1"); l.MachineID != "m-b" {
		t.Fatalf("a third machine took what goes home: %+v", l)
	}
	if l := claim(t, s, "m-a", "w1"); l.MachineID != "m-a" || l.Home != "m-a" || l.HomeBackAt != nil {
		t.Fatalf("home again: %+v", l)
	}

	// Away again, taken over again; m-a asks once and stops: after a lease's length the
	// holder keeps it, and other machines may take it when it lapses.
	clk.Advance(61 * time.Second)
	claim(t, s, "m-b", "w1")
	if err := s.AskHome("m-a", []string{"w1"}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(61 * time.Second)
	if back, err := s.ReturnHome("m-b", "w1"); err != nil || back {
		t.Fatalf("returned to a home that stopped asking: %v, %v", back, err)
	}
	if l := claim(t, s, "m-c", "w1"); l.MachineID != "m-c" || l.Home != "m-a" {
		t.Fatalf("takeover after the home stopped asking: %+v", l)
	}
}
