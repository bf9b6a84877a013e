package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
)

type approveTaskResult struct {
	Success     bool   `json:"success"`
	TaskID      string `json:"task_id"`
	Approval    string `json:"approval"`
	ApprovedBy  string `json:"approved_by"`
	AssigneeID  string `json:"assignee_id"`
	RequesterID string `json:"requester_id,omitempty"`
	TaskStatus  string `json:"task_status"`
	Instruction string `json:"instruction"`
}

func approveTaskRequestTool() *tool {
	return &tool{
		perm: ManagerOnly,
		def: mcp.NewTool("approve_task_request", opts(writes(),
			mcp.WithDescription("Approve a task request that waits for approval (pending_approval). "+
				"Only a superior of the task's assignee may approve it."),
			mcp.WithString("task_id", mcp.Required(), mcp.Description("The requested task")),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			id, err := c.reqString("task_id")
			if err != nil {
				return nil, err
			}
			t, err := c.srv.store.ApproveTask(c.actor(), id)
			if err != nil {
				return nil, err
			}
			return approveTaskResult{Success: true, TaskID: t.ID, Approval: t.Approval, ApprovedBy: t.ApprovedBy,
				AssigneeID: t.AssigneeID, RequesterID: t.RequesterID, TaskStatus: t.Status,
				Instruction: c.text("approve_task_request.done", t.ID, t.AssigneeID)}, nil
		},
	}
}
