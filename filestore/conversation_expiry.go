package filestore

import (
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/aipm/aipm/filestore/internal/engine"
)

// EnvSessionGrace overrides the project's conversation_session_grace_seconds.
const EnvSessionGrace = "CONVERSATION_SESSION_GRACE_SECONDS"

// SessionGrace is how long a side of an active conversation may be without a live chat
// session before the conversation ends with session_expired: EnvSessionGrace, else the
// project setting, else 60 s — well under the active timeout, and long enough for the
// coordinator to start a new chat session for the side first.
func (s *Store) SessionGrace() (time.Duration, error) {
	p, err := s.ProjectView()
	if err != nil {
		return 0, err
	}
	d := seconds(p.Settings.ConversationSessionGraceSeconds, 60)
	if v := os.Getenv(EnvSessionGrace); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return 0, newErr(ErrInvalid, "invalid_setting", "set "+EnvSessionGrace+" to a whole number of seconds, or unset it",
				"%s=%q is not a positive number of seconds", EnvSessionGrace, clip(v))
		}
		d = time.Duration(n) * time.Second
	}
	return d, nil
}

// chatPresence is what the sessions say about agents' chat sessions, read once per pass.
type chatPresence struct {
	s     *Store
	now   time.Time
	grace time.Duration
	byID  map[string][]*Session
	// chats are every agent's chat sessions, listed once per pass (nil until asked).
	chats map[string][]*Session
	// orphans are agents with a chat session whose process is gone but that nobody has
	// ended yet: its end is not dated until someone does.
	orphans map[string]bool
	// machine is this machine's id; leases what the agents' leases say, read once each.
	machine string
	leases  map[string]*Lease
}

func (s *Store) newChatPresence() (*chatPresence, error) {
	grace, err := s.SessionGrace()
	if err != nil {
		return nil, err
	}
	// Without a machine id (none made yet, or a bad AIPM_MACHINE_ID) every agent is
	// judged by this machine's sessions, as before leases.
	machine, err := s.knownMachineID()
	if err != nil {
		machine = ""
	}
	return &chatPresence{s: s, now: s.Now(), grace: grace, byID: map[string][]*Session{}, orphans: map[string]bool{},
		machine: machine, leases: map[string]*Lease{}}, nil
}

// remote returns the lease of an agent bound to another machine: its chat sessions live
// there, so its presence is what the lease says (the sessions here, if any, are not its
// machine's).
func (p *chatPresence) remote(agentID string) (*Lease, bool) {
	if p.machine == "" {
		return nil, false
	}
	l, ok := p.leases[agentID]
	if !ok {
		l, _ = p.s.Lease(agentID) // an unreadable lease is doctor's; presence falls back to sessions
		p.leases[agentID] = l
	}
	return l, l != nil && l.MachineID != p.machine
}

func (p *chatPresence) sessions(agentID string) ([]*Session, error) {
	if ss, ok := p.byID[agentID]; ok {
		return ss, nil
	}
	if p.chats == nil {
		all, err := p.s.Sessions("")
		if err != nil {
			return nil, err
		}
		p.chats = map[string][]*Session{}
		for _, se := range all {
			if se.Purpose == PurposeChat {
				p.chats[se.AgentID] = append(p.chats[se.AgentID], se)
			}
		}
	}
	ss := p.chats[agentID]
	// Ended sessions are not listed; the latest-chat record keeps when the latest one
	// ended, which stands for them all.
	if l := p.s.latestChatRecord(agentID); l.EndedAt != nil {
		ss = append(ss, &Session{AgentID: agentID, Purpose: PurposeChat, State: SessionEnded, EndedAt: l.EndedAt})
	}
	sort.SliceStable(ss, func(i, j int) bool { return ss[i].CreatedAt.Before(ss[j].CreatedAt) })
	p.byID[agentID] = ss
	return ss, nil
}

// until is how far a session covers the agent's presence: now while it is live — or gone
// but not yet ended by anyone, since its end is not known —, else its end.
func (p *chatPresence) until(se *Session) time.Time {
	if se.Live(p.now) {
		return p.now
	}
	if se.State == SessionActive {
		p.orphans[se.AgentID] = true
	}
	if se.State != SessionEnded || se.EndedAt == nil {
		return p.now
	}
	return *se.EndedAt
}

// absent returns when the agent's first absence of a live chat session lasting the grace,
// counted from from, reached the grace (false if there was none): a gap between its chat
// sessions, or since the last one ended. For an agent leased to another machine, its
// lease says.
func (p *chatPresence) absent(agentID string, from time.Time) (time.Time, bool, error) {
	if l, ok := p.remote(agentID); ok {
		// Present while its machine holds the lease and says a chat session is live;
		// else absent since the machine last saw one (the lease's last renewal, or the
		// session's end), so session_expired means that machine really stopped.
		if l.ChatLive && l.Held(p.now) {
			return time.Time{}, false, nil
		}
		t := from
		if l.ChatSeenAt != nil && l.ChatSeenAt.After(t) {
			t = *l.ChatSeenAt
		}
		if p.now.Sub(t) >= p.grace {
			return t.Add(p.grace), true, nil
		}
		return time.Time{}, false, nil
	}
	ss, err := p.sessions(agentID)
	if err != nil {
		return time.Time{}, false, err
	}
	t := from
	for _, se := range ss {
		end := p.until(se)
		if !end.After(t) {
			continue
		}
		if se.CreatedAt.Sub(t) >= p.grace {
			return t.Add(p.grace), true, nil
		}
		t = end
	}
	if p.now.Sub(t) >= p.grace {
		return t.Add(p.grace), true, nil
	}
	return time.Time{}, false, nil
}

// expiry returns when active conversation c ends with session_expired (false if it does
// not): the earlier moment one of its sides has been without a live chat session for the
// grace since the conversation was picked up. Like the timeouts, it is dated at that
// moment, not when someone noticed.
func (p *chatPresence) expiry(c *Conversation) (time.Time, bool, error) {
	if c.State != ConvActive {
		return time.Time{}, false, nil
	}
	from := c.CreatedAt
	if c.ActivatedAt != nil {
		from = *c.ActivatedAt
	}
	var at time.Time
	found := false
	for _, id := range []string{c.InitiatorID, c.ParticipantID} {
		t, ok, err := p.absent(id, from)
		if err != nil {
			return time.Time{}, false, err
		}
		if ok && (!found || t.Before(at)) {
			at, found = t, true
		}
	}
	return at, found, nil
}

// expireAbsentLocked ends, with session_expired, the active conversations of list whose
// side has been gone for the grace, writing each with one history event; list's entries
// are updated in place. The caller holds the lock and read list under it.
func (s *Store) expireAbsentLocked(p *chatPresence, list []*Conversation) (int, error) {
	n := 0
	for _, c := range list {
		at, ok, err := p.expiry(c)
		if err != nil || !ok {
			if err != nil {
				return n, err
			}
			continue
		}
		c.State, c.EndedAt, c.EndReason = ConvTerminating, &at, EndSessionExpired
		ev := Event{Change: "state", From: ConvActive, To: ConvTerminating, Reason: EndSessionExpired}
		if err := s.saveConversationLocked(Actor{ID: SystemSender, Via: viaTimeout}, c, ev); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// ApplyConversationDeadlines applies every due timeout and session expiry now, and ends the
// orphaned chat sessions of the sides of active conversations (so that their absence is
// dated from now rather than never): the proactive half of the rules, for the timers of a
// running `aipm mcp` or `aipm run` (readers apply timeouts lazily anyway). It returns how
// many conversations changed and whether any is still pending or active — a timer then
// looks again soon; with none open it can wait for a conversation file to change. The lock
// is taken only when something is due.
func (s *Store) ApplyConversationDeadlines() (changed int, open bool, err error) {
	k, err := s.convClock()
	if err != nil {
		return 0, false, err
	}
	list, due, err := s.openConversations(k)
	if err != nil {
		return 0, false, err
	}
	p, err := s.newChatPresence()
	if err != nil {
		return 0, false, err
	}
	need := len(due) > 0
	for _, c := range list {
		open = open || c.Live()
		if !need {
			_, expired, err := p.expiry(c)
			if err != nil {
				return 0, open, err
			}
			need = expired
		}
	}
	if !need && len(p.orphans) == 0 {
		return 0, open, nil
	}
	err = s.locked(func() error {
		k, err := s.convClock()
		if err != nil {
			return err
		}
		list, due, err := s.openConversations(k)
		if err != nil {
			return err
		}
		if err := s.persistTimeoutsLocked(due); err != nil {
			return err
		}
		changed = len(due)
		p, err := s.newChatPresence()
		if err != nil {
			return err
		}
		n, err := s.expireAbsentLocked(p, list)
		changed += n
		if err != nil {
			return err
		}
		open = false
		for _, c := range list {
			open = open || c.Live()
		}
		agents := make([]string, 0, len(p.orphans))
		for id := range p.orphans {
			agents = append(agents, id)
		}
		sort.Strings(agents)
		for _, id := range agents {
			if _, err := s.endOrphansLocked(id); err != nil {
				return err
			}
		}
		return nil
	})
	return changed, open, err
}

// openConversations returns the pending and active conversations, with due timeouts
// applied in memory, and separately those whose timeout applied.
func (s *Store) openConversations(k convClock) ([]*Conversation, []timedOut, error) {
	var list []*Conversation
	var due []timedOut
	err := s.convs.With(func() {
		for _, st := range []string{ConvPending, ConvActive} {
			for _, id := range engine.Pick(s.convs, s.convs.Lookup(2, st), true) {
				if cached := s.convs.Get(id); cached != nil {
					c := cloneConv(cached)
					if from := k.advance(c); from != "" {
						due = append(due, timedOut{c, from})
					}
					list = append(list, c)
				}
			}
		}
	})
	return list, due, err
}
