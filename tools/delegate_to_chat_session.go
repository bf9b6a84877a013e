package tools

import (
	"context"
	"time"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/mcp"
)

type delegateResult struct {
	Success      bool   `json:"success"`
	DelegationID string `json:"delegation_id"`
	Status       string `json:"status"`
	// Result is the chat session's report, once the delegation is finished within
	// timeout_seconds.
	Result      string `json:"result,omitempty"`
	Message     string `json:"message"`
	Instruction string `json:"instruction"`
}

func delegateToChatSessionTool() *tool {
	return &tool{
		perm: TaskOnly,
		def: mcp.NewTool("delegate_to_chat_session", opts(writes(),
			mcp.WithDescription("Task sessions do not talk: hand a conversation with another agent to your own chat session, which carries it out and reports the result (see get_task_conversations)."),
			mcp.WithString("target_agent_id", mcp.Required(), mcp.Description("Whom to talk to")),
			mcp.WithString("purpose", mcp.Required(), mcp.Description("What to say or find out")),
			mcp.WithString("context", mcp.Description("What your chat session needs to know")),
			// Not in the seed: a step that needs the answer waits for it in this call instead
			// of a get_next_action that would only say to wait (one model turn fewer).
			mcp.WithInteger("timeout_seconds", mcp.Min(0), mcp.Max(maxWaitSeconds),
				mcp.Description("Wait up to this many seconds for the result, when your step needs it (default 0: answer at once)")),
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
			n, err := c.optInt("timeout_seconds", 0)
			if err != nil {
				return nil, err
			}
			if n < 0 {
				return nil, badArg("timeout_seconds", "must be 0 or more (got %d)", n)
			}
			r.TaskID = c.session.TaskID
			st := c.srv.store
			d, err := st.CreateDelegation(c.actor(), r)
			if err != nil {
				return nil, err
			}
			if n > 0 {
				// The delegation is created whatever happens to the wait: an interrupt or the
				// timeout ends it with the delegation as it stands.
				_, err := c.longPoll(ctx, time.Duration(min(n, maxWaitSeconds))*time.Second, []string{"delegations/" + d.ID + ".json"},
					func(*time.Time) (any, bool, error) {
						now, err := st.Delegation(d.ID)
						if err != nil {
							return nil, true, err
						}
						d = now
						return nil, d.Finished(), nil
					})
				if err != nil && ctx.Err() == nil {
					return nil, err
				}
			}
			if d.Finished() {
				return delegateResult{Success: true, DelegationID: d.ID, Status: d.Status, Result: d.Result,
					Message:     c.text("delegate_to_chat_session.finished", d.Status),
					Instruction: c.text("delegate_to_chat_session.go_on")}, nil
			}
			return delegateResult{Success: true, DelegationID: d.ID, Status: d.Status,
				Message:     c.text("delegate_to_chat_session.message"),
				Instruction: c.text("delegate_to_chat_session.done")}, nil
		},
	}
}
