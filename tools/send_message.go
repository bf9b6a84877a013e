package tools

import (
	"context"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/mcp"
)

type sendResult struct {
	Success           bool   `json:"success"`
	MessageID         string `json:"message_id"`
	TargetAgentID     string `json:"target_agent_id"`
	ConversationID    any    `json:"conversation_id"` // null outside a conversation (seed 002)
	CurrentTurns      int    `json:"current_turns,omitempty"`
	MaxTurns          int    `json:"max_turns,omitempty"`
	ConversationState string `json:"conversation_state,omitempty"`
	Instruction       string `json:"instruction"`
}

func sendMessageTool() *tool {
	return &tool{
		perm: ChatOnly,
		def: mcp.NewTool("send_message", opts(writes(),
			mcp.WithDescription("Send a message to another member of the project (at most 4000 characters). Between two AI agents a conversation is required (start_conversation); its id is attached for you."),
			mcp.WithString("target_agent_id", mcp.Required(), mcp.Description("The receiver")),
			mcp.WithString("content", mcp.Required(), mcp.Description("The text")),
			mcp.WithString("related_task_id", mcp.Description("A task the message is about")),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			to, err := c.reqString("target_agent_id")
			if err != nil {
				return nil, err
			}
			return c.send(to)
		},
	}
}

// send delivers the call's content (and related_task_id) to an agent.
func (c *call) send(to string) (any, error) {
	// An empty or missing content is the store's empty_content, like a blank one.
	content, err := c.optString("content")
	if err != nil {
		return nil, err
	}
	related, err := c.optString("related_task_id")
	if err != nil {
		return nil, err
	}
	sent, err := c.srv.store.SendMessage(c.actor(), filestore.SendRequest{To: to, Content: content, RelatedTaskID: related})
	if err != nil {
		return nil, err
	}
	out := sendResult{Success: true, MessageID: sent.Message.ID, TargetAgentID: to, Instruction: c.text("send_message.done")}
	if cv := sent.Conversation; cv != nil {
		out.ConversationID, out.CurrentTurns, out.MaxTurns, out.ConversationState = cv.ID, cv.Turns, cv.MaxTurns, cv.State
		if sent.Terminated {
			out.Instruction = c.text("send_message.last", cv.Turns, cv.MaxTurns)
		}
	}
	return out, nil
}
