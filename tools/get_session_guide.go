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

const guideText = "You may hold two sessions at once, in two processes: a task session and a chat session. " +
	"They are the same you and share responsibility. " +
	"The task session does all task work: it reads its task, decomposes it, executes or (as a manager) dispatches it, and reports completion; it never messages anyone directly — to talk to another agent it calls delegate_to_chat_session. " +
	"The chat session talks with humans and other agents: it reads and answers messages, holds conversations, and processes delegations; it never changes tasks directly — it passes agreements to the task session with notify_task_session. " +
	"Chat tools are refused in a task session (chat_session_required) and task tools in a chat session (task_session_required)."

func getSessionGuideTool() *tool {
	return &tool{
		perm: Authenticated,
		def: mcp.NewTool("get_session_guide", opts(readOnly(),
			mcp.WithDescription("What a task session and a chat session may each do."),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			return sessionGuideResult{Success: true, SessionPurpose: c.session.Purpose, AgentName: c.agent.Name,
				Hierarchy: c.agent.Hierarchy, Guide: guideText}, nil
		},
	}
}
