package filestore

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aipm/aipm/filestore/internal/engine"
)

// Conversation states (SPEC §4.6): pending → active → terminating → ended, and
// pending → expired.
const (
	ConvPending     = "pending"
	ConvActive      = "active"
	ConvTerminating = "terminating"
	ConvEnded       = "ended"
	ConvExpired     = "expired"
)

// ConversationStates lists the conversation states in lifecycle order.
var ConversationStates = []string{ConvPending, ConvActive, ConvTerminating, ConvEnded, ConvExpired}

// Why a conversation ended (end_reason).
const (
	EndInitiator   = "initiator_ended"
	EndParticipant = "participant_ended"
	EndTimeout     = "timeout" // active and silent too long, or pending and never picked up
	EndMaxTurns    = "max_turns"
	// EndSessionExpired: a side of an active conversation has had no live chat session for
	// the session grace (SessionGrace).
	EndSessionExpired = "session_expired"
	// EndAgentInactive: a side was made inactive (EndTalksWith).
	EndAgentInactive = "agent_inactive"
	// EndAgentCannotStart: a side's command keeps failing to start, and `aipm run` gave
	// up on it (EndTalksWith).
	EndAgentCannotStart = "agent_cannot_start"
)

// Turn limits of a conversation: max_turns defaults to 20 (ten round trips) and is clamped
// to 2..40, as in the original.
const (
	DefaultMaxTurns = 20
	MinMaxTurns     = 2
	MaxMaxTurns     = 40
)

// Environment variables that override the project's conversation timeouts (seed 002), so
// that tests and demos need not wait minutes. Values are whole seconds.
const (
	EnvPendingTimeout = "CONVERSATION_PENDING_TIMEOUT_SECONDS"
	EnvActiveTimeout  = "CONVERSATION_ACTIVE_TIMEOUT_SECONDS"
	// EnvChatIdleTimeout overrides the project's chat_idle_timeout_seconds.
	EnvChatIdleTimeout = "CHAT_IDLE_TIMEOUT_SECONDS"
)

// viaTimeout is the Via of history events for timeouts. Nobody acts: whichever reader
// notices first applies the rule, on behalf of the system.
const viaTimeout = "timeout"

// Conversation is conversations/<cnv-id>.json: an AI↔AI conversation between an initiator
// and a participant (seed 002).
type Conversation struct {
	ID            string `json:"id"`
	ProjectID     string `json:"project_id"`
	InitiatorID   string `json:"initiator_id"`
	ParticipantID string `json:"participant_id"`
	Purpose       string `json:"purpose"`
	State         string `json:"state"`
	MaxTurns      int    `json:"max_turns"`
	// Turns counts the messages exchanged in the conversation, both directions.
	Turns int `json:"turns"`
	// TaskID is the task of the delegation the conversation serves ("" if none).
	TaskID string `json:"task_id"`
	// DelegationID is the delegation the conversation serves ("" if none), written with
	// the conversation itself, so the link holds from the first write on even when the
	// process dies before the delegation names the conversation.
	DelegationID string    `json:"delegation_id,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	// ActivatedAt is when the participant picked the conversation up. With LastMessageAt
	// it dates the last sign of life, from which the active timeout runs.
	ActivatedAt   *time.Time `json:"activated_at"`
	LastMessageAt *time.Time `json:"last_message_at"`
	// EndedAt is when the conversation stopped: the end request, the turn that reached
	// max_turns, or the deadline that passed. The later move terminating → ended is in the
	// history.
	EndedAt   *time.Time `json:"ended_at"`
	EndedBy   string     `json:"ended_by"`
	EndReason string     `json:"end_reason"`
	// Notified holds, sorted, the agents that have been told the conversation ended (or, for
	// the initiator, that it expired).
	Notified  []string  `json:"notified"`
	UpdatedAt time.Time `json:"updated_at"`
	Version   int       `json:"version"`
}

// Includes reports whether the agent is one of the two sides.
func (c *Conversation) Includes(agentID string) bool {
	return agentID != "" && (c.InitiatorID == agentID || c.ParticipantID == agentID)
}

// Partner returns the other side of the conversation for one of its two agents.
func (c *Conversation) Partner(agentID string) string {
	if c.InitiatorID == agentID {
		return c.ParticipantID
	}
	return c.InitiatorID
}

// Live reports whether the conversation is pending or active: the states of which an
// unordered pair of agents may have at most one.
func (c *Conversation) Live() bool { return c.State == ConvPending || c.State == ConvActive }

// WasNotified reports whether the agent has been told of the end or expiry.
func (c *Conversation) WasNotified(agentID string) bool { return slices.Contains(c.Notified, agentID) }

func (c *Conversation) notify(agentID string) {
	if !c.WasNotified(agentID) {
		c.Notified = append(c.Notified, agentID)
		sort.Strings(c.Notified)
	}
}

// needsNotice reports whether the agent still has to be told that the conversation ended
// (terminating, either side) or expired (the initiator only).
func (c *Conversation) needsNotice(agentID string) bool {
	switch c.State {
	case ConvTerminating:
		return c.Includes(agentID) && !c.WasNotified(agentID)
	case ConvExpired:
		return c.InitiatorID == agentID && !c.WasNotified(agentID)
	}
	return false
}

func (c *Conversation) normalize() {
	if c.Notified == nil {
		c.Notified = []string{}
	}
}

// lastSign is when the conversation last showed life: created, picked up, or a message.
func (c *Conversation) lastSign() time.Time {
	t := c.CreatedAt
	for _, p := range []*time.Time{c.ActivatedAt, c.LastMessageAt} {
		if p != nil && p.After(t) {
			t = *p
		}
	}
	return t
}

func (s *Store) conversationPath(id string) string { return s.path("conversations", id+".json") }

// ConversationTimeouts returns the effective timeouts: pending (a conversation nobody
// picked up expires) and active (a silent conversation terminates). The environment
// variables EnvPendingTimeout and EnvActiveTimeout win over the project settings, which
// win over the defaults of 300 and 600 seconds. This is the one place they are read. A
// malformed variable is an error rather than a silent default: a test that sets it
// wants it to hold.
func (s *Store) ConversationTimeouts() (pending, active time.Duration, err error) {
	p, err := s.ProjectView()
	if err != nil {
		return 0, 0, err
	}
	pending = seconds(p.Settings.ConversationPendingTimeoutSeconds, 300)
	active = seconds(p.Settings.ConversationActiveTimeoutSeconds, 600)
	for _, e := range []struct {
		name string
		d    *time.Duration
	}{{EnvPendingTimeout, &pending}, {EnvActiveTimeout, &active}} {
		v := os.Getenv(e.name)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return 0, 0, newErr(ErrInvalid, "invalid_setting", "set "+e.name+" to a whole number of seconds, or unset it",
				"%s=%q is not a positive number of seconds", e.name, clip(v))
		}
		*e.d = time.Duration(n) * time.Second
	}
	return pending, active, nil
}

// ChatIdleTimeout is how long a chat session may go without a message before its
// get_next_action answers logout: EnvChatIdleTimeout, else the project setting, else 600 s.
func (s *Store) ChatIdleTimeout() (time.Duration, error) {
	p, err := s.ProjectView()
	if err != nil {
		return 0, err
	}
	d := seconds(p.Settings.ChatIdleTimeoutSeconds, 600)
	if v := os.Getenv(EnvChatIdleTimeout); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return 0, newErr(ErrInvalid, "invalid_setting", "set "+EnvChatIdleTimeout+" to a whole number of seconds, or unset it",
				"%s=%q is not a positive number of seconds", EnvChatIdleTimeout, clip(v))
		}
		d = time.Duration(n) * time.Second
	}
	return d, nil
}

// NextConversationDeadline is the earliest moment one of the agent's pending or active
// conversations times out (zero if it has none): a long-poll waits no longer than that, so
// a timeout is noticed when it happens even though no file changes.
func (s *Store) NextConversationDeadline(agentID string) (time.Time, error) {
	k, err := s.convClock()
	if err != nil {
		return time.Time{}, err
	}
	cs, err := s.Conversations(ConversationFilter{AgentID: agentID, States: []string{ConvPending, ConvActive}})
	if err != nil {
		return time.Time{}, err
	}
	var next time.Time
	for _, c := range cs {
		d := c.lastSign().Add(k.active)
		if c.State == ConvPending {
			d = c.CreatedAt.Add(k.pending)
		}
		if next.IsZero() || d.Before(next) {
			next = d
		}
	}
	return next, nil
}

// ChatBusy reports whether the agent's chat has something open: a pending or active
// conversation, or a delegation its chat session is processing.
func (s *Store) ChatBusy(agentID string) (bool, error) {
	cs, err := s.Conversations(ConversationFilter{AgentID: agentID, States: []string{ConvPending, ConvActive}})
	if err != nil || len(cs) > 0 {
		return len(cs) > 0, err
	}
	ds, err := s.Delegations(DelegationFilter{AgentID: agentID, Status: DelegationProcessing})
	return len(ds) > 0, err
}

// convClock is the moment and the timeouts against which conversations are evaluated.
type convClock struct {
	now             time.Time
	pending, active time.Duration
}

func (s *Store) convClock() (convClock, error) {
	p, a, err := s.ConversationTimeouts()
	return convClock{now: s.Now(), pending: p, active: a}, err
}

// advance applies a due timeout to c in memory and returns the state it left ("" if none
// was due). The end is dated at the deadline, not at the moment someone noticed, so the
// outcome does not depend on who looked first or when: a reader that only evaluates and a
// writer that persists agree.
func (k convClock) advance(c *Conversation) string {
	switch c.State {
	case ConvPending:
		if deadline := c.CreatedAt.Add(k.pending); !k.now.Before(deadline) {
			c.State, c.EndedAt, c.EndReason = ConvExpired, &deadline, EndTimeout
			return ConvPending
		}
	case ConvActive:
		if deadline := c.lastSign().Add(k.active); !k.now.Before(deadline) {
			c.State, c.EndedAt, c.EndReason = ConvTerminating, &deadline, EndTimeout
			return ConvActive
		}
	}
	return ""
}

// readConversation reads one conversation file as it is, without applying timeouts.
func (s *Store) readConversation(id string) (*Conversation, error) {
	var c Conversation
	if err := s.readJSON(s.conversationPath(id), &c); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, newErr(ErrNotFound, "conversation_not_found", "list your conversations with get_task_conversations, or start one with start_conversation",
				"conversation %s not found", id)
		}
		return nil, err
	}
	c.normalize()
	c.ID = id // the file name is the identity, whatever the file claims
	return &c, nil
}

// ConversationFilter selects conversations; empty fields match everything.
type ConversationFilter struct {
	// AgentID matches conversations with the agent on either side.
	AgentID string
	TaskID  string
	// States matches any of the listed states.
	States []string
}

func (f ConversationFilter) match(c *Conversation) bool {
	return (f.AgentID == "" || c.Includes(f.AgentID)) &&
		(f.TaskID == "" || c.TaskID == f.TaskID) &&
		(len(f.States) == 0 || slices.Contains(f.States, c.State))
}

// timedOut is a conversation whose timeout advance applied in memory, not yet written.
type timedOut struct {
	c    *Conversation
	from string
}

// scanConversations reads the conversations matching f (after applying due timeouts in
// memory), oldest first, and returns separately those whose timeout was applied. Files
// that cannot be read are skipped; `aipm doctor` reports them.
func (s *Store) scanConversations(k convClock, f ConversationFilter) ([]*Conversation, []timedOut, error) {
	var list []*Conversation
	var due []timedOut
	err := s.convs.With(func() {
		var probes []engine.Probe
		if f.AgentID != "" {
			probes = append(probes, engine.Probe{Idx: 0, Keys: []string{f.AgentID}})
		}
		if f.TaskID != "" {
			probes = append(probes, engine.Probe{Idx: 1, Keys: []string{f.TaskID}})
		}
		// The states asked for, and those a timeout may still move into them.
		var states []string
		if len(f.States) > 0 {
			states = append(slices.Clone(f.States), ConvPending, ConvActive)
			probes = append(probes, engine.Probe{Idx: 2, Keys: states})
		}
		set, narrowed := engine.Narrowest(s.convs, probes...)
		for _, id := range engine.Pick(s.convs, set, narrowed) {
			// Told apart on the index keys: a conversation another constraint rules out
			// is not read (initiator, participant, task, state).
			keys := s.convs.KeysOf(id)
			if keys == nil || f.AgentID != "" && keys[0] != f.AgentID && keys[1] != f.AgentID ||
				f.TaskID != "" && keys[2] != f.TaskID || states != nil && !slices.Contains(states, keys[3]) {
				continue
			}
			cached := s.convs.Get(id)
			if cached == nil || !f.match(cached) && !cached.Live() {
				continue // neither matches nor can time out into a match
			}
			c := cloneConv(cached)
			if from := k.advance(c); from != "" {
				due = append(due, timedOut{c, from})
			}
			if f.match(c) {
				list = append(list, c)
			}
		}
	})
	return list, due, err
}

// persistTimeoutsLocked writes conversations whose timeouts applied, each with its history
// event. The caller holds the lock and read them under it.
func (s *Store) persistTimeoutsLocked(due []timedOut) error {
	for _, d := range due {
		ev := Event{Change: "state", From: d.from, To: d.c.State, Reason: EndTimeout}
		if err := s.saveConversationLocked(Actor{ID: SystemSender, Via: viaTimeout}, d.c, ev); err != nil {
			return err
		}
	}
	return nil
}

// conversationsLocked lists conversations under the lock, persisting due timeouts.
func (s *Store) conversationsLocked(f ConversationFilter) ([]*Conversation, error) {
	k, err := s.convClock()
	if err != nil {
		return nil, err
	}
	list, due, err := s.scanConversations(k, f)
	if err != nil {
		return nil, err
	}
	return list, s.persistTimeoutsLocked(due)
}

// conversationLocked reads one conversation under the lock, persisting a due timeout.
func (s *Store) conversationLocked(id string) (*Conversation, error) {
	if err := ValidateEntityID(PrefixConversation, id); err != nil {
		return nil, err
	}
	k, err := s.convClock()
	if err != nil {
		return nil, err
	}
	c, err := s.readConversation(id)
	if err != nil {
		return nil, err
	}
	if from := k.advance(c); from != "" {
		if err := s.persistTimeoutsLocked([]timedOut{{c, from}}); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Conversation reads one conversation. Timeouts are evaluated on every read (SPEC §4.6), so
// they hold with no daemon running: a conversation past its deadline is returned — and
// written — in its new state.
func (s *Store) Conversation(id string) (*Conversation, error) {
	if err := ValidateEntityID(PrefixConversation, id); err != nil {
		return nil, err
	}
	k, err := s.convClock()
	if err != nil {
		return nil, err
	}
	c, err := s.readConversation(id)
	if err != nil || k.advance(c) == "" {
		return c, err
	}
	err = s.locked(func() error {
		c, err = s.conversationLocked(id)
		return err
	})
	return c, err
}

// Conversations lists the conversations matching f, oldest first, with due timeouts
// applied and written. The lock is taken only when a timeout is due.
func (s *Store) Conversations(f ConversationFilter) ([]*Conversation, error) {
	k, err := s.convClock()
	if err != nil {
		return nil, err
	}
	list, due, err := s.scanConversations(k, f)
	if err != nil || len(due) == 0 {
		return list, err
	}
	err = s.locked(func() error {
		list, err = s.conversationsLocked(f)
		return err
	})
	return list, err
}

// RefreshConversations applies every due timeout and session expiry now and returns how
// many conversations changed (see ApplyConversationDeadlines).
func (s *Store) RefreshConversations() (int, error) {
	n, _, err := s.ApplyConversationDeadlines()
	return n, err
}

// saveConversationLocked is the one way a changed conversation reaches the disk: stamp,
// bump the version, write atomically, and record ev in the history (an empty ev.Change
// records nothing: a turn counted is bookkeeping, and the message itself is in the
// mailboxes). The caller holds the lock.
func (s *Store) saveConversationLocked(actor Actor, c *Conversation, ev Event) error {
	now := s.Now()
	c.UpdatedAt = now
	c.Version++
	c.normalize()
	if err := engine.WriteEntity(s.convs, c.ID, cloneConv(c)); err != nil {
		return err
	}
	if ev.Change == "" {
		return nil
	}
	ev.At, ev.Actor, ev.Via, ev.Entity, ev.ID = now, actor.ID, actor.Via, "conversation", c.ID
	return s.appendEvent(ev)
}

// ConversationRequest is a conversation to start; the initiator is the actor.
type ConversationRequest struct {
	Target  string
	Purpose string
	// MaxTurns bounds the messages of the conversation: 0 means DefaultMaxTurns; others
	// are clamped to MinMaxTurns..MaxMaxTurns.
	MaxTurns int
	// InitialMessage, if not empty, is sent as the conversation's first message.
	InitialMessage string
	// TaskID ties the conversation to a task; empty means the task of the delegation it
	// serves, if any.
	TaskID string
	// DelegationID names the delegation the conversation serves. When empty, the oldest
	// delegation of the initiator being processed for this target, not yet linked to a
	// conversation, is used (as the original did).
	DelegationID string
}

// ConversationStart is what StartConversation did.
type ConversationStart struct {
	Conversation *Conversation
	// Message is the initial message (the initiator's copy), nil if none was given.
	Message *Message
	// Delegation is the delegation now linked to the conversation, nil if none.
	Delegation *Delegation
}

// StartConversation opens a pending conversation from the actor (an AI agent) to
// r.Target (seed 002). Checks, in the seed's order: not oneself
// (cannot_conversation_with_self), the target exists (agent_not_found), is an AI agent
// (cannot_start_conversation_with_human: humans chat without conversations) and a member
// (target_agent_not_in_project), and no pending or active conversation exists between the
// two in either direction (conversation_already_active, naming it) — the original checked
// one direction only, so two agents inviting each other got two conversations. The check
// and the creation share the lock, so two racing starts cannot both win.
//
// The conversation inherits the task of the delegation it serves, and the delegation
// records the conversation. The initial message, if any, is sent with the conversation's
// id and counts the first turn.
func (s *Store) StartConversation(actor Actor, r ConversationRequest) (*ConversationStart, error) {
	if err := s.validateStart(actor, r); err != nil {
		return nil, err
	}
	var out *ConversationStart
	err := s.locked(func() error {
		var err error
		out, err = s.startLocked(actor, r)
		return err
	})
	return out, err
}

func (s *Store) validateStart(actor Actor, r ConversationRequest) error {
	if err := ValidateAgentID(actor.ID); err != nil {
		return err
	}
	if err := ValidateAgentID(r.Target); err != nil {
		return err
	}
	if r.TaskID != "" {
		if err := ValidateEntityID(PrefixTask, r.TaskID); err != nil {
			return err
		}
	}
	if r.DelegationID != "" {
		if err := ValidateEntityID(PrefixDelegation, r.DelegationID); err != nil {
			return err
		}
	}
	if err := s.checkLength("purpose", r.Purpose); err != nil {
		return err
	}
	if r.InitialMessage != "" {
		if err := s.checkContent("initial_message", r.InitialMessage); err != nil {
			return err
		}
	}
	if actor.ID == r.Target {
		return newErr(ErrInvalid, "cannot_conversation_with_self", "start the conversation with another AI agent of the project",
			"agent %s cannot start a conversation with itself", actor.ID)
	}
	return nil
}

// checkLength bounds an optional free-text field by the message limit.
func (s *Store) checkLength(field, text string) error {
	p, err := s.ProjectView()
	if err != nil {
		return err
	}
	if n, limit := utf8.RuneCountInString(text), p.Settings.MaxMessageChars(); n > limit {
		return newErr(ErrInvalid, "content_too_long", "shorten it", "%s too long: %d characters (max %d)", field, n, limit)
	}
	return nil
}

func clampTurns(n int) int {
	if n == 0 {
		return DefaultMaxTurns
	}
	return min(max(n, MinMaxTurns), MaxMaxTurns)
}

func (s *Store) startLocked(actor Actor, r ConversationRequest) (*ConversationStart, error) {
	from, err := s.Member(actor.ID)
	if err != nil {
		return nil, err
	}
	if from.Type != AgentAI {
		return nil, newErr(ErrInvalid, "invalid_argument", "humans message agents directly (`aipm chat send`); conversations are between AI agents",
			"agent %s is human and cannot start a conversation", actor.ID)
	}
	to, err := s.Agent(r.Target)
	if err != nil {
		return nil, err
	}
	if to.Type != AgentAI {
		return nil, newErr(ErrInvalid, "cannot_start_conversation_with_human", "message the human directly with send_message; no conversation is needed",
			"agent %s is human: conversations are between AI agents", to.ID)
	}
	if to, err = s.target(r.Target); err != nil {
		return nil, err
	}
	live, err := s.conversationsLocked(ConversationFilter{AgentID: from.ID, States: []string{ConvPending, ConvActive}})
	if err != nil {
		return nil, err
	}
	for _, c := range live {
		if c.Partner(from.ID) == to.ID {
			return nil, newErr(ErrConflict, "conversation_already_active", alreadyActiveHint(c, from.ID),
				"conversation %s between %s and %s already exists (%s)", c.ID, c.InitiatorID, c.ParticipantID, c.State)
		}
	}
	d, err := s.delegationFor(from.ID, to.ID, r.DelegationID)
	if err != nil {
		return nil, err
	}
	taskID := r.TaskID
	if taskID == "" && d != nil {
		taskID = d.TaskID
	}
	if taskID != "" {
		if _, err := s.Task(taskID); err != nil {
			return nil, err
		}
	}
	p, err := s.ProjectView()
	if err != nil {
		return nil, err
	}
	now := s.Now()
	c := &Conversation{ID: NewID(PrefixConversation, now), ProjectID: p.ID, InitiatorID: from.ID, ParticipantID: to.ID,
		Purpose: r.Purpose, State: ConvPending, MaxTurns: clampTurns(r.MaxTurns), TaskID: taskID, CreatedAt: now, Notified: []string{}}
	if d != nil {
		c.DelegationID = d.ID
	}
	var m *Message
	if r.InitialMessage != "" {
		m = &Message{ID: NewID(PrefixMessage, now), SenderID: from.ID, Content: r.InitialMessage, CreatedAt: now, ConversationID: c.ID}
		c.Turns, c.LastMessageAt = 1, &now
	}
	// The conversation first: a crash before the message leaves a conversation without its
	// first message, never a message naming a conversation that does not exist.
	if err := s.saveConversationLocked(actor, c, Event{Change: "created", To: ConvPending, Reason: r.Purpose}); err != nil {
		return nil, err
	}
	if m != nil {
		if err := s.deliverLocked(*m, to.ID); err != nil {
			return nil, err
		}
		m.ReceiverID = to.ID
	}
	if d != nil {
		if err := s.linkDelegationLocked(actor, d, c.ID); err != nil {
			return nil, err
		}
	}
	return &ConversationStart{Conversation: c, Message: m, Delegation: d}, nil
}

func alreadyActiveHint(c *Conversation, agentID string) string {
	switch {
	case c.State == ConvPending && c.ParticipantID == agentID:
		return "the other agent already asked you for this conversation; call get_next_action to accept it"
	case c.State == ConvPending:
		return "send your messages in " + c.ID + "; it becomes active when the other agent picks it up"
	}
	return "continue " + c.ID + " with send_message, or end it with end_conversation first"
}

// routeLocked finds the conversation a message from one agent to another belongs to. Only
// messages between two AI agents need one (seed 002): an active conversation between them,
// or a pending one the sender started; an explicit id must name such a conversation. Other
// messages belong to none. The caller holds the lock, so the turn it then counts is not
// lost to a concurrent sender.
func (s *Store) routeLocked(from, to *Agent, explicit string) (*Conversation, error) {
	if from.Type != AgentAI || to.Type != AgentAI {
		if explicit != "" {
			return nil, newErr(ErrInvalid, "invalid_argument", "send without conversation_id: messages with humans need no conversation",
				"conversations are between AI agents; %s and %s chat without one", from.ID, to.ID)
		}
		return nil, nil
	}
	var candidates []*Conversation
	if explicit != "" {
		c, err := s.conversationLocked(explicit)
		if err != nil {
			return nil, err
		}
		if !c.Includes(from.ID) || c.Partner(from.ID) != to.ID {
			return nil, newErr(ErrUnauthorized, "not_conversation_participant", "send in a conversation between you and "+to.ID+", or omit conversation_id",
				"conversation %s is between %s and %s, not %s and %s", c.ID, c.InitiatorID, c.ParticipantID, from.ID, to.ID)
		}
		candidates = []*Conversation{c}
	} else {
		all, err := s.conversationsLocked(ConversationFilter{AgentID: from.ID})
		if err != nil {
			return nil, err
		}
		for _, c := range all {
			if c.Partner(from.ID) == to.ID {
				candidates = append(candidates, c)
			}
		}
	}
	for _, c := range candidates {
		if c.State == ConvActive || (c.State == ConvPending && c.InitiatorID == from.ID) {
			return c, nil
		}
	}
	hint := fmt.Sprintf("call start_conversation(target_agent_id: %q, initial_message: ...) first", to.ID)
	why := "there is no active conversation between them"
	// The newest conversation of the pair explains best why this one is refused.
	for _, c := range slices.Backward(candidates) {
		switch {
		case c.State == ConvPending:
			hint = "call get_next_action to accept " + c.ID + ", then send"
			why = fmt.Sprintf("conversation %s from %s is still pending", c.ID, c.InitiatorID)
		case c.State == ConvTerminating:
			why = fmt.Sprintf("conversation %s is ending (%s)", c.ID, c.EndReason)
			hint = "it is over; " + hint + " if there is more to say"
		default:
			continue
		}
		break
	}
	e := newErr(ErrConflict, "conversation_required_for_ai_to_ai", hint,
		"AI agents %s and %s need an active conversation to exchange messages: %s", from.ID, to.ID, why)
	e.Fields = map[string]any{"from_agent_id": from.ID, "to_agent_id": to.ID}
	return nil, e
}

// countTurnLocked records a message of the conversation: one more turn and the time of the
// last message. The turn that reaches max_turns ends the conversation (reason max_turns,
// by the sender); the sender hears of it in its send answer and is marked notified, the
// partner through TakeEndedNotice. The caller holds the lock.
func (s *Store) countTurnLocked(actor Actor, c *Conversation, now time.Time) (bool, error) {
	c.Turns++
	c.LastMessageAt = &now
	var ev Event
	ended := c.Turns >= c.MaxTurns && c.Live()
	if ended {
		ev = Event{Change: "state", From: c.State, To: ConvTerminating, Reason: EndMaxTurns}
		c.State, c.EndedAt, c.EndedBy, c.EndReason = ConvTerminating, &now, actor.ID, EndMaxTurns
		c.notify(actor.ID)
	}
	return ended, s.saveConversationLocked(actor, c, ev)
}

// TakeConversationRequest picks up the oldest pending conversation in which the actor is
// the participant and makes it active (get_next_action → conversation_request). It
// returns nil when there is none.
func (s *Store) TakeConversationRequest(actor Actor) (*Conversation, error) {
	return s.takeConversation(actor, []string{ConvPending}, func(c *Conversation) bool { return c.ParticipantID == actor.ID },
		func(c *Conversation, now time.Time) Event {
			c.State, c.ActivatedAt = ConvActive, &now
			return Event{Change: "state", From: ConvPending, To: ConvActive}
		})
}

// TakeEndedNotice returns the oldest terminating conversation the actor has not been told
// about yet, and records that it now has been (get_next_action → conversation_ended). Once
// both sides know, the conversation is ended. An agent that ended a conversation itself
// was told by its own end_conversation or send_message answer, so it never takes — and
// never consumes — the notice meant for its partner (the original's ⚠: whoever polled
// first ended the conversation, and the partner was never told). nil when there is none.
func (s *Store) TakeEndedNotice(actor Actor) (*Conversation, error) {
	return s.takeConversation(actor, []string{ConvTerminating}, func(c *Conversation) bool { return c.needsNotice(actor.ID) },
		func(c *Conversation, now time.Time) Event {
			c.notify(actor.ID)
			if c.WasNotified(c.InitiatorID) && c.WasNotified(c.ParticipantID) {
				c.State = ConvEnded
				return Event{Change: "state", From: ConvTerminating, To: ConvEnded, Reason: "both sides told"}
			}
			return Event{Change: "notified", To: actor.ID}
		})
}

// TakeExpiredNotice returns the oldest conversation the actor started that expired before
// anyone picked it up and that it has not been told about, and records that it now has
// been (get_next_action → conversation_expired). nil when there is none.
func (s *Store) TakeExpiredNotice(actor Actor) (*Conversation, error) {
	return s.takeConversation(actor, []string{ConvExpired}, func(c *Conversation) bool { return c.needsNotice(actor.ID) },
		func(c *Conversation, now time.Time) Event {
			c.notify(actor.ID)
			return Event{Change: "notified", To: actor.ID}
		})
}

// takeConversation applies change to the oldest of the actor's conversations in states that
// pick accepts, under the lock.
func (s *Store) takeConversation(actor Actor, states []string, pick func(*Conversation) bool,
	change func(*Conversation, time.Time) Event) (*Conversation, error) {
	if err := ValidateAgentID(actor.ID); err != nil {
		return nil, err
	}
	var out *Conversation
	err := s.locked(func() error {
		// Active ones too: one whose partner is gone ends here (session_expired), so the
		// actor hears of it at once.
		list, err := s.conversationsLocked(ConversationFilter{AgentID: actor.ID, States: slices.Concat(states, []string{ConvActive})})
		if err != nil {
			return err
		}
		p, err := s.newChatPresence()
		if err != nil {
			return err
		}
		if _, err := s.expireAbsentLocked(p, list); err != nil {
			return err
		}
		for _, c := range list {
			if slices.Contains(states, c.State) && pick(c) {
				ev := change(c, s.Now())
				out = c
				return s.saveConversationLocked(actor, c, ev)
			}
		}
		return nil
	})
	return out, err
}

// EndConversation ends a conversation on the actor's request (end_conversation): it becomes
// terminating with reason initiator_ended or participant_ended, and the actor — told by
// this call's answer — is recorded as notified; the partner learns it from
// TakeEndedNotice. An empty id means the actor's live conversation (active first, else
// pending): no_active_conversation when it has none, conversation_id_required when it has
// several. finalMessage, if not empty, is sent to the partner first, in the conversation.
// Only pending and active conversations can be ended (conversation_not_active).
func (s *Store) EndConversation(actor Actor, id, finalMessage string) (*Conversation, error) {
	if err := ValidateAgentID(actor.ID); err != nil {
		return nil, err
	}
	if id != "" {
		if err := ValidateEntityID(PrefixConversation, id); err != nil {
			return nil, err
		}
	}
	if finalMessage != "" {
		if err := s.checkContent("final_message", finalMessage); err != nil {
			return nil, err
		}
	}
	var out *Conversation
	err := s.locked(func() error {
		c, err := s.endTargetLocked(actor.ID, id)
		if err != nil {
			return err
		}
		if finalMessage != "" {
			if _, err := s.target(c.Partner(actor.ID)); err != nil {
				return err
			}
			now := s.Now()
			m := Message{ID: NewID(PrefixMessage, now), SenderID: actor.ID, Content: finalMessage, CreatedAt: now, ConversationID: c.ID}
			if err := s.deliverLocked(m, c.Partner(actor.ID)); err != nil {
				return err
			}
			c.Turns++
			c.LastMessageAt = &now
		}
		now := s.Now()
		reason := EndParticipant
		if c.InitiatorID == actor.ID {
			reason = EndInitiator
		}
		ev := Event{Change: "state", From: c.State, To: ConvTerminating, Reason: reason}
		c.State, c.EndedAt, c.EndedBy, c.EndReason = ConvTerminating, &now, actor.ID, reason
		c.notify(actor.ID)
		out = c
		return s.saveConversationLocked(actor, c, ev)
	})
	return out, err
}

// endTargetLocked resolves the conversation EndConversation ends.
func (s *Store) endTargetLocked(agentID, id string) (*Conversation, error) {
	if id != "" {
		c, err := s.conversationLocked(id)
		if err != nil {
			return nil, err
		}
		if !c.Includes(agentID) {
			return nil, newErr(ErrUnauthorized, "not_conversation_participant", "end only conversations you are part of",
				"agent %s is not part of conversation %s (between %s and %s)", agentID, c.ID, c.InitiatorID, c.ParticipantID)
		}
		if !c.Live() {
			return nil, newErr(ErrConflict, "conversation_not_active", "nothing to end; call get_next_action for what to do next",
				"conversation %s is not active (state %s, %s)", c.ID, c.State, c.EndReason)
		}
		return c, nil
	}
	live, err := s.conversationsLocked(ConversationFilter{AgentID: agentID, States: []string{ConvActive}})
	if err != nil {
		return nil, err
	}
	if len(live) == 0 {
		if live, err = s.conversationsLocked(ConversationFilter{AgentID: agentID, States: []string{ConvPending}}); err != nil {
			return nil, err
		}
	}
	switch len(live) {
	case 0:
		return nil, newErr(ErrNotFound, "no_active_conversation", "there is nothing to end; call get_next_action for what to do next",
			"agent %s has no active or pending conversation", agentID)
	case 1:
		return live[0], nil
	}
	ids := make([]string, len(live))
	for i, c := range live {
		ids[i] = c.ID
	}
	return nil, newErr(ErrConflict, "conversation_id_required", "pass conversation_id: one of "+strings.Join(ids, ", "),
		"agent %s has %d %s conversations", agentID, len(live), live[0].State)
}

// ConversationMessages returns the conversation and its last messages (limit <= 0 means
// DefaultMessageLimit, capped at MaxMessageLimit), oldest first, from the agent's own
// mailbox, which holds both directions. The agent must be one of its two sides
// (not_conversation_participant). The mailbox is read backward and only as far back as the
// conversation's start.
func (s *Store) ConversationMessages(agentID, conversationID string, limit int) (*Conversation, *MessagePage, error) {
	if err := ValidateAgentID(agentID); err != nil {
		return nil, nil, err
	}
	c, err := s.Conversation(conversationID)
	if err != nil {
		return nil, nil, err
	}
	if !c.Includes(agentID) {
		return nil, nil, newErr(ErrUnauthorized, "not_conversation_participant", "read only conversations you are part of",
			"agent %s is not part of conversation %s (between %s and %s)", agentID, c.ID, c.InitiatorID, c.ParticipantID)
	}
	// A minute of slack: lines merged from another clone need not be in time order.
	floor := c.CreatedAt.Add(-time.Minute)
	page, err := s.lastMessages(agentID, pageLimit(limit), func(m *Message) (bool, bool) {
		return m.ConversationID == c.ID, !m.CreatedAt.Before(floor)
	})
	return c, page, err
}
