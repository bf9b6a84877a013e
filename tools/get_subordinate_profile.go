package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
)

type subordinateProfile struct {
	agentView
	MaxParallelTasks int    `json:"max_parallel_tasks"`
	AIType           string `json:"ai_type,omitempty"`
	Model            string `json:"model,omitempty"`
	SystemPrompt     string `json:"system_prompt,omitempty"`
}

func getSubordinateProfileTool() *tool {
	return &tool{
		perm: ManagerOnly,
		def: mcp.NewTool("get_subordinate_profile", opts(readOnly(),
			mcp.WithDescription("The profile of one of your direct subordinates."),
			mcp.WithString("agent_id", mcp.Required(), mcp.Description("A direct subordinate")),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			id, err := c.reqString("agent_id")
			if err != nil {
				return nil, err
			}
			a, err := c.srv.store.Agent(id)
			if err != nil {
				return nil, err
			}
			if a.ParentID != c.agent.ID {
				return nil, &toolError{Code: "unauthorized", Message: "agent " + id + " is not a subordinate of " + c.agent.ID,
					Hint: "call list_subordinates"}
			}
			return subordinateProfile{agentView: viewAgent(a), MaxParallelTasks: a.MaxParallel(), AIType: a.AIType, Model: a.Model,
				SystemPrompt: a.SystemPrompt}, nil
		},
	}
}
