package tools

import (
	"context"
	"strings"
	"time"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/mcp"
)

func getNextActionTool() *tool {
	return &tool{
		perm: Authenticated,
		def: mcp.NewTool("get_next_action", opts(writes(),
			mcp.WithDescription("What to do next, with an instruction to follow. Call it after authenticate and after each step. When the only answer is to wait, it waits (up to timeout_seconds) for a relevant change instead of answering at once."),
			mcp.WithInteger("timeout_seconds", mcp.Min(0), mcp.Max(maxWaitSeconds), mcp.Description("Longest wait in seconds (default 30; 0 answers at once)")),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			timeout, err := c.waitSeconds()
			if err != nil {
				return nil, err
			}
			if c.session.Purpose == filestore.PurposeChat {
				return c.chatNextAction(ctx, timeout)
			}
			return c.taskNextAction(ctx, timeout)
		},
	}
}

// taskNextAction decides the task session's next step, long-polling while the honest
// answer is "wait". It wakes on any task change, a new member, a project change, or the
// end of this session.
func (c *call) taskNextAction(ctx context.Context, timeout time.Duration) (any, error) {
	st := c.srv.store
	prefixes := []string{"tasks/", "delegations/", "project.json", "runtime/sessions/" + c.session.ID + ".json"}
	if c.agent.Hierarchy == filestore.HierarchyManager {
		// A new or reactivated subordinate changes a manager's options. (agents/ also holds
		// every mailbox, so a worker does not wake on every message in the project.)
		prefixes = append(prefixes, "agents/")
	}
	return c.longPoll(ctx, timeout, prefixes, func(*time.Time) (any, bool, error) {
		se, err := st.Session(c.tok)
		if err != nil {
			return nil, true, err
		}
		sit, err := loadSituation(st, se, c.agent, c.lang())
		if err != nil {
			return nil, true, err
		}
		d := sit.decide()
		if d.phase != se.Workflow || d.selected != se.Selected || d.baseline != se.Baseline {
			if err := st.SetWorkflow(se.ID, d.phase, d.selected, d.baseline); err != nil {
				return nil, true, err
			}
		}
		if offered := strings.Join(d.next.Options, ","); offered != se.Offered {
			if err := st.SetOffered(se.ID, offered); err != nil {
				return nil, true, err
			}
		}
		waiting := ""
		if d.wait {
			waiting = d.next.Action
		}
		if waiting != se.Waiting {
			if err := st.SetWaiting(se.ID, waiting); err != nil {
				return nil, true, err
			}
		}
		return d.next, !d.wait, nil
	})
}
