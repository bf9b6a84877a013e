package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
)

type rejectTaskResult struct {
	Success        bool   `json:"success"`
	TaskID         string `json:"task_id"`
	Approval       string `json:"approval"`
	RejectedReason string `json:"rejected_reason,omitempty"`
	AssigneeID     string `json:"assignee_id"`
	RequesterID    string `json:"requester_id,omitempty"`
	TaskStatus     string `json:"task_status"`
	Instruction    string `json:"instruction"`
}

func rejectTaskRequestTool() *tool {
	return &tool{
		perm: ManagerOnly,
		def: mcp.NewTool("reject_task_request", opts(writes(),
			mcp.WithDescription("Reject a task request that waits for approval (pending_approval). "+
				"Only a superior of the task's assignee may reject it; a rejected task can never start."),
			mcp.WithString("task_id", mcp.Required(), mcp.Description("The requested task")),
			mcp.WithString("reason", mcp.Description("Why, for the assignee and the requester")),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			id, err := c.reqString("task_id")
			if err != nil {
				return nil, err
			}
			reason, err := c.optString("reason")
			if err != nil {
				return nil, err
			}
			t, err := c.srv.store.RejectTask(c.actor(), id, reason)
			if err != nil {
				return nil, err
			}
			waiting := t.RequesterID // who asked; a hand-made pending task has only its assignee
			if waiting == "" {
				waiting = t.AssigneeID
			}
			return rejectTaskResult{Success: true, TaskID: t.ID, Approval: t.Approval, RejectedReason: t.RejectedReason,
				AssigneeID: t.AssigneeID, RequesterID: t.RequesterID, TaskStatus: t.Status,
				Instruction: c.text("reject_task_request.done", t.ID, waiting)}, nil
		},
	}
}
