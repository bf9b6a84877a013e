package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
)

func respondChatTool() *tool {
	return &tool{
		perm: ChatOnly,
		def: mcp.NewTool("respond_chat", opts(writes(),
			mcp.WithDescription("Reply to the sender of the oldest message you have not answered yet (or to target_agent_id)."),
			mcp.WithString("content", mcp.Required(), mcp.Description("The reply")),
			mcp.WithString("target_agent_id", mcp.Description("Whom to answer (default: the oldest unanswered sender)")),
			mcp.WithString("related_task_id", mcp.Description("A task the reply is about")),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			to, err := c.optString("target_agent_id")
			if err != nil {
				return nil, err
			}
			if to == "" {
				if to, err = c.srv.store.UnansweredSender(c.agent.ID); err != nil {
					return nil, err
				}
				if to == "" {
					return nil, &toolError{Code: "no_pending_message", Message: "there is no message waiting for an answer",
						Hint: "name the receiver with target_agent_id, or use send_message"}
				}
			}
			return c.send(to)
		},
	}
}
