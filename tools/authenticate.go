package tools

import (
	"context"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/mcp"
)

type authenticateResult struct {
	Success          bool      `json:"success"`
	SessionToken     string    `json:"session_token"`
	SessionID        string    `json:"session_id"`
	Purpose          string    `json:"purpose"`
	TaskID           string    `json:"task_id,omitempty"`
	ExpiresIn        int       `json:"expires_in"`
	Agent            agentView `json:"agent"`
	WorkingDirectory string    `json:"working_directory"`
	SystemPrompt     string    `json:"system_prompt,omitempty"`
	Instruction      string    `json:"instruction"`
	// Next is what get_next_action answers now, for a task session: the first step needs
	// no call to ask for it.
	Next *nextAction `json:"next_action,omitempty"`
}

func authenticateTool(s *Server) *tool {
	return &tool{
		perm: Unauthenticated,
		def: mcp.NewTool("authenticate", opts(writes(),
			mcp.WithDescription("Start a session. aipm decides its purpose from your work: a task session when a task of yours is in progress, else a chat session when messages wait. With no work, exit."),
			mcp.WithString("agent_id", mcp.Required(), mcp.Description("Your agent id")),
			mcp.WithString("passkey", mcp.Description("Your passkey; omit it when aipm run started you (it passes a one-time ticket to this server)")),
			mcp.WithString("purpose", mcp.Enum(filestore.PurposeTask, filestore.PurposeChat),
				mcp.Description("Ask for a purpose; honoured only if that purpose has work")),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			return s.authenticate(c)
		},
	}
}

func (s *Server) authenticate(c *call) (any, error) {
	exit := func(err error) error {
		te := asToolError(err)
		te.Extra = map[string]any{"success": false, "action": "exit",
			"instruction": c.text("auth.failed")}
		return te
	}
	agentID, err := c.reqString("agent_id")
	if err != nil {
		return nil, exit(err)
	}
	passkey, err := c.optString("passkey")
	if err != nil {
		return nil, exit(err)
	}
	if passkey == "" {
		// Started by the coordinator: the ticket came through this server's environment,
		// so no secret passes through the agent's prompt or context.
		if s.ticket == "" {
			return nil, exit(&toolError{Code: "invalid_argument", Message: `argument "passkey": is required`,
				Hint: "pass your passkey, or let `aipm run` start you (it passes a one-time spawn ticket to aipm mcp)"})
		}
		passkey = s.ticket
	}
	purpose, err := c.optString("purpose")
	if err != nil {
		return nil, exit(err)
	}
	res, err := s.store.Authenticate(filestore.AuthRequest{AgentID: agentID, Passkey: passkey, Purpose: purpose, PID: s.pid})
	if err != nil {
		return nil, exit(err)
	}
	se := res.Session
	s.mu.Lock()
	s.current = res.Token
	s.owned = append(s.owned, se.ID)
	s.ownedAs[se.ID] = ownedSession{agent: se.AgentID, purpose: se.Purpose, taskID: se.TaskID}
	s.mu.Unlock()
	s.remember(se)
	// The response to a now-authenticated agent carries the envelope's notification field.
	c.session, c.agent, c.tok = se, res.Agent, res.Token
	if c.project, err = s.store.ProjectView(); err != nil {
		return nil, err
	}
	// The visible tool list now depends on the session's purpose. (A process with a spawn
	// ticket tells its client once the answer is made, with what it names: listing.go.)
	if s.ticket == "" {
		s.mcp.SendNotificationToAllClients(mcp.MethodNotificationToolsListChanged, nil)
	}

	instr := c.text("auth.chat_session")
	var next *nextAction
	if se.Purpose == filestore.PurposeTask {
		instr = c.text("auth.task_session", se.TaskID)
		if next = c.followUp(); next == nil {
			instr = c.text("auth.task_session.ask", se.TaskID)
		}
	}
	return authenticateResult{Success: true, SessionToken: res.Token, SessionID: se.ID, Purpose: se.Purpose, TaskID: se.TaskID,
		ExpiresIn: int(se.ExpiresAt.Sub(se.CreatedAt).Seconds()), Agent: viewAgent(res.Agent),
		WorkingDirectory: s.store.Root(), SystemPrompt: res.Agent.SystemPrompt, Instruction: instr, Next: next}, nil
}
