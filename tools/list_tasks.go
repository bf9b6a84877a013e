package tools

import (
	"context"
	"slices"
	"strings"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/mcp"
)

type taskListResult struct {
	Tasks    []taskView `json:"tasks"`
	Total    int        `json:"total"`
	Returned int        `json:"returned"`
	// Next, when set, is the after value of the next page.
	Next string `json:"next,omitempty"`
}

func statusParam() mcp.ToolOption {
	return mcp.WithString("status", mcp.Enum(filestore.Statuses...), mcp.Description("Only tasks with this status"))
}

func listTasksTool() *tool {
	return &tool{
		perm: Authenticated,
		def: mcp.NewTool("list_tasks", opts(readOnly(),
			mcp.WithDescription("Tasks of the project, oldest first, filtered by status, assignee and parent."),
			statusParam(),
			mcp.WithString("assignee_id", mcp.Description("Only tasks assigned to this agent")),
			mcp.WithString("parent_task_id", mcp.Description("Only direct sub-tasks of this task")),
			mcp.WithInteger("limit", mcp.Min(1), mcp.Max(200), mcp.Description("At most this many (default 50)")),
			mcp.WithString("after", mcp.Description("Page on: the next of the previous answer")),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			var f filestore.TaskFilter
			var err error
			if f.Status, err = c.statusArg("status", false); err != nil {
				return nil, err
			}
			if f.AssigneeID, err = c.optString("assignee_id"); err != nil {
				return nil, err
			}
			if f.ParentID, err = c.optString("parent_task_id"); err != nil {
				return nil, err
			}
			limit, err := c.limitArg("limit", 50, 200)
			if err != nil {
				return nil, err
			}
			after, err := c.optString("after")
			if err != nil {
				return nil, err
			}
			page, err := c.srv.store.TaskPage(f, after, limit)
			if err != nil {
				return nil, err
			}
			return taskListResult{Tasks: viewTasks(page.Tasks), Total: page.Total, Returned: len(page.Tasks), Next: page.Next}, nil
		},
	}
}

// statusArg reads a task status argument, naming the valid values when it is wrong.
func (c *call) statusArg(name string, required bool) (string, error) {
	s, err := c.optString(name)
	if err != nil {
		return "", err
	}
	if s == "" {
		if required {
			return "", badArg(name, "is required (one of %s)", strings.Join(filestore.Statuses, ", "))
		}
		return "", nil
	}
	if !slices.Contains(filestore.Statuses, s) {
		return "", badArg(name, "%q is not a status (use one of %s)", clipName(s), strings.Join(filestore.Statuses, ", "))
	}
	return s, nil
}

// limitArg reads a positive limit with a default and a maximum.
func (c *call) limitArg(name string, def, max int) (int, error) {
	n, err := c.optInt(name, def)
	if err != nil {
		return 0, err
	}
	if n < 1 || n > max {
		return 0, badArg(name, "must be between 1 and %d", max)
	}
	return n, nil
}
