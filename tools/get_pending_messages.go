package tools

import (
	"context"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/mcp"
)

// delegationView is a delegation as the chat session sees it (seed 003).
type delegationView struct {
	DelegationID  string `json:"delegation_id"`
	TaskID        string `json:"task_id,omitempty"`
	TargetAgentID string `json:"target_agent_id"`
	Purpose       string `json:"purpose"`
	// Context is null when the delegation was made without one, as in seed 003.
	Context        *string `json:"context"`
	Status         string  `json:"status"`
	ConversationID string  `json:"conversation_id,omitempty"`
	Result         string  `json:"result,omitempty"`
}

func viewDelegation(d *filestore.Delegation) delegationView {
	v := delegationView{DelegationID: d.ID, TaskID: d.TaskID, TargetAgentID: d.TargetAgentID, Purpose: d.Purpose,
		Status: d.Status, ConversationID: d.ConversationID, Result: d.Result}
	if d.Context != "" {
		v.Context = &d.Context
	}
	return v
}

type pendingMessagesResult struct {
	// PendingMessages are the unread messages, oldest first, in the mailbox's line format
	// (seed 001).
	PendingMessages []filestore.Message `json:"pending_messages"`
	Count           int                 `json:"count"`
	// RecentContext is the conversation just before them (both directions).
	RecentContext []filestore.Message `json:"recent_context"`
	// PendingDelegations are the delegations not taken up yet (status pending).
	PendingDelegations []delegationView `json:"pending_delegations"`
	Instruction        string           `json:"instruction"`
}

// contextMessages is how many earlier messages get_pending_messages shows for context.
const contextMessages = 10

func getPendingMessagesTool() *tool {
	return &tool{
		perm: ChatOnly,
		def: mcp.NewTool("get_pending_messages", opts(writes(),
			mcp.WithDescription("Your unread messages (oldest first; marks them read), the messages just before them for context, and the delegations your task session handed you that are not taken up yet."),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			st := c.srv.store
			me := c.agent.ID
			msgs, err := st.TakeUnread(me)
			if err != nil {
				return nil, err
			}
			if err := c.readMessageNotices(); err != nil {
				return nil, err
			}
			recent, err := st.RecentMessages(me, len(msgs)+contextMessages)
			if err != nil {
				return nil, err
			}
			// The context is what came before the unread ones.
			unread := map[string]bool{}
			for _, m := range msgs {
				unread[m.ID] = true
			}
			out := pendingMessagesResult{PendingMessages: nonNil(msgs), Count: len(msgs), RecentContext: []filestore.Message{}, PendingDelegations: []delegationView{}}
			for _, m := range recent {
				if !unread[m.ID] && len(out.RecentContext) < contextMessages {
					out.RecentContext = append(out.RecentContext, m)
				}
			}
			// Only those not taken up yet (seed 003): one being processed is this session's
			// own work in hand, which get_next_action handed over (process_delegation).
			dels, err := st.Delegations(filestore.DelegationFilter{AgentID: me, Status: filestore.DelegationPending})
			if err != nil {
				return nil, err
			}
			for _, d := range dels {
				out.PendingDelegations = append(out.PendingDelegations, viewDelegation(d))
			}
			switch {
			case len(msgs) > 0:
				out.Instruction = c.text("get_pending_messages.some")
			default:
				out.Instruction = c.text("get_pending_messages.none")
			}
			return out, nil
		},
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
