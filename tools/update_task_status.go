package tools

import (
	"context"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/mcp"
)

type updateStatusResult struct {
	Success        bool     `json:"success"`
	TaskID         string   `json:"task_id"`
	PreviousStatus string   `json:"previous_status"`
	NewStatus      string   `json:"new_status"`
	Cascaded       []string `json:"cascaded,omitempty"`
	// Started is the sub-task start_next started after this change ("" if none).
	Started string `json:"started_task_id,omitempty"`
	// Next is what get_next_action answers now, for a task of the session's own tree.
	Next        *nextAction `json:"next_action,omitempty"`
	Instruction string      `json:"instruction"`
}

func updateTaskStatusTool() *tool {
	return &tool{
		perm: TaskOnly,
		def: mcp.NewTool("update_task_status", opts(writes(),
			mcp.WithDescription("Move a task of your session's task tree to a new status, under the transition rules."),
			mcp.WithString("task_id", mcp.Required(), mcp.Description("The task")),
			mcp.WithString("status", mcp.Required(), mcp.Enum(filestore.Statuses...), mcp.Description("The new status")),
			mcp.WithString("reason", mcp.Description("Why; recorded (and kept as blocked_reason when blocking)")),
			mcp.WithString("blocked_reason", mcp.Description("Why the task is blocked (with status blocked; the same as reason)")),
			mcp.WithBoolean("start_next", mcp.Description("With status done: also start your next ready sub-task, the one get_next_action would have you start (one call instead of two)")),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			id, err := c.reqString("task_id")
			if err != nil {
				return nil, err
			}
			status, err := c.statusArg("status", true)
			if err != nil {
				return nil, err
			}
			reason, err := c.optString("reason")
			if err != nil {
				return nil, err
			}
			// blocked_reason is seed 000's name for the reason of a block.
			blocked, err := c.optString("blocked_reason")
			if err != nil {
				return nil, err
			}
			if blocked != "" {
				if status != filestore.StatusBlocked {
					return nil, badArg("blocked_reason", "applies only with status blocked, not %s; say why with reason instead", status)
				}
				if reason != "" && reason != blocked {
					return nil, badArg("blocked_reason", "differs from reason; give the reason once")
				}
				reason = blocked
			}
			startNext, err := c.optBool("start_next", false)
			if err != nil {
				return nil, err
			}
			if startNext && status != filestore.StatusDone {
				return nil, badArg("start_next", "applies only with status done, not %s", status)
			}
			if err := c.requireInSessionTree(id); err != nil {
				return nil, err
			}
			st := c.srv.store
			ch, err := st.SetTaskStatus(c.actor(), id, status, reason)
			if err != nil {
				return nil, err
			}
			out := updateStatusResult{Success: true, TaskID: id, PreviousStatus: ch.Previous, NewStatus: ch.Task.Status,
				Instruction: c.text("update_task_status.done")}
			for _, t := range ch.Cascaded {
				out.Cascaded = append(out.Cascaded, t.ID)
			}
			if id != c.session.TaskID && filestore.Finished(ch.Task.Status) {
				counts, err := st.SubtreeSummary(c.session.TaskID)
				if err != nil {
					return nil, err
				}
				if counts.Total() == counts[filestore.StatusDone]+counts[filestore.StatusCancelled] {
					out.Instruction = c.text("update_task_status.all_finished")
				}
			}
			out.Next = c.followUp()
			if next := out.Next; startNext && next != nil && next.Action == "start_subtask" && next.Call != nil &&
				next.Call.Arguments["status"] == filestore.StatusInProgress {
				// The start the answer asks for, made now: the same change as the call it
				// spells out, under the same rules.
				nextID, _ := next.Call.Arguments["task_id"].(string)
				if _, err := st.SetTaskStatus(c.actor(), nextID, filestore.StatusInProgress, ""); err != nil {
					return nil, err
				}
				out.Started = nextID
				out.Next = c.followUp()
			}
			if out.Next != nil {
				out.Instruction = c.text("next.follow")
			}
			return out, nil
		},
	}
}
