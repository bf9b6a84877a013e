package tools

import (
	"context"
	"time"

	"github.com/aipm/aipm/filestore"
)

// chatAction is the chat session's get_next_action answer (SPEC §6.3, seeds 002 and 003).
type chatAction struct {
	Action         string `json:"action"`
	State          string `json:"state"`
	Instruction    string `json:"instruction"`
	Reason         string `json:"reason,omitempty"`
	ConversationID string `json:"conversation_id,omitempty"`
	FromAgentID    string `json:"from_agent_id,omitempty"`
	FromAgentName  string `json:"from_agent_name,omitempty"`
	TargetAgentID  string `json:"target_agent_id,omitempty"`
	EndedBy        string `json:"ended_by,omitempty"`
	Purpose        string `json:"purpose,omitempty"`
	DelegationID   string `json:"delegation_id,omitempty"`
	TaskID         string `json:"task_id,omitempty"`
	Context        string `json:"context,omitempty"`
	UnreadCount    int    `json:"unread_count,omitempty"`
	// Resumed marks a delegation an earlier chat session of the agent left unfinished;
	// PreviousConversationID is the conversation it was carrying (ended now; its messages
	// are readable with get_conversation_messages).
	Resumed                bool   `json:"resumed,omitempty"`
	PreviousConversationID string `json:"previous_conversation_id,omitempty"`
	// RemainingIdleSeconds is how long the session may stay without messages before it is
	// told to log out.
	RemainingIdleSeconds int `json:"remaining_idle_seconds,omitempty"`

	idleAt time.Time // when a waiting session turns idle
}

// chatNextAction is the chat session's get_next_action, in the order of SPEC §6.3: exit →
// conversation_ended → conversation_request → conversation_expired → process_delegation →
// get_pending_messages; otherwise it waits for a change (a message, a conversation, a
// delegation, the human closing the chat, or a conversation deadline) and finally answers
// wait_for_messages, or logout once the chat has been idle too long. A session with
// nothing to talk about — no unread message, no open conversation or delegation, no chat
// a human holds open — is told to log out at once.
func (c *call) chatNextAction(ctx context.Context, timeout time.Duration) (any, error) {
	st := c.srv.store
	me := c.agent.ID
	idle, err := st.ChatIdleTimeout()
	if err != nil {
		return nil, err
	}
	// While it waits, a message wakes it; a message that arrives otherwise is a notification.
	defer c.srv.waitFor(c.session)()
	prefixes := []string{"agents/" + me + "/chat.jsonl", "conversations/", "delegations/", "runtime/chat/" + me + ".json",
		"runtime/sessions/" + c.session.ID + ".json", "agents/" + me + "/agent.json", "project.json"}
	return c.longPoll(ctx, timeout, prefixes, func(wakeAt *time.Time) (any, bool, error) {
		n, final, err := c.chatStep(idle)
		if err != nil || final {
			return n, true, err
		}
		next, err := st.NextConversationDeadline(me)
		if err != nil {
			return nil, true, err
		}
		*wakeAt = n.idleAt
		if !next.IsZero() && next.Before(n.idleAt) {
			*wakeAt = next
		}
		return n, false, nil
	})
}

// testHookAfterClosedCheck, when set by a test, runs between the first look at whether the
// chat was closed and the rest of the evaluation.
var testHookAfterClosedCheck func()

// closedAction tells a chat session that its human closed the chat.
func (c *call) closedAction() *chatAction {
	return &chatAction{Action: "exit", State: "session_terminating", Reason: "user_closed_chat",
		Instruction: c.text("chat.closed")}
}

// chatStep is one evaluation; final is false when the honest answer is to wait.
func (c *call) chatStep(idle time.Duration) (*chatAction, bool, error) {
	st := c.srv.store
	me, actor := c.agent.ID, c.actor()
	se, err := st.Session(c.tok)
	if err != nil {
		return nil, true, err
	}
	closed, err := st.ChatClosed(me, se.CreatedAt)
	if err != nil {
		return nil, true, err
	}
	if closed || se.State == filestore.SessionTerminating {
		return c.closedAction(), true, nil
	}
	if testHookAfterClosedCheck != nil {
		testHookAfterClosedCheck()
	}
	if cv, err := st.TakeEndedNotice(actor); err != nil || cv != nil {
		if err != nil {
			return nil, true, err
		}
		return c.endedAction(cv, me), true, nil
	}
	if cv, err := st.TakeConversationRequest(actor); err != nil || cv != nil {
		if err != nil {
			return nil, true, err
		}
		name := cv.InitiatorID
		if a, err := st.Agent(cv.InitiatorID); err == nil && a.Name != "" {
			name = a.Name
		}
		return &chatAction{Action: "conversation_request", State: "conversation_active", ConversationID: cv.ID, FromAgentID: cv.InitiatorID,
			FromAgentName: name, Purpose: cv.Purpose, TaskID: cv.TaskID,
			Instruction: c.text("chat.conversation_request", name, orNone(c.lang(), cv.Purpose), cv.MaxTurns)}, true, nil
	}
	if cv, err := st.TakeExpiredNotice(actor); err != nil || cv != nil {
		if err != nil {
			return nil, true, err
		}
		return c.expiredAction(cv), true, nil
	}
	if d, prev, err := st.ResumeDelegation(actor, se); err != nil || d != nil {
		if err != nil {
			return nil, true, err
		}
		ins := c.text("chat.delegation_resumed", d.ID)
		if prev != "" {
			ins += c.text("chat.delegation_resumed.conversation", prev)
		}
		return &chatAction{Action: "process_delegation", State: "process_delegation", DelegationID: d.ID, TargetAgentID: d.TargetAgentID,
			Purpose: d.Purpose, Context: d.Context, TaskID: d.TaskID, Resumed: true, PreviousConversationID: prev,
			Instruction: ins + c.text("chat.process_delegation", d.TargetAgentID, d.Purpose, d.TargetAgentID, d.ID)}, true, nil
	}
	if d, err := st.TakeDelegation(actor); err != nil || d != nil {
		if err != nil {
			return nil, true, err
		}
		return &chatAction{Action: "process_delegation", State: "process_delegation", DelegationID: d.ID, TargetAgentID: d.TargetAgentID,
			Purpose: d.Purpose, Context: d.Context, TaskID: d.TaskID,
			Instruction: c.text("chat.process_delegation", d.TargetAgentID, d.Purpose, d.TargetAgentID, d.ID)}, true, nil
	}
	n, err := st.UnreadCount(me)
	if err != nil {
		return nil, true, err
	}
	if n > 0 {
		// The message may be the turn that just ended a conversation: the sender wrote the
		// message and the conversation's end under one lock, which TakeEndedNotice waits
		// for, so asking again keeps conversation_ended first (SPEC §6.3).
		if cv, err := st.TakeEndedNotice(actor); err != nil || cv != nil {
			if err != nil {
				return nil, true, err
			}
			return c.endedAction(cv, me), true, nil
		}
		return &chatAction{Action: "get_pending_messages", State: "chat_session", UnreadCount: n,
			Instruction: c.text("chat.pending_messages")}, true, nil
	}
	last := se.CreatedAt
	if recent, err := st.RecentMessages(me, 1); err != nil {
		return nil, true, err
	} else if len(recent) == 1 && recent[0].CreatedAt.After(last) {
		last = recent[0].CreatedAt
	}
	// A session in the middle of a conversation or a delegation is not idle, however long
	// its partner takes: the conversation's own timeouts bound that wait.
	busy, err := st.ChatBusy(me)
	if err != nil {
		return nil, true, err
	}
	if busy {
		last = st.Now()
	}
	// With nothing open and no human holding the chat open, there is nothing to wait for:
	// the session ends now rather than after the idle timeout, and the coordinator starts
	// it again when a message arrives.
	if !busy {
		cs, err := st.Chat(me)
		if err != nil {
			return nil, true, err
		}
		if !cs.Open && cs.ClosedAt != nil && !cs.ClosedAt.Before(se.CreatedAt) {
			// The human closed the chat since the check above: the same answer that check
			// gives, whichever of the two reads saw the close.
			return c.closedAction(), true, nil
		}
		if !cs.Open {
			// The partner may have ended the last conversation (or it expired) since the
			// notices were looked at above: the end is told before the session leaves.
			if cv, err := st.TakeEndedNotice(actor); err != nil || cv != nil {
				if err != nil {
					return nil, true, err
				}
				return c.endedAction(cv, me), true, nil
			}
			if cv, err := st.TakeExpiredNotice(actor); err != nil || cv != nil {
				if err != nil {
					return nil, true, err
				}
				return c.expiredAction(cv), true, nil
			}
			return &chatAction{Action: "logout", State: "chat_idle", Reason: "nothing_to_talk_about",
				Instruction: c.text("chat.idle")}, true, nil
		}
	}
	left := idle - st.Now().Sub(last)
	if left <= 0 {
		return &chatAction{Action: "logout", State: "chat_timeout", Reason: "session_timeout",
			Instruction: c.text("chat.timeout", idle)}, true, nil
	}
	return &chatAction{Action: "wait_for_messages", State: "chat_waiting", RemainingIdleSeconds: int(left.Seconds()), idleAt: last.Add(idle),
		Instruction: c.text("chat.wait")}, false, nil
}

// expiredAction tells the initiator that its conversation request lapsed. A request
// ended as a duplicate (a merge of two clones found a second live conversation for the
// pair and kept the other one) did not lapse: the reason says so, and the instruction
// says to ask again once the pair's other conversation has ended.
func (c *call) expiredAction(cv *filestore.Conversation) *chatAction {
	a := &chatAction{Action: "conversation_expired", State: "conversation_expired", ConversationID: cv.ID, TargetAgentID: cv.ParticipantID,
		Purpose: cv.Purpose, TaskID: cv.TaskID, Instruction: c.text("chat.conversation_expired", cv.ParticipantID, cv.ID)}
	if cv.EndReason == filestore.EndDuplicate {
		a.Reason = cv.EndReason
		a.Instruction = c.text("chat.conversation_duplicate", cv.ID, cv.ParticipantID)
		return a
	}
	// Name the delegation it served, so the session knows what to retry or report.
	if d := c.delegationOf(cv); d != nil {
		a.DelegationID = d.ID
		if !d.Finished() {
			a.Instruction = c.text("chat.conversation_expired.delegation", cv.ParticipantID, cv.ID, d.ID, cv.ParticipantID, d.ID, d.ID)
		}
	}
	return a
}

// delegationOf is the delegation of the caller's that conversation cv served, or nil: the
// one the conversation names, or one that names the conversation (a conversation written
// before it named its delegation).
func (c *call) delegationOf(cv *filestore.Conversation) *filestore.Delegation {
	st := c.srv.store
	if cv.DelegationID != "" {
		if d, err := st.Delegation(cv.DelegationID); err == nil && d.AgentID == c.agent.ID {
			return d
		}
	}
	ds, err := st.Delegations(filestore.DelegationFilter{AgentID: c.agent.ID})
	if err != nil {
		return nil
	}
	for _, d := range ds {
		if d.ConversationID == cv.ID {
			return d
		}
	}
	return nil
}

func (c *call) endedAction(cv *filestore.Conversation, me string) *chatAction {
	endedBy := cv.EndedBy
	if endedBy == "" {
		endedBy = "system"
	}
	a := &chatAction{Action: "conversation_ended", State: "conversation_ended", ConversationID: cv.ID, EndedBy: endedBy, Reason: cv.EndReason,
		TaskID: cv.TaskID, Instruction: c.text("chat.conversation_ended", cv.ID, cv.Partner(me), cv.EndReason)}
	// Say which delegation it served, so a session that did not start it knows.
	if ds, err := c.srv.store.Delegations(filestore.DelegationFilter{AgentID: me}); err == nil {
		for _, d := range ds {
			if d.ConversationID == cv.ID {
				a.DelegationID = d.ID
				a.Instruction += c.text("chat.conversation_ended.delegation", d.ID, d.Status)
			}
		}
	}
	return a
}
