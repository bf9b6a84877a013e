package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
)

type endConversationResult struct {
	Success        bool   `json:"success"`
	ConversationID string `json:"conversation_id"`
	Status         string `json:"status"`
	Reason         string `json:"reason"`
	Instruction    string `json:"instruction"`
}

func endConversationTool() *tool {
	return &tool{
		perm: ChatOnly,
		def: mcp.NewTool("end_conversation", opts(writes(),
			mcp.WithDescription("End a conversation (default: your active one). The partner is told on its next get_next_action."),
			mcp.WithString("conversation_id", mcp.Description("The conversation (default: your active one)")),
			mcp.WithString("final_message", mcp.Description("A last message to send before ending")),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			id, err := c.optString("conversation_id")
			if err != nil {
				return nil, err
			}
			final, err := c.optString("final_message")
			if err != nil {
				return nil, err
			}
			cv, err := c.srv.store.EndConversation(c.actor(), id, final)
			if err != nil {
				return nil, err
			}
			instr := c.text("end_conversation.done", cv.Partner(c.agent.ID))
			if cv.TaskID != "" {
				instr += c.text("end_conversation.delegation")
			}
			return endConversationResult{Success: true, ConversationID: cv.ID, Status: cv.State, Reason: cv.EndReason,
				Instruction: instr + c.text("end_conversation.then")}, nil
		},
	}
}
