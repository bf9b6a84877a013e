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
			mcp.WithDescription("What to do next, with an instruction to follow. Call it when a result carries no next_action, or says to. When the only answer is to wait, it waits (up to timeout_seconds) for a relevant change instead of answering at once."),
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
	prefixes := []string{"tasks/", "delegations/", "project.json", "runtime/sessions/" + c.session.ID + ".json"}
	if c.agent.Hierarchy == filestore.HierarchyManager {
		// A new or reactivated subordinate changes a manager's options. (agents/ also holds
		// every mailbox, so a worker does not wake on every message in the project.)
		prefixes = append(prefixes, "agents/")
	}
	return c.longPoll(ctx, timeout, prefixes, func(*time.Time) (any, bool, error) {
		d, err := c.evaluate(true)
		if err != nil {
			return nil, true, err
		}
		return d.next, !d.wait, nil
	})
}

// evaluate decides the task session's next step once and records the session's workflow
// state. A manager's sub-tasks queued by dispatch_subtasks start here first, once their
// dependencies are done: the one sensible choice, made without a call. waiting says
// whether the answer is get_next_action's own (a wait it answers is recorded for the
// coordinator); the answer folded into another tool's result records no wait.
func (c *call) evaluate(waiting bool) (decision, error) {
	st := c.srv.store
	se, err := st.Session(c.tok)
	if err != nil {
		return decision{}, err
	}
	if c.agent.Hierarchy == filestore.HierarchyManager && se.Queued != "" {
		if se, err = c.startQueued(se); err != nil {
			return decision{}, err
		}
	}
	sit, err := loadSituation(st, c.srv.subtreeOf, se, c.agent, c.lang())
	if err != nil {
		return decision{}, err
	}
	d := sit.decide()
	if d.phase != se.Workflow || d.selected != se.Selected || d.baseline != se.Baseline {
		if err := st.SetWorkflow(se.ID, d.phase, d.selected, d.baseline); err != nil {
			return decision{}, err
		}
	}
	if offered := strings.Join(d.next.Options, ","); offered != se.Offered {
		if err := st.SetOffered(se.ID, offered); err != nil {
			return decision{}, err
		}
	}
	if !waiting {
		return d, nil
	}
	w := ""
	if d.wait {
		w = d.next.Action
	}
	if w != se.Waiting {
		if err := st.SetWaiting(se.ID, w); err != nil {
			return decision{}, err
		}
	}
	return d, nil
}

// followUp is what get_next_action would answer now, for the result of a step in a task
// session: the agent goes on without a call to ask. A failure to decide costs nothing but
// that shortcut (the agent calls get_next_action as before).
func (c *call) followUp() *nextAction {
	if c.session == nil || c.session.Purpose != filestore.PurposeTask {
		return nil
	}
	d, err := c.evaluate(false)
	if err != nil {
		c.srv.log("next step of %s: %v", c.session.ID, err)
		return nil
	}
	return d.next
}
