package tools

import (
	"context"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/mcp"
)

type startConversationResult struct {
	Success        bool   `json:"success"`
	ConversationID string `json:"conversation_id"`
	Status         string `json:"status"`
	TargetAgentID  string `json:"target_agent_id"`
	MaxTurns       int    `json:"max_turns"`
	MessageID      string `json:"message_id,omitempty"`
	DelegationID   string `json:"delegation_id,omitempty"`
	TaskID         string `json:"task_id,omitempty"`
	Instruction    string `json:"instruction"`
}

func startConversationTool() *tool {
	return &tool{
		perm: ChatOnly,
		def: mcp.NewTool("start_conversation", opts(writes(),
			mcp.WithDescription("Ask another AI agent of the project for a conversation (pending until its chat session accepts). Needed before AI-to-AI send_message."),
			mcp.WithString("target_agent_id", mcp.Required(), mcp.Description("An AI agent of the project")),
			mcp.WithString("purpose", mcp.Description("What the conversation is for; the partner sees it")),
			mcp.WithString("initial_message", mcp.Description("A first message, sent with the request")),
			mcp.WithInteger("max_turns", mcp.Min(filestore.MinMaxTurns), mcp.Max(filestore.MaxMaxTurns), mcp.Description("Messages allowed in both directions (default 20)")),
			mcp.WithString("delegation_id", mcp.Description("The delegation this conversation carries out (default: your oldest one in progress for this agent)")),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			var r filestore.ConversationRequest
			var err error
			if r.Target, err = c.reqString("target_agent_id"); err != nil {
				return nil, err
			}
			if r.Purpose, err = c.optString("purpose"); err != nil {
				return nil, err
			}
			if r.InitialMessage, err = c.optString("initial_message"); err != nil {
				return nil, err
			}
			if r.MaxTurns, err = c.optInt("max_turns", 0); err != nil {
				return nil, err
			}
			if r.DelegationID, err = c.optString("delegation_id"); err != nil {
				return nil, err
			}
			st, err := c.srv.store.StartConversation(c.actor(), r)
			if err != nil {
				return nil, err
			}
			cv := st.Conversation
			out := startConversationResult{Success: true, ConversationID: cv.ID, Status: cv.State, TargetAgentID: cv.ParticipantID,
				MaxTurns: cv.MaxTurns, TaskID: cv.TaskID,
				Instruction: c.text("start_conversation.done", cv.ParticipantID)}
			if st.Message != nil {
				out.MessageID = st.Message.ID
			}
			if st.Delegation != nil {
				out.DelegationID = st.Delegation.ID
			}
			return out, nil
		},
	}
}
