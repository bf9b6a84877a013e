package tools

import (
	"context"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/mcp"
)

type getTaskResult struct {
	Task     taskView          `json:"task"`
	Subtasks []taskView        `json:"subtasks"`
	History  []filestore.Event `json:"history"`
}

// historyTail bounds the history a task read returns: recent changes, not the whole log.
const historyTail = 20

func getTaskTool() *tool {
	return &tool{
		perm: Authenticated,
		def: mcp.NewTool("get_task", opts(readOnly(),
			mcp.WithDescription("One task with its sub-tasks and its recent history."),
			mcp.WithString("task_id", mcp.Required(), mcp.Description("The task")),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			id, err := c.reqString("task_id")
			if err != nil {
				return nil, err
			}
			st := c.srv.store
			t, err := st.Task(id)
			if err != nil {
				return nil, err
			}
			subs, err := st.Subtree(t.ID)
			if err != nil {
				return nil, err
			}
			hist, err := st.Events(t.ID)
			if err != nil {
				return nil, err
			}
			if len(hist) > historyTail {
				hist = hist[len(hist)-historyTail:]
			}
			if hist == nil {
				hist = []filestore.Event{}
			}
			return getTaskResult{Task: viewTask(t), Subtasks: viewTasks(subs), History: hist}, nil
		},
	}
}
