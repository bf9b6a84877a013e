package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
)

type sessionGuideResult struct {
	Success        bool   `json:"success"`
	SessionPurpose string `json:"session_purpose"`
	AgentName      string `json:"agent_name"`
	Hierarchy      string `json:"hierarchy"`
	Guide          string `json:"guide"`
}

func getSessionGuideTool() *tool {
	return &tool{
		perm: Authenticated,
		def: mcp.NewTool("get_session_guide", opts(readOnly(),
			mcp.WithDescription("What a task session and a chat session may each do."),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			return sessionGuideResult{Success: true, SessionPurpose: c.session.Purpose, AgentName: c.agent.Name,
				Hierarchy: c.agent.Hierarchy, Guide: c.text("session_guide")}, nil
		},
	}
}
