package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
)

type profileResult struct {
	agentView
	MaxParallelTasks int    `json:"max_parallel_tasks"`
	AIType           string `json:"ai_type,omitempty"`
	SystemPrompt     string `json:"system_prompt,omitempty"`
	SessionPurpose   string `json:"session_purpose"`
}

func getMyProfileTool() *tool {
	return &tool{
		perm: Authenticated,
		def: mcp.NewTool("get_my_profile", opts(readOnly(),
			mcp.WithDescription("Your own agent record."),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			a := c.agent
			return profileResult{agentView: viewAgent(a), MaxParallelTasks: a.MaxParallel(), AIType: a.AIType,
				SystemPrompt: a.SystemPrompt, SessionPurpose: c.session.Purpose}, nil
		},
	}
}
