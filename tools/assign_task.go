package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
)

type assignResult struct {
	Success            bool   `json:"success"`
	TaskID             string `json:"task_id"`
	AssigneeID         string `json:"assignee_id"`
	PreviousAssigneeID string `json:"previous_assignee_id"`
	Instruction        string `json:"instruction"`
}

func assignTaskTool() *tool {
	return &tool{
		perm: ManagerOnly,
		def: mcp.NewTool("assign_task", opts(writes(),
			mcp.WithDescription("Assign a task under one of your tasks to a direct subordinate (omit assignee_id to unassign)."),
			mcp.WithString("task_id", mcp.Required(), mcp.Description("The task")),
			mcp.WithString("assignee_id", mcp.Description("A direct subordinate who is an active member")),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			id, err := c.reqString("task_id")
			if err != nil {
				return nil, err
			}
			assignee, err := c.optString("assignee_id")
			if err != nil {
				return nil, err
			}
			st := c.srv.store
			t, err := st.Task(id)
			if err != nil {
				return nil, err
			}
			if err := c.requireOwnsTask(t.ParentID); err != nil {
				return nil, err
			}
			if assignee != "" {
				a, err := st.Member(assignee)
				if err != nil {
					return nil, err
				}
				if a.ParentID != c.agent.ID {
					return nil, &toolError{Code: "unauthorized", Message: "agent " + assignee + " is not a direct subordinate of " + c.agent.ID,
						Hint: "call list_subordinates to see whom you can assign"}
				}
			}
			prev := t.AssigneeID
			t, err = st.AssignTask(c.actor(), id, assignee)
			if err != nil {
				return nil, err
			}
			return assignResult{Success: true, TaskID: t.ID, AssigneeID: t.AssigneeID, PreviousAssigneeID: prev,
				Instruction: c.text("assign_task.done")}, nil
		},
	}
}

// requireOwnsTask checks that the caller is the assignee of task id or of one of its
// ancestor tasks: a manager dispatches only inside the work it was given.
func (c *call) requireOwnsTask(id string) error {
	deny := &toolError{Code: "unauthorized", Message: "only the manager who owns the parent task can assign this task",
		Hint: "assign sub-tasks of your own tasks"}
	seen := map[string]bool{}
	for id != "" && !seen[id] {
		seen[id] = true
		t, err := c.srv.store.Task(id)
		if err != nil {
			return err
		}
		if t.AssigneeID == c.agent.ID {
			return nil
		}
		id = t.ParentID
	}
	return deny
}
