package filestore

import (
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aipm/aipm/filestore/internal/engine"
)

func mustStart(t *testing.T, s *Store, from, to string, r ConversationRequest) *Conversation {
	t.Helper()
	r.Target = to
	res, err := s.StartConversation(as(from), r)
	if err != nil {
		t.Fatalf("StartConversation(%s → %s): %v", from, to, err)
	}
	return res.Conversation
}

func mustConv(t *testing.T, s *Store, id string) *Conversation {
	t.Helper()
	c, err := s.Conversation(id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// convChanges lists a conversation's history as "actor change from→to reason".
func convChanges(t *testing.T, s *Store, id string) []string {
	t.Helper()
	var out []string
	for _, e := range mustEvents(t, s, id) {
		out = append(out, strings.TrimSpace(e.Actor+" "+e.Change+" "+e.From+"→"+e.To+" "+e.Reason))
	}
	return out
}

func TestStartConversation(t *testing.T) {
	s := newTestStore(t)
	res, err := s.StartConversation(as("w1"), ConversationRequest{Target: "w2", Purpose: "しりとり", InitialMessage: "しりとりをしましょう。りんご"})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Conversation
	p, _ := s.Project()
	if c.State != ConvPending || c.InitiatorID != "w1" || c.ParticipantID != "w2" || c.Purpose != "しりとり" ||
		c.MaxTurns != DefaultMaxTurns || c.Turns != 1 || c.ProjectID != p.ID || c.Version != 1 || c.LastMessageAt == nil {
		t.Errorf("conversation %+v", c)
	}
	if res.Message == nil || res.Message.ConversationID != c.ID || res.Message.ReceiverID != "w2" {
		t.Fatalf("initial message %+v", res.Message)
	}
	// The initial message is dual-written with the conversation id.
	for _, box := range []string{"w1", "w2"} {
		msgs := mailbox(t, s, box)
		if len(msgs) != 1 || msgs[0].ID != res.Message.ID || msgs[0].ConversationID != c.ID {
			t.Errorf("%s mailbox %+v", box, msgs)
		}
	}
	if got := mustConv(t, s, c.ID); got.State != ConvPending || !got.CreatedAt.Equal(c.CreatedAt) {
		t.Errorf("read back %+v", got)
	}
	if ch := convChanges(t, s, c.ID); !slices.Equal(ch, []string{"w1 created →pending しりとり"}) {
		t.Errorf("history %q", ch)
	}
	// Without an initial message nothing is sent and no turn counted.
	c2 := mustStart(t, s, "mgr", "w1", ConversationRequest{})
	if c2.Turns != 0 || c2.LastMessageAt != nil || len(mailbox(t, s, "mgr")) != 0 {
		t.Errorf("conversation without a message: %+v", c2)
	}
}

func TestConversationFileIsStable(t *testing.T) {
	s := newTestStore(t)
	c := mustStart(t, s, "w1", "w2", ConversationRequest{InitialMessage: "hi"})
	path := s.conversationPath(c.ID)
	data := fileBytes(t, path)
	if !strings.Contains(string(data), `"notified": []`) {
		t.Errorf("notified is not an empty list:\n%s", data)
	}
	got, err := s.readConversation(c.ID)
	if err != nil {
		t.Fatal(err)
	}
	again, err := engine.EncodeJSON(got)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(data) {
		t.Errorf("rewriting changes the bytes:\n%s\nvs\n%s", data, again)
	}
	// Field order is the spec's.
	var keys []string
	for _, line := range strings.Split(string(data), "\n") {
		if k, _, ok := strings.Cut(strings.TrimSpace(line), `":`); ok && strings.HasPrefix(strings.TrimSpace(line), `"`) {
			keys = append(keys, strings.TrimPrefix(k, `"`))
		}
	}
	want := []string{"id", "project_id", "initiator_id", "participant_id", "purpose", "state", "max_turns", "turns", "task_id",
		"created_at", "activated_at", "last_message_at", "ended_at", "ended_by", "end_reason", "notified", "updated_at", "version"}
	if !slices.Equal(keys, want) {
		t.Errorf("keys %v", keys)
	}
}

func TestStartConversationRefusals(t *testing.T) {
	s := newTestStore(t)
	addAgents(t, s)
	existing := mustStart(t, s, "w1", "w2", ConversationRequest{})
	for _, tc := range []struct {
		name, from string
		r          ConversationRequest
		want       string
	}{
		{"self", "w1", ConversationRequest{Target: "w1"}, "cannot_conversation_with_self"},
		{"unknown", "w1", ConversationRequest{Target: "ghost"}, "agent_not_found"},
		{"human target", "w1", ConversationRequest{Target: "owner"}, "cannot_start_conversation_with_human"},
		{"inactive target", "w1", ConversationRequest{Target: "gone"}, "target_agent_not_in_project"},
		{"human initiator", "owner", ConversationRequest{Target: "w1"}, "invalid_argument"},
		{"inactive initiator", "gone", ConversationRequest{Target: "w1"}, "agent_not_assigned_to_project"},
		{"same direction", "w1", ConversationRequest{Target: "w2"}, "conversation_already_active"},
		{"reverse direction", "w2", ConversationRequest{Target: "w1"}, "conversation_already_active"},
		{"long initial message", "mgr", ConversationRequest{Target: "w1", InitialMessage: strings.Repeat("字", 4001)}, "content_too_long"},
		{"blank initial message", "mgr", ConversationRequest{Target: "w1", InitialMessage: "  "}, "empty_content"},
		{"long purpose", "mgr", ConversationRequest{Target: "w1", Purpose: strings.Repeat("字", 4001)}, "content_too_long"},
		{"unknown task", "mgr", ConversationRequest{Target: "w1", TaskID: "tsk_nope"}, "task_not_found"},
		{"unknown delegation", "mgr", ConversationRequest{Target: "w1", DelegationID: "dlg_nope"}, "delegation_not_found"},
		{"path-like target", "w1", ConversationRequest{Target: "../w2"}, "invalid_id"},
	} {
		_, err := s.StartConversation(as(tc.from), tc.r)
		if code(err) != tc.want {
			t.Errorf("%s: got %q (%v), want %s", tc.name, code(err), err, tc.want)
		}
		if tc.want == "conversation_already_active" && !strings.Contains(err.Error(), existing.ID) {
			t.Errorf("%s: message %q does not name %s", tc.name, err, existing.ID)
		}
	}
	if list, _ := s.Conversations(ConversationFilter{}); len(list) != 1 {
		t.Errorf("refused starts created conversations: %d", len(list))
	}
	if n := len(mailbox(t, s, "w1")); n != 0 {
		t.Errorf("refused starts sent %d messages", n)
	}
}

func TestMaxTurnsClamp(t *testing.T) {
	for in, want := range map[int]int{0: 20, 1: 2, 2: 2, 7: 7, 40: 40, 41: 40, 1000: 40, -3: 2} {
		if got := clampTurns(in); got != want {
			t.Errorf("clampTurns(%d) = %d, want %d", in, got, want)
		}
	}
}

// TestStartConversationRace: agents racing to start a conversation between the same two
// agents, in both directions, from separate Stores: exactly one wins.
func TestStartConversationRace(t *testing.T) {
	s := newTestStore(t)
	var wg sync.WaitGroup
	wins := make(chan string, 8)
	for i := range 8 {
		other, err := Open(s.Root(), Options{Now: s.now})
		if err != nil {
			t.Fatal(err)
		}
		from, to := "w1", "w2"
		if i%2 == 1 {
			from, to = to, from
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := other.StartConversation(as(from), ConversationRequest{Target: to, InitialMessage: "hi"})
			switch {
			case err == nil:
				wins <- res.Conversation.ID
			case code(err) != "conversation_already_active":
				t.Errorf("loser: %v", err)
			}
		}()
	}
	wg.Wait()
	close(wins)
	if len(wins) != 1 {
		t.Fatalf("%d conversations started, want 1", len(wins))
	}
	if list, _ := s.Conversations(ConversationFilter{}); len(list) != 1 {
		t.Errorf("%d conversation files", len(list))
	}
}

func TestConversationLifecycle(t *testing.T) {
	s := newTestStore(t)
	c := mustStart(t, s, "w1", "w2", ConversationRequest{Purpose: "review", InitialMessage: "りんご"})
	// While pending, the initiator may send; the participant must pick it up first.
	r := send(t, s, "w1", "w2", "ごりら？")
	if r.Conversation == nil || r.Message.ConversationID != c.ID || r.Conversation.Turns != 2 || r.Terminated {
		t.Fatalf("initiator's send while pending: %+v", r)
	}
	_, err := s.SendMessage(as("w2"), SendRequest{To: "w1", Content: "ごりら"})
	if code(err) != "conversation_required_for_ai_to_ai" || !strings.Contains(err.(*Error).Hint, "get_next_action") {
		t.Fatalf("participant's send while pending: %v", err)
	}
	// Only the participant picks it up.
	if got, _ := s.TakeConversationRequest(as("w1")); got != nil {
		t.Fatalf("the initiator picked up its own request: %+v", got)
	}
	got, err := s.TakeConversationRequest(as("w2"))
	if err != nil || got == nil || got.ID != c.ID || got.State != ConvActive || got.ActivatedAt == nil {
		t.Fatalf("TakeConversationRequest = %+v, %v", got, err)
	}
	if again, _ := s.TakeConversationRequest(as("w2")); again != nil {
		t.Errorf("picked up twice: %+v", again)
	}
	r = send(t, s, "w2", "w1", "ごりら")
	if r.Message.ConversationID != c.ID || r.Conversation.Turns != 3 || r.Conversation.State != ConvActive {
		t.Errorf("participant's send when active: %+v", r.Conversation)
	}
	// A third agent cannot use it.
	if _, err := s.SendMessage(as("mgr"), SendRequest{To: "w1", Content: "x", ConversationID: c.ID}); code(err) != "not_conversation_participant" {
		t.Errorf("outsider naming the conversation: %q", code(err))
	}
	if _, err := s.SendMessage(as("w1"), SendRequest{To: "w2", Content: "x", ConversationID: "cnv_nope"}); code(err) != "conversation_not_found" {
		t.Errorf("unknown conversation id: %q", code(err))
	}
	if r, err := s.SendMessage(as("w1"), SendRequest{To: "w2", Content: "らっぱ", ConversationID: c.ID}); err != nil || r.Conversation.Turns != 4 {
		t.Errorf("explicit id: %+v %v", r, err)
	}
	// The initiator ends it with a final message.
	ended, err := s.EndConversation(as("w1"), "", "終わりにします")
	if err != nil {
		t.Fatal(err)
	}
	if ended.ID != c.ID || ended.State != ConvTerminating || ended.EndedBy != "w1" || ended.EndReason != EndInitiator ||
		!slices.Equal(ended.Notified, []string{"w1"}) || ended.Turns != 5 || ended.EndedAt == nil {
		t.Errorf("ended %+v", ended)
	}
	if last := mailbox(t, s, "w2"); last[len(last)-1].Content != "終わりにします" || last[len(last)-1].ConversationID != c.ID {
		t.Errorf("final message not delivered: %+v", last[len(last)-1])
	}
	// Nobody sends in a terminating conversation.
	if _, err := s.SendMessage(as("w2"), SendRequest{To: "w1", Content: "待って"}); code(err) != "conversation_required_for_ai_to_ai" ||
		!strings.Contains(err.Error(), "ending") {
		t.Errorf("send after end: %v", err)
	}
	// The ender was told by its answer: it takes no notice, and so cannot consume the
	// partner's (the anchor's defect).
	if n, _ := s.TakeEndedNotice(as("w1")); n != nil {
		t.Fatalf("the ender took a notice: %+v", n)
	}
	if w, _ := s.DetectWork("w2"); w.Notices != 1 || !w.Chat {
		t.Errorf("partner's notice is not chat work: %+v", w)
	}
	n, err := s.TakeEndedNotice(as("w2"))
	if err != nil || n == nil || n.ID != c.ID || n.State != ConvEnded || !slices.Equal(n.Notified, []string{"w1", "w2"}) {
		t.Fatalf("partner's notice = %+v, %v", n, err)
	}
	if n, _ := s.TakeEndedNotice(as("w2")); n != nil {
		t.Errorf("notice taken twice: %+v", n)
	}
	if got := mustConv(t, s, c.ID); got.State != ConvEnded {
		t.Errorf("state on disk %s", got.State)
	}
	if _, err := s.EndConversation(as("w2"), c.ID, ""); code(err) != "conversation_not_active" {
		t.Errorf("ending an ended conversation: %q", code(err))
	}
	want := []string{
		"w1 created →pending review",
		"w2 state pending→active",
		"w1 state active→terminating initiator_ended",
		"w2 state terminating→ended both sides told",
	}
	if ch := convChanges(t, s, c.ID); !slices.Equal(ch, want) {
		t.Errorf("history\n%q\nwant\n%q", ch, want)
	}
	// The pair may talk again.
	mustStart(t, s, "w2", "w1", ConversationRequest{})
}

// TestEnderNeverConsumesPartnerNotice runs both orders and both enders: whoever ends, and
// whoever polls first, each side hears of the end exactly once.
func TestEnderNeverConsumesPartnerNotice(t *testing.T) {
	for _, ender := range []string{"w1", "w2"} {
		for _, firstPoll := range []string{"w1", "w2"} {
			s := newTestStore(t)
			c := mustStart(t, s, "w1", "w2", ConversationRequest{})
			if _, err := s.TakeConversationRequest(as("w2")); err != nil {
				t.Fatal(err)
			}
			if _, err := s.EndConversation(as(ender), c.ID, ""); err != nil {
				t.Fatal(err)
			}
			partner := c.Partner(ender)
			told := map[string]int{ender: 1}
			for _, who := range []string{firstPoll, c.Partner(firstPoll), firstPoll, c.Partner(firstPoll)} {
				if n, _ := s.TakeEndedNotice(as(who)); n != nil {
					told[who]++
				}
			}
			if told[ender] != 1 || told[partner] != 1 {
				t.Errorf("ender %s, first poll %s: told %v, want each once", ender, firstPoll, told)
			}
			want := EndInitiator
			if ender == "w2" {
				want = EndParticipant
			}
			if got := mustConv(t, s, c.ID); got.State != ConvEnded || got.EndReason != want {
				t.Errorf("ender %s: %s %s", ender, got.State, got.EndReason)
			}
		}
	}
}

func TestMaxTurnsTerminates(t *testing.T) {
	s := newTestStore(t)
	c := mustStart(t, s, "w1", "w2", ConversationRequest{MaxTurns: 3, InitialMessage: "1"})
	if _, err := s.TakeConversationRequest(as("w2")); err != nil {
		t.Fatal(err)
	}
	if r := send(t, s, "w2", "w1", "2"); r.Terminated || r.Conversation.Turns != 2 || r.Conversation.MaxTurns != 3 {
		t.Fatalf("turn 2: %+v", r.Conversation)
	}
	r := send(t, s, "w1", "w2", "3")
	if !r.Terminated || r.Conversation.Turns != 3 || r.Conversation.State != ConvTerminating ||
		r.Conversation.EndReason != EndMaxTurns || r.Conversation.EndedBy != "w1" || !slices.Equal(r.Conversation.Notified, []string{"w1"}) {
		t.Fatalf("turn 3: terminated=%v %+v", r.Terminated, r.Conversation)
	}
	// The message that reached the limit was delivered.
	if m := mailbox(t, s, "w2"); m[len(m)-1].Content != "3" {
		t.Errorf("last message %+v", m[len(m)-1])
	}
	if _, err := s.SendMessage(as("w2"), SendRequest{To: "w1", Content: "4"}); code(err) != "conversation_required_for_ai_to_ai" {
		t.Errorf("turn 4: %q", code(err))
	}
	if n, _ := s.TakeEndedNotice(as("w1")); n != nil {
		t.Errorf("the sender of the last turn took a notice")
	}
	if n, _ := s.TakeEndedNotice(as("w2")); n == nil || n.State != ConvEnded || n.EndReason != EndMaxTurns {
		t.Errorf("partner's notice %+v", n)
	}
	if ch := convChanges(t, s, c.ID); !slices.Contains(ch, "w1 state active→terminating max_turns") {
		t.Errorf("history %q", ch)
	}
}

func TestPendingConversationExpires(t *testing.T) {
	s, clk := clockedStore(t)
	c := mustStart(t, s, "w1", "w2", ConversationRequest{InitialMessage: "hello?"})
	clk.Advance(299 * time.Second)
	if got := mustConv(t, s, c.ID); got.State != ConvPending {
		t.Fatalf("after 299s: %s", got.State)
	}
	if w, _ := s.DetectWork("w2"); w.ConversationRequests != 1 {
		t.Errorf("pending request is not chat work for the participant: %+v", w)
	}
	clk.Advance(time.Second)
	// Work detection evaluates the timeout without writing.
	if w, _ := s.DetectWork("w2"); w.ConversationRequests != 0 {
		t.Errorf("expired request still counts: %+v", w)
	}
	if w, _ := s.DetectWork("w1"); w.Notices != 1 {
		t.Errorf("initiator's expiry notice is not counted: %+v", w)
	}
	if raw, _ := s.readConversation(c.ID); raw.State != ConvPending {
		t.Errorf("DetectWork wrote the conversation: %s", raw.State)
	}
	// A read applies it and writes it, dated at the deadline, by the system.
	got := mustConv(t, s, c.ID)
	deadline := c.CreatedAt.Add(300 * time.Second)
	if got.State != ConvExpired || got.EndReason != EndTimeout || got.EndedAt == nil || !got.EndedAt.Equal(deadline) || got.EndedBy != "" {
		t.Fatalf("after 300s: %+v", got)
	}
	if raw, _ := s.readConversation(c.ID); raw.State != ConvExpired || raw.Version != 2 {
		t.Errorf("on disk: %s v%d", raw.State, raw.Version)
	}
	evs := mustEvents(t, s, c.ID)
	if e := evs[len(evs)-1]; e.Actor != SystemSender || e.Via != viaTimeout || e.From != ConvPending || e.To != ConvExpired {
		t.Errorf("timeout event %+v", e)
	}
	// Nobody picks up an expired request; the initiator is told once, the participant never.
	if r, _ := s.TakeConversationRequest(as("w2")); r != nil {
		t.Errorf("expired request picked up")
	}
	if n, _ := s.TakeExpiredNotice(as("w2")); n != nil {
		t.Errorf("participant told of the expiry")
	}
	n, err := s.TakeExpiredNotice(as("w1"))
	if err != nil || n == nil || n.ID != c.ID || !n.WasNotified("w1") {
		t.Fatalf("initiator's expiry notice = %+v, %v", n, err)
	}
	if n, _ := s.TakeExpiredNotice(as("w1")); n != nil {
		t.Errorf("expiry told twice")
	}
	// The initiator can no longer send in it, and may start again.
	if _, err := s.SendMessage(as("w1"), SendRequest{To: "w2", Content: "x"}); code(err) != "conversation_required_for_ai_to_ai" {
		t.Errorf("send in an expired conversation: %q", code(err))
	}
	mustStart(t, s, "w1", "w2", ConversationRequest{})
}

func TestActiveConversationTimesOut(t *testing.T) {
	s, clk := clockedStore(t)
	c := mustStart(t, s, "w1", "w2", ConversationRequest{})
	clk.Advance(200 * time.Second) // pending time does not count against the active timeout
	if _, err := s.TakeConversationRequest(as("w2")); err != nil {
		t.Fatal(err)
	}
	clk.Advance(500 * time.Second)
	send(t, s, "w2", "w1", "still here") // a message restarts the silence
	clk.Advance(599 * time.Second)
	if got := mustConv(t, s, c.ID); got.State != ConvActive {
		t.Fatalf("599s after the last message: %s", got.State)
	}
	clk.Advance(time.Second)
	// The timeout holds for a sender too: the send is refused, and the conversation is
	// terminating on disk.
	if _, err := s.SendMessage(as("w1"), SendRequest{To: "w2", Content: "late"}); code(err) != "conversation_required_for_ai_to_ai" {
		t.Fatalf("send after the active timeout: %q", code(err))
	}
	got, _ := s.readConversation(c.ID)
	if got.State != ConvTerminating || got.EndReason != EndTimeout || got.EndedBy != "" || len(got.Notified) != 0 {
		t.Fatalf("after the timeout: %+v", got)
	}
	// Nobody ended it, so both sides take the notice.
	for _, who := range []string{"w2", "w1"} {
		if n, _ := s.TakeEndedNotice(as(who)); n == nil {
			t.Errorf("%s was not told of the timeout", who)
		}
	}
	if got := mustConv(t, s, c.ID); got.State != ConvEnded {
		t.Errorf("after both notices: %s", got.State)
	}
}

func TestRefreshConversations(t *testing.T) {
	s, clk := clockedStore(t)
	mustStart(t, s, "w1", "w2", ConversationRequest{})
	c2 := mustStart(t, s, "mgr", "w1", ConversationRequest{})
	if _, err := s.TakeConversationRequest(as("w1")); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	n, err := s.RefreshConversations()
	if err != nil || n != 2 {
		t.Fatalf("RefreshConversations = %d, %v; want 2", n, err)
	}
	if raw, _ := s.readConversation(c2.ID); raw.State != ConvTerminating {
		t.Errorf("active conversation after refresh: %s", raw.State)
	}
	if n, _ := s.RefreshConversations(); n != 0 {
		t.Errorf("second refresh changed %d", n)
	}
}

func TestTimeoutSettingsAndEnvironment(t *testing.T) {
	s, clk := clockedStore(t)
	setSettings(t, s, func(st *Settings) {
		st.ConversationPendingTimeoutSeconds = 30
		st.ConversationActiveTimeoutSeconds = 40
	})
	if p, a, err := s.ConversationTimeouts(); err != nil || p != 30*time.Second || a != 40*time.Second {
		t.Fatalf("settings: %v %v %v", p, a, err)
	}
	t.Setenv(EnvPendingTimeout, "5")
	t.Setenv(EnvActiveTimeout, "7")
	if p, a, err := s.ConversationTimeouts(); err != nil || p != 5*time.Second || a != 7*time.Second {
		t.Fatalf("environment: %v %v %v", p, a, err)
	}
	c := mustStart(t, s, "w1", "w2", ConversationRequest{})
	clk.Advance(5 * time.Second)
	if got := mustConv(t, s, c.ID); got.State != ConvExpired {
		t.Errorf("with %s=5, after 5s: %s", EnvPendingTimeout, got.State)
	}
	t.Setenv(EnvActiveTimeout, "soon")
	if _, err := s.Conversation(c.ID); code(err) != "invalid_setting" || !strings.Contains(err.Error(), EnvActiveTimeout) {
		t.Errorf("malformed variable: %v", err)
	}
	t.Setenv(EnvActiveTimeout, "")
	t.Setenv(EnvPendingTimeout, "")
	setSettings(t, s, func(st *Settings) { *st = Settings{} })
	if p, a, _ := s.ConversationTimeouts(); p != 300*time.Second || a != 600*time.Second {
		t.Errorf("defaults: %v %v", p, a)
	}
}

func TestEndConversationRefusals(t *testing.T) {
	s := newTestStore(t)
	if _, err := s.EndConversation(as("w1"), "", ""); code(err) != "no_active_conversation" {
		t.Errorf("nothing to end: %q", code(err))
	}
	c := mustStart(t, s, "w1", "w2", ConversationRequest{})
	if _, err := s.EndConversation(as("mgr"), c.ID, ""); code(err) != "not_conversation_participant" {
		t.Errorf("outsider: %q", code(err))
	}
	if _, err := s.EndConversation(as("w1"), "cnv_nope", ""); code(err) != "conversation_not_found" {
		t.Errorf("unknown: %q", code(err))
	}
	if _, err := s.EndConversation(as("w1"), "cnv_../../x", ""); code(err) != "invalid_id" {
		t.Errorf("path-like: %q", code(err))
	}
	if _, err := s.EndConversation(as("w1"), c.ID, strings.Repeat("x", 4001)); code(err) != "content_too_long" {
		t.Errorf("long final message: %q", code(err))
	}
	// Two live conversations: the id is needed. Active ones go before pending ones.
	c2 := mustStart(t, s, "mgr", "w1", ConversationRequest{})
	if _, err := s.EndConversation(as("w1"), "", ""); code(err) != "conversation_id_required" ||
		!strings.Contains(err.(*Error).Hint, c.ID) || !strings.Contains(err.(*Error).Hint, c2.ID) {
		t.Errorf("ambiguous: %v", err)
	}
	if _, err := s.TakeConversationRequest(as("w1")); err != nil { // c2 becomes active
		t.Fatal(err)
	}
	got, err := s.EndConversation(as("w1"), "", "")
	if err != nil || got.ID != c2.ID || got.EndReason != EndParticipant {
		t.Fatalf("default end picked %+v, %v; want the active %s", got, err, c2.ID)
	}
	// A participant may decline a pending request by ending it.
	got, err = s.EndConversation(as("w2"), "", "")
	if err != nil || got.ID != c.ID || got.EndReason != EndParticipant || got.EndedBy != "w2" {
		t.Fatalf("decline: %+v, %v", got, err)
	}
	if _, err := s.EndConversation(as("w1"), c.ID, ""); code(err) != "conversation_not_active" {
		t.Errorf("ending a terminating conversation: %q", code(err))
	}
}

func TestConversationMessages(t *testing.T) {
	s := newTestStore(t)
	send(t, s, "owner", "w1", "before")
	c := mustStart(t, s, "w1", "w2", ConversationRequest{InitialMessage: "c1"})
	if _, err := s.TakeConversationRequest(as("w2")); err != nil {
		t.Fatal(err)
	}
	send(t, s, "owner", "w1", "aside")
	send(t, s, "w2", "w1", "c2")
	send(t, s, "w1", "w2", "c3")
	for _, tc := range []struct {
		agent     string
		limit     int
		want      []string
		truncated bool
	}{
		{"w1", 0, []string{"c1", "c2", "c3"}, false},
		{"w2", 0, []string{"c1", "c2", "c3"}, false},
		{"w1", 2, []string{"c2", "c3"}, true},
	} {
		conv, page, err := s.ConversationMessages(tc.agent, c.ID, tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range page.Messages {
			got = append(got, m.Content)
		}
		if conv.ID != c.ID || !slices.Equal(got, tc.want) || page.Truncated != tc.truncated {
			t.Errorf("%s limit %d: %v truncated=%v", tc.agent, tc.limit, got, page.Truncated)
		}
	}
	if _, _, err := s.ConversationMessages("mgr", c.ID, 0); code(err) != "not_conversation_participant" {
		t.Errorf("outsider: %q", code(err))
	}
	if _, _, err := s.ConversationMessages("w1", "cnv_nope", 0); code(err) != "conversation_not_found" {
		t.Errorf("unknown: %q", code(err))
	}
}

func TestConversationsFilter(t *testing.T) {
	s := newTestStore(t)
	tk := mustTask(t, s, NewTask{Title: "t"})
	a := mustStart(t, s, "w1", "w2", ConversationRequest{TaskID: tk.ID})
	b := mustStart(t, s, "mgr", "w1", ConversationRequest{})
	if _, err := s.TakeConversationRequest(as("w1")); err != nil {
		t.Fatal(err)
	}
	ids := func(f ConversationFilter) []string {
		list, err := s.Conversations(f)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range list {
			out = append(out, c.ID)
		}
		return out
	}
	for _, tc := range []struct {
		f    ConversationFilter
		want []string
	}{
		{ConversationFilter{}, []string{a.ID, b.ID}},
		{ConversationFilter{AgentID: "w1"}, []string{a.ID, b.ID}},
		{ConversationFilter{AgentID: "w2"}, []string{a.ID}},
		{ConversationFilter{AgentID: "owner"}, nil},
		{ConversationFilter{TaskID: tk.ID}, []string{a.ID}},
		{ConversationFilter{States: []string{ConvActive}}, []string{b.ID}},
		{ConversationFilter{States: []string{ConvPending, ConvActive}, AgentID: "mgr"}, []string{b.ID}},
	} {
		if got := ids(tc.f); !slices.Equal(got, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.f, got, tc.want)
		}
	}
}

func TestChatWorkDetection(t *testing.T) {
	s := newTestStore(t)
	check := func(agent string, want Work) {
		t.Helper()
		got, err := s.DetectWork(agent)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: %+v\nwant %+v", agent, got, want)
		}
	}
	check("w1", Work{})
	if _, err := s.CreateDelegation(as("w1"), DelegationRequest{TargetAgentID: "w2", Purpose: "ask"}); err != nil {
		t.Fatal(err)
	}
	check("w1", Work{Chat: true, PendingDelegations: 1})
	// The delegation alone opens a chat session.
	r, err := s.Authenticate(AuthRequest{AgentID: "w1", Passkey: "w1-passkey", PID: os.Getpid()})
	if err != nil || r.Session.Purpose != PurposeChat {
		t.Fatalf("authenticate with a pending delegation: %+v, %v", r, err)
	}
	check("w1", Work{PendingDelegations: 1, LiveChat: true})
	if _, err := s.TakeDelegation(as("w1")); err != nil {
		t.Fatal(err)
	}
	c := mustStart(t, s, "w1", "w2", ConversationRequest{})
	check("w2", Work{Chat: true, ConversationRequests: 1})
	r2, err := s.Authenticate(AuthRequest{AgentID: "w2", Passkey: "w2-passkey", Purpose: PurposeChat, PID: os.Getpid()})
	if err != nil {
		t.Fatalf("authenticate for a conversation request: %v", err)
	}
	if _, err := s.TakeConversationRequest(as("w2")); err != nil {
		t.Fatal(err)
	}
	send(t, s, "w1", "w2", "hi")
	check("w2", Work{Unread: 1, LiveChat: true})
	if _, err := s.EndConversation(as("w1"), c.ID, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.EndSession(r2.Session.ID, "logout"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TakeUnread("w2"); err != nil {
		t.Fatal(err)
	}
	check("w2", Work{Chat: true, Notices: 1})
	check("w1", Work{LiveChat: true})
	if _, err := s.TakeEndedNotice(as("w2")); err != nil {
		t.Fatal(err)
	}
	check("w2", Work{})
	if _, err := s.Authenticate(AuthRequest{AgentID: "w2", Passkey: "w2-passkey", Purpose: PurposeChat, PID: os.Getpid()}); code(err) != "no_work" {
		t.Errorf("chat purpose with no chat work: %q", code(err))
	}
}

func TestDoctorChecksConversations(t *testing.T) {
	s := newTestStore(t)
	c := mustStart(t, s, "w1", "w2", ConversationRequest{})
	if problems, _ := s.Check(); len(problems) != 0 {
		t.Fatalf("clean store: %v", problems)
	}
	dir := s.path("conversations")
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(dir+"/"+name, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A corrupt file, a file breaking the rules, a second live conversation of a pair,
	// and a stray file.
	write("cnv_broken.json", "{\n  \"id\": \"cnv_broken\",\n  \"state\": \"pending\"\n  \"turns\": 1\n}\n")
	bad := *c
	bad.ID, bad.State, bad.InitiatorID, bad.ParticipantID, bad.MaxTurns = "cnv_bad", "chatting", "ghost", "ghost", 99
	bad.Notified, bad.TaskID = []string{"mgr"}, "tsk_missing"
	data, _ := engine.EncodeJSON(&bad)
	write("cnv_bad.json", string(data))
	dup := *c
	dup.ID = "cnv_dup"
	dup.InitiatorID, dup.ParticipantID = "w2", "w1"
	data, _ = engine.EncodeJSON(&dup)
	write("cnv_dup.json", string(data))
	ended := *c
	ended.ID, ended.State = "cnv_ended", ConvEnded
	data, _ = engine.EncodeJSON(&ended)
	write("cnv_ended.json", string(data))
	write("notes.txt", "hello")
	problems, err := s.Check()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.String())
	}
	for _, want := range []string{
		".ai-pm/conversations/cnv_broken.json:4: invalid JSON",
		`.ai-pm/conversations/cnv_bad.json:7: invalid state "chatting"`,
		`.ai-pm/conversations/cnv_bad.json:4: initiator_id "ghost" does not exist`,
		`.ai-pm/conversations/cnv_bad.json:5: participant_id "ghost" does not exist`,
		".ai-pm/conversations/cnv_bad.json:5: conversation of ghost with itself",
		".ai-pm/conversations/cnv_bad.json:8: max_turns 99 outside 2..40",
		`.ai-pm/conversations/cnv_bad.json:17: notified agent "mgr" is not part of the conversation`,
		`.ai-pm/conversations/cnv_bad.json:10: task "tsk_missing" does not exist`,
		".ai-pm/conversations/cnv_dup.json:7: second live conversation between w1 and w2",
		".ai-pm/conversations/cnv_ended.json:7: ended without ended_at and end_reason",
		".ai-pm/conversations/notes.txt:1: unexpected file",
	} {
		if !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, want) }) {
			t.Errorf("missing problem %q", want)
		}
	}
	if len(got) != 11 {
		t.Errorf("%d problems:\n%s", len(got), strings.Join(got, "\n"))
	}
	// A broken file is skipped by readers, and refused by a write naming path and line.
	if list, err := s.Conversations(ConversationFilter{AgentID: "w1", States: []string{ConvPending}}); err != nil || len(list) != 2 { // c and cnv_dup
		t.Errorf("readers with a broken file: %d, %v", len(list), err)
	}
	if _, err := s.EndConversation(as("w1"), "cnv_broken", ""); code(err) != "other: .ai-pm/conversations/cnv_broken.json:4: invalid JSON: invalid character '\"' after object key:value pair" {
		t.Errorf("ending a broken conversation: %s", code(err))
	}
}

// A listing by agent and state is told apart on the index keys, whichever constraint
// narrows it: an agent's ended conversations, and other agents' live ones, are left out.
func TestConversationListingByAgentAndState(t *testing.T) {
	s := newTestStore(t)
	for range 4 {
		c := mustStart(t, s, "w1", "w2", ConversationRequest{Purpose: "old"})
		if _, err := s.EndConversation(as("w1"), c.ID, ""); err != nil {
			t.Fatal(err)
		}
	}
	mine := mustStart(t, s, "w1", "w2", ConversationRequest{Purpose: "now"})
	other := mustStart(t, s, "w2", "mgr", ConversationRequest{Purpose: "theirs"})
	o := reopen(t, s) // finished ones from the index file, the live ones held
	for _, f := range []ConversationFilter{
		{AgentID: "w1", States: []string{ConvPending}},
		{AgentID: "w1", States: []string{ConvPending, ConvActive}},
	} {
		list, err := o.Conversations(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 1 || list[0].ID != mine.ID {
			var ids []string
			for _, c := range list {
				ids = append(ids, c.ID+" "+c.State)
			}
			t.Errorf("%+v: %v, want only %s (not %s)", f, ids, mine.ID, other.ID)
		}
	}
	if busy, err := o.ChatBusy("mgr"); err != nil || !busy {
		t.Errorf("mgr's chat busy = %v, %v; want busy", busy, err)
	}
	if _, err := s.EndConversation(as("w1"), mine.ID, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TakeEndedNotice(as("w2")); err != nil {
		t.Fatal(err)
	}
	if busy, err := o.ChatBusy("w1"); err != nil || busy {
		t.Errorf("w1's chat busy after its last conversation ended = %v, %v; want not", busy, err)
	}
}
