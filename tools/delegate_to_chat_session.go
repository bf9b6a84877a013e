package tools

import (
	"context"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/mcp"
)

type delegateResult struct {
	Success      bool   `json:"success"`
	DelegationID string `json:"delegation_id"`
	Status       string `json:"status"`
	Message      string `json:"message"`
	Instruction  string `json:"instruction"`
}

func delegateToChatSessionTool() *tool {
	return &tool{
		perm: TaskOnly,
		def: mcp.NewTool("delegate_to_chat_session", opts(writes(),
			mcp.WithDescription("Task sessions do not talk: hand a conversation with another agent to your own chat session, which carries it out and reports the result (see get_task_conversations)."),
			mcp.WithString("target_agent_id", mcp.Required(), mcp.Description("Whom to talk to")),
			mcp.WithString("purpose", mcp.Required(), mcp.Description("What to say or find out")),
			mcp.WithString("context", mcp.Description("What your chat session needs to know")),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			var r filestore.DelegationRequest
			var err error
			if r.TargetAgentID, err = c.reqString("target_agent_id"); err != nil {
				return nil, err
			}
			if r.Purpose, err = c.reqString("purpose"); err != nil {
				return nil, err
			}
			if r.Context, err = c.optString("context"); err != nil {
				return nil, err
			}
			r.TaskID = c.session.TaskID
			d, err := c.srv.store.CreateDelegation(c.actor(), r)
			if err != nil {
				return nil, err
			}
			return delegateResult{Success: true, DelegationID: d.ID, Status: d.Status,
				Message:     c.text("delegate_to_chat_session.message"),
				Instruction: c.text("delegate_to_chat_session.done")}, nil
		},
	}
}
