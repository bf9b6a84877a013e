package tools

import (
	"context"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/mcp"
)

type myTaskResult struct {
	Task        taskView   `json:"task"`
	Subtasks    []taskView `json:"subtasks"`
	ExecutionID string     `json:"execution_id"`
	Instruction string     `json:"instruction"`
}

func getMyTaskTool() *tool {
	return &tool{
		perm: TaskOnly,
		def: mcp.NewTool("get_my_task", opts(writes(),
			mcp.WithDescription("Your session's task with its sub-tasks. Opens the execution record of this session (once)."),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			st := c.srv.store
			t, err := st.Task(c.session.TaskID)
			if err != nil {
				return nil, err
			}
			subs, err := st.Subtree(t.ID)
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
			return myTaskResult{Task: viewTask(t), Subtasks: viewTasks(subs), ExecutionID: ex.ID,
				Instruction: c.text("get_my_task.done")}, nil
		},
	}
}
