package tools

import (
	"context"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/mcp"
)

type getTaskResult struct {
	Task taskView `json:"task"`
	subtaskPage
	History      []filestore.Event `json:"history"`
	HistoryTotal int               `json:"history_total"`
}

func getTaskTool() *tool {
	return &tool{
		perm: Authenticated,
		def: mcp.NewTool("get_task", opts(readOnly(), append([]mcp.ToolOption{
			mcp.WithDescription("One task: its fields, a page of its direct sub-tasks (get_task on a sub-task descends), counts of its whole sub-tree by status, and its last 10 history events."),
			mcp.WithString("task_id", mcp.Required(), mcp.Description("The task")),
		}, append(subtaskParams(), sessionParam())...)...)...),
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
			page, err := c.subtasks(t.ID)
			if err != nil {
				return nil, err
			}
			hist, total, err := st.EventsTail(t.ID, historyTail)
			if err != nil {
				return nil, err
			}
			if hist == nil {
				hist = []filestore.Event{}
			}
			return getTaskResult{Task: viewTask(t), subtaskPage: page, History: hist, HistoryTotal: total}, nil
		},
	}
}
