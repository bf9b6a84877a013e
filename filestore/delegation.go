package filestore

import (
	"errors"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/aipm/aipm/filestore/internal/engine"
	"github.com/aipm/aipm/filestore/msg"
)

// Delegation statuses (seed 003): pending → processing → completed | failed.
const (
	DelegationPending    = "pending"
	DelegationProcessing = "processing"
	DelegationCompleted  = "completed"
	DelegationFailed     = "failed"
)

// DelegationStatuses lists the delegation statuses in lifecycle order.
var DelegationStatuses = []string{DelegationPending, DelegationProcessing, DelegationCompleted, DelegationFailed}

// Delegation is delegations/<dlg-id>.json: a task session's request that the same agent's
// chat session talk to another agent (seed 003). Task sessions do not converse; they hand
// the intent over and read the result later.
type Delegation struct {
	ID        string `json:"id"`
	ProjectID string `json:"project_id"`
	// AgentID is the delegating agent, whose chat session carries the delegation out.
	AgentID       string `json:"agent_id"`
	TaskID        string `json:"task_id"`
	TargetAgentID string `json:"target_agent_id"`
	Purpose       string `json:"purpose"`
	Context       string `json:"context"`
	Status        string `json:"status"`
	Result        string `json:"result"`
	// ConversationID is the latest conversation started for the delegation.
	ConversationID string `json:"conversation_id"`
	// ChatSessionID is the chat session a processing delegation was last handed to by
	// get_next_action (ResumeDelegation); when that session is gone the delegation is
	// handed to the agent's next chat session.
	ChatSessionID string     `json:"chat_session_id,omitempty"`
	CreatedAt     time.Time  `json:"created_at"`
	ProcessedAt   *time.Time `json:"processed_at"`
	CompletedAt   *time.Time `json:"completed_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
	Version       int        `json:"version"`
}

// Finished reports whether the delegation is completed or failed.
func (d *Delegation) Finished() bool { return dlgStatusFinished(d.Status) }

func (s *Store) delegationPath(id string) string { return s.path("delegations", id+".json") }

// Delegation reads one delegation.
func (s *Store) Delegation(id string) (*Delegation, error) {
	if err := ValidateEntityID(PrefixDelegation, id); err != nil {
		return nil, err
	}
	return s.readDelegation(id)
}

func (s *Store) readDelegation(id string) (*Delegation, error) {
	var d Delegation
	if err := s.readJSON(s.delegationPath(id), &d); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, newErr(ErrNotFound, "delegation_not_found", "list your delegations with get_pending_messages (chat) or get_task_conversations (task)",
				"delegation %s not found", id)
		}
		return nil, err
	}
	d.ID = id // the file name is the identity, whatever the file claims
	return &d, nil
}

// DelegationFilter selects delegations; empty fields match everything.
type DelegationFilter struct {
	AgentID string
	TaskID  string
	Status  string
}

func (f DelegationFilter) match(d *Delegation) bool {
	return (f.AgentID == "" || d.AgentID == f.AgentID) &&
		(f.TaskID == "" || d.TaskID == f.TaskID) &&
		(f.Status == "" || d.Status == f.Status)
}

// Delegations lists the delegations matching f, oldest first. Files that cannot be read
// are skipped; `aipm doctor` reports them.
func (s *Store) Delegations(f DelegationFilter) ([]*Delegation, error) {
	var out []*Delegation
	err := s.dlgs.With(func() {
		var probes []engine.Probe
		if f.AgentID != "" {
			probes = append(probes, engine.Probe{Idx: 0, Keys: []string{f.AgentID}})
		}
		if f.TaskID != "" {
			probes = append(probes, engine.Probe{Idx: 1, Keys: []string{f.TaskID}})
		}
		if f.Status != "" {
			probes = append(probes, engine.Probe{Idx: 2, Keys: []string{f.Status}})
		}
		set, narrowed := engine.Narrowest(s.dlgs, probes...)
		for _, id := range engine.Pick(s.dlgs, set, narrowed) {
			// Told apart on the index keys (agent, task, status) before it is read.
			if k := s.dlgs.KeysOf(id); k == nil || !f.match(&Delegation{AgentID: k[0], TaskID: k[1], Status: k[2]}) {
				continue
			}
			if d := s.dlgs.Get(id); d != nil && f.match(d) {
				c := *d
				out = append(out, &c)
			}
		}
	})
	return out, err
}

// PendingDelegations lists the agent's delegations its chat session has not taken yet,
// oldest first (get_pending_messages shows them).
func (s *Store) PendingDelegations(agentID string) ([]*Delegation, error) {
	if err := ValidateAgentID(agentID); err != nil {
		return nil, err
	}
	return s.Delegations(DelegationFilter{AgentID: agentID, Status: DelegationPending})
}

// DelegationRequest is a delegation to create; the delegating agent is the actor.
type DelegationRequest struct {
	// TaskID is the task of the delegating task session ("" if none).
	TaskID        string
	TargetAgentID string
	// Purpose says what to achieve with the target; Context adds what the chat session
	// needs to know. Each is bounded by the message limit, since both end up in messages.
	Purpose string
	Context string
}

// CreateDelegation records a pending delegation from the actor's task session to its own
// chat session (delegate_to_chat_session). The target must be another agent (AI or human)
// of the project: cannot_delegate_to_self, agent_not_found, target_agent_not_in_project.
// A pending delegation is chat work for the actor, so the coordinator starts its chat
// session.
func (s *Store) CreateDelegation(actor Actor, r DelegationRequest) (*Delegation, error) {
	if err := ValidateAgentID(actor.ID); err != nil {
		return nil, err
	}
	if err := ValidateAgentID(r.TargetAgentID); err != nil {
		return nil, err
	}
	if r.TaskID != "" {
		if err := ValidateEntityID(PrefixTask, r.TaskID); err != nil {
			return nil, err
		}
	}
	if strings.TrimSpace(r.Purpose) == "" {
		return nil, newErr(ErrInvalid, "invalid_argument", "say what the chat session should achieve with "+r.TargetAgentID, "purpose is empty")
	}
	if err := s.checkLength("purpose", r.Purpose); err != nil {
		return nil, err
	}
	if err := s.checkLength("context", r.Context); err != nil {
		return nil, err
	}
	if actor.ID == r.TargetAgentID {
		return nil, newErr(ErrInvalid, "cannot_delegate_to_self", "name the agent your chat session should talk to",
			"agent %s cannot delegate a conversation with itself", actor.ID)
	}
	var d *Delegation
	err := s.locked(func() error {
		a, err := s.Member(actor.ID)
		if err != nil {
			return err
		}
		if a.Type != AgentAI {
			return newErr(ErrInvalid, "invalid_argument", "humans message agents directly (`aipm chat send`)",
				"agent %s is human and has no chat session to delegate to", actor.ID)
		}
		if _, err := s.target(r.TargetAgentID); err != nil {
			return err
		}
		if r.TaskID != "" {
			if _, err := s.Task(r.TaskID); err != nil {
				return err
			}
		}
		p, err := s.ProjectView()
		if err != nil {
			return err
		}
		now := s.Now()
		d = &Delegation{ID: NewID(PrefixDelegation, now), ProjectID: p.ID, AgentID: actor.ID, TaskID: r.TaskID,
			TargetAgentID: r.TargetAgentID, Purpose: r.Purpose, Context: r.Context, Status: DelegationPending, CreatedAt: now}
		return s.saveDelegationLocked(actor, d, Event{Change: "created", To: DelegationPending, Reason: r.TargetAgentID})
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// TakeDelegation moves the actor's oldest pending delegation to processing and returns it
// (get_next_action → process_delegation); nil when there is none.
func (s *Store) TakeDelegation(actor Actor) (*Delegation, error) {
	if err := ValidateAgentID(actor.ID); err != nil {
		return nil, err
	}
	var out *Delegation
	err := s.locked(func() error {
		list, err := s.Delegations(DelegationFilter{AgentID: actor.ID, Status: DelegationPending})
		if err != nil || len(list) == 0 {
			return err
		}
		out = list[0]
		return s.processLocked(actor, out)
	})
	return out, err
}

// ResumeDelegation hands the agent's chat session se a delegation an earlier chat session
// of the agent left processing (it exited, crashed or was paused mid-way): the delegation
// belongs to the task session's agent, not to one chat process. The conversation it was
// carrying, if still open, is ended first (its partner is told), so the new session starts
// afresh; prev names it. nil when there is none.
func (s *Store) ResumeDelegation(actor Actor, se *Session) (d *Delegation, prev string, err error) {
	if err := ValidateAgentID(actor.ID); err != nil {
		return nil, "", err
	}
	err = s.locked(func() error {
		list, err := s.Delegations(DelegationFilter{AgentID: actor.ID, Status: DelegationProcessing})
		if err != nil {
			return err
		}
		i := slices.IndexFunc(list, func(d *Delegation) bool {
			return d.ChatSessionID != se.ID && d.ProcessedAt != nil && d.ProcessedAt.Before(se.CreatedAt)
		})
		if i < 0 {
			return nil
		}
		d = list[i]
		// The conversations it was carrying: the one it names, and one that names it but
		// was not linked yet (the session died between the two writes).
		live, err := s.conversationsLocked(ConversationFilter{AgentID: actor.ID, States: []string{ConvPending, ConvActive}})
		if err != nil {
			return err
		}
		for _, c := range live {
			if c.ID != d.ConversationID && c.DelegationID != d.ID {
				continue
			}
			if prev == "" || c.ID == d.ConversationID {
				prev = c.ID
			}
			now := s.Now()
			ev := Event{Change: "state", From: c.State, To: ConvTerminating, Reason: EndSessionExpired}
			c.State, c.EndedAt, c.EndedBy, c.EndReason = ConvTerminating, &now, actor.ID, EndSessionExpired
			c.notify(actor.ID)
			if err := s.saveConversationLocked(actor, c, ev); err != nil {
				return err
			}
		}
		if prev == "" {
			prev = d.ConversationID
		}
		d.ChatSessionID = se.ID
		return s.saveDelegationLocked(actor, d, Event{Change: "handed_over", To: se.ID, Reason: "its chat session ended before it finished"})
	})
	return d, prev, err
}

// processLocked moves a pending delegation to processing.
func (s *Store) processLocked(actor Actor, d *Delegation) error {
	now := s.Now()
	d.Status, d.ProcessedAt = DelegationProcessing, &now
	return s.saveDelegationLocked(actor, d, Event{Change: "status", From: DelegationPending, To: DelegationProcessing})
}

// CompleteDelegation records the outcome of a delegation (report_delegation_completed):
// status completed (the default) or failed, with a result. Only the delegating agent may
// (not_delegation_owner), and only once: a delegation already completed or failed is
// delegation_already_finished. Seed 003's lifecycle is pending → processing →
// completed | failed: a delegation still pending — listed by get_pending_messages but
// never taken up by get_next_action or a conversation — is delegation_not_processing.
func (s *Store) CompleteDelegation(actor Actor, id, status, result string) (*Delegation, error) {
	if err := ValidateAgentID(actor.ID); err != nil {
		return nil, err
	}
	if err := ValidateEntityID(PrefixDelegation, id); err != nil {
		return nil, err
	}
	if status == "" {
		status = DelegationCompleted
	}
	if status != DelegationCompleted && status != DelegationFailed {
		return nil, newErr(ErrInvalid, "invalid_argument", "use completed or failed", "invalid delegation outcome %q", clip(status))
	}
	if err := s.checkLength("result", result); err != nil {
		return nil, err
	}
	var d *Delegation
	err := s.locked(func() error {
		var err error
		if d, err = s.Delegation(id); err != nil {
			return err
		}
		if d.AgentID != actor.ID {
			return newErr(ErrUnauthorized, "not_delegation_owner", "only "+d.AgentID+", who delegated it, reports its outcome",
				"delegation %s belongs to %s, not %s", d.ID, d.AgentID, actor.ID)
		}
		if d.Finished() {
			return newErr(ErrConflict, "delegation_already_finished", "nothing to do; call get_next_action for what is next",
				"delegation %s is already %s", d.ID, d.Status)
		}
		if d.Status != DelegationProcessing {
			return newErr(ErrConflict, "delegation_not_processing",
				"take it up first: get_next_action hands you your oldest pending delegation (process_delegation), start_conversation with delegation_id starts it; then report its outcome",
				"delegation %s is %s: only a delegation in processing can be completed or failed", d.ID, d.Status)
		}
		now := s.Now()
		d.Status, d.Result, d.CompletedAt = status, result, &now
		return s.saveDelegationLocked(actor, d, Event{Change: "status", From: DelegationProcessing, To: status})
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// delegationFor finds the delegation a conversation from agent to target serves: the
// named one (which must be the agent's own and unfinished), else the oldest processing one
// of the agent for that target not yet linked to a conversation. nil when none applies.
func (s *Store) delegationFor(agentID, target, id string) (*Delegation, error) {
	if id != "" {
		d, err := s.Delegation(id)
		if err != nil {
			return nil, err
		}
		if d.AgentID != agentID {
			return nil, newErr(ErrUnauthorized, "not_delegation_owner", "name one of your own delegations, or omit delegation_id",
				"delegation %s belongs to %s, not %s", d.ID, d.AgentID, agentID)
		}
		if d.Finished() {
			return nil, newErr(ErrConflict, "delegation_already_finished", "start the conversation without delegation_id",
				"delegation %s is already %s", d.ID, d.Status)
		}
		return d, nil
	}
	list, err := s.Delegations(DelegationFilter{AgentID: agentID, Status: DelegationProcessing})
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(list, func(d *Delegation) bool { return d.TargetAgentID == target && d.ConversationID == "" })
	if i < 0 {
		return nil, nil
	}
	return list[i], nil
}

// linkDelegationLocked records the conversation started for a delegation; a pending one is
// being processed from now on.
func (s *Store) linkDelegationLocked(actor Actor, d *Delegation, conversationID string) error {
	if d.Status == DelegationPending {
		if err := s.processLocked(actor, d); err != nil {
			return err
		}
	}
	d.ConversationID = conversationID
	return s.saveDelegationLocked(actor, d, Event{Change: "conversation", To: conversationID})
}

// saveDelegationLocked stamps, versions and writes a delegation and records ev. The caller
// holds the lock.
func (s *Store) saveDelegationLocked(actor Actor, d *Delegation, ev Event) error {
	now := s.Now()
	d.UpdatedAt = now
	d.Version++
	c := *d
	if err := engine.WriteEntity(s.dlgs, d.ID, &c); err != nil {
		return err
	}
	ev.At, ev.Actor, ev.Via, ev.Entity, ev.ID = now, actor.ID, actor.Via, "delegation", d.ID
	if ev.Change == "conversation" {
		ev.ConversationID = ev.To
	}
	return s.appendEvent(ev)
}

// Unreachable is an agent that will not answer, and why: Reason is EndAgentInactive or
// EndAgentCannotStart; Detail, for the latter, what failed.
type Unreachable struct {
	AgentID, Reason, Detail string
}

// talkActor is who ends the talks of an agent that will not answer.
var talkActor = Actor{ID: SystemSender, Via: ViaCoordinator}

// EndTalksWith ends at once what waits on agents that will not answer, instead of letting
// it wait out its timeouts: each unfinished delegation that targets one of them fails, its
// result saying why (in the project's language), and each of their pending or active
// conversations ends with the reason as its end_reason — the other side is told
// (conversation_ended), the unreachable side is not waited for. It returns the
// delegations and conversations it ended. Nothing is written when none applies.
func (s *Store) EndTalksWith(gone []Unreachable) (dlgs, convs []string, err error) {
	if len(gone) == 0 {
		return nil, nil, nil
	}
	by := map[string]Unreachable{}
	for _, u := range gone {
		if err := ValidateAgentID(u.AgentID); err != nil {
			return nil, nil, err
		}
		if u.Reason != EndAgentInactive && u.Reason != EndAgentCannotStart {
			return nil, nil, newErr(ErrInvalid, "invalid_argument", "use agent_inactive or agent_cannot_start", "invalid reason %q", clip(u.Reason))
		}
		by[u.AgentID] = u
	}
	find := func() ([]*Delegation, []*Conversation, error) {
		var ds []*Delegation
		for _, st := range []string{DelegationPending, DelegationProcessing} {
			list, err := s.Delegations(DelegationFilter{Status: st})
			if err != nil {
				return nil, nil, err
			}
			for _, d := range list {
				if _, ok := by[d.TargetAgentID]; ok {
					ds = append(ds, d)
				}
			}
		}
		k, err := s.convClock()
		if err != nil {
			return nil, nil, err
		}
		open, _, err := s.openConversations(k)
		if err != nil {
			return nil, nil, err
		}
		var cs []*Conversation
		for _, c := range open {
			_, a := by[c.InitiatorID]
			_, b := by[c.ParticipantID]
			if c.Live() && (a || b) {
				cs = append(cs, c)
			}
		}
		return ds, cs, nil
	}
	if ds, cs, err := find(); err != nil || len(ds)+len(cs) == 0 {
		return nil, nil, err
	}
	lang := s.ProjectLanguage()
	err = s.locked(func() error {
		ds, _, err := find()
		if err != nil {
			return err
		}
		for _, d := range ds {
			u := by[d.TargetAgentID]
			now := s.Now()
			from := d.Status
			why := msg.Text(lang, "talk.agent_inactive", u.AgentID)
			if u.Reason == EndAgentCannotStart {
				why = msg.Text(lang, "talk.agent_cannot_start", u.AgentID, u.Detail)
			}
			d.Status, d.Result, d.CompletedAt = DelegationFailed, why, &now
			if err := s.saveDelegationLocked(talkActor, d, Event{Change: "status", From: from, To: DelegationFailed, Reason: u.Reason}); err != nil {
				return err
			}
			dlgs = append(dlgs, d.ID)
		}
		// Read again under the lock: a due timeout is written first, by conversationsLocked.
		for _, st := range []string{ConvPending, ConvActive} {
			list, err := s.conversationsLocked(ConversationFilter{States: []string{st}})
			if err != nil {
				return err
			}
			for _, c := range list {
				u, ok := by[c.InitiatorID]
				if !ok {
					if u, ok = by[c.ParticipantID]; !ok {
						continue
					}
				}
				now := s.Now()
				ev := Event{Change: "state", From: c.State, To: ConvTerminating, Reason: u.Reason}
				c.State, c.EndedAt, c.EndedBy, c.EndReason = ConvTerminating, &now, SystemSender, u.Reason
				c.notify(u.AgentID) // it will not read the notice
				if err := s.saveConversationLocked(talkActor, c, ev); err != nil {
					return err
				}
				convs = append(convs, c.ID)
			}
		}
		return nil
	})
	return dlgs, convs, err
}
