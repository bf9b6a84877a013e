package tools

import (
	"context"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/mcp"
)

type myTaskResult struct {
	Task taskView `json:"task"`
	subtaskPage
	ExecutionID string `json:"execution_id"`
	// Next is what get_next_action answers now: the agent goes on without asking.
	Next        *nextAction `json:"next_action,omitempty"`
	Instruction string      `json:"instruction"`
}

func getMyTaskTool() *tool {
	return &tool{
		perm: TaskOnly,
		def: mcp.NewTool("get_my_task", opts(writes(), append([]mcp.ToolOption{
			mcp.WithDescription("Your session's task with a page of its direct sub-tasks and counts of its sub-tree. Opens the execution record of this session (once)."),
		}, append(subtaskParams(), sessionParam())...)...)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			st := c.srv.store
			t, err := st.Task(c.session.TaskID)
			if err != nil {
				return nil, err
			}
			page, err := c.subtasks(t.ID)
			if err != nil {
				return nil, err
			}
			ex, err := st.StartExecution(c.session.ID)
			if err != nil {
				return nil, err
			}
			if c.session.Workflow == "" {
				if err := st.SetWorkflow(c.session.ID, filestore.WorkflowTaskFetched, c.session.Selected, c.session.Baseline); err != nil {
					return nil, err
				}
			}
			out := myTaskResult{Task: viewTask(t), subtaskPage: page, ExecutionID: ex.ID, Instruction: c.text("get_my_task.done")}
			if out.Next = c.followUp(); out.Next != nil {
				out.Instruction = c.text("next.follow")
			}
			return out, nil
		},
	}
}
