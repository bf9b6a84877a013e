package tools

import (
	"context"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/mcp"
)

func getMyTasksTool() *tool {
	return &tool{
		perm: Authenticated,
		def: mcp.NewTool("get_my_tasks", opts(readOnly(),
			mcp.WithDescription("Tasks assigned to you, oldest first."),
			statusParam(),
			mcp.WithNumber("limit", mcp.Description("At most this many (default 20, max 200)")),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			status, err := c.statusArg("status", false)
			if err != nil {
				return nil, err
			}
			limit, err := c.limitArg("limit", 20, 200)
			if err != nil {
				return nil, err
			}
			tasks, err := c.srv.store.Tasks(filestore.TaskFilter{Status: status, AssigneeID: c.agent.ID})
			if err != nil {
				return nil, err
			}
			return listResult(tasks, limit), nil
		},
	}
}
