package tools

import (
	"context"
	"time"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/mcp"
)

// myTasksResult is get_my_tasks' answer in seed 000's shape: each task named by task_id
// (list_tasks says id), total_count the number of matching tasks and returned how many of
// them the limit let through.
type myTasksResult struct {
	Success    bool         `json:"success"`
	AgentID    string       `json:"agent_id"`
	Tasks      []myTaskView `json:"tasks"`
	TotalCount int          `json:"total_count"`
	Returned   int          `json:"returned"`
	// Next, when set, is the after value of the next page.
	Next        string `json:"next,omitempty"`
	Instruction string `json:"instruction"`
}

// myTaskView is a task as get_my_tasks lists it: seed 000's task_id, title, status,
// priority and created_at, then the other fields list_tasks shows (whose id is task_id here).
type myTaskView struct {
	TaskID        string     `json:"task_id"`
	Title         string     `json:"title"`
	Status        string     `json:"status"`
	Priority      string     `json:"priority"`
	CreatedAt     time.Time  `json:"created_at"`
	Description   string     `json:"description,omitempty"`
	ParentID      string     `json:"parent_id,omitempty"`
	Dependencies  []string   `json:"dependencies,omitempty"`
	BlockedReason string     `json:"blocked_reason,omitempty"`
	Approval      string     `json:"approval,omitempty"`
	CreatedBy     string     `json:"created_by,omitempty"`
	UpdatedAt     time.Time  `json:"updated_at"`
	CompletedAt   *time.Time `json:"completed_at,omitempty"`
}

func viewMyTask(t *filestore.Task) myTaskView {
	v := viewTask(t)
	return myTaskView{TaskID: v.ID, Title: v.Title, Status: v.Status, Priority: v.Priority, CreatedAt: t.CreatedAt,
		Description: v.Description, ParentID: v.ParentID, Dependencies: v.Dependencies, BlockedReason: v.BlockedReason,
		Approval: v.Approval, CreatedBy: v.CreatedBy, UpdatedAt: v.UpdatedAt, CompletedAt: v.CompletedAt}
}

func getMyTasksTool() *tool {
	return &tool{
		perm: Authenticated,
		def: mcp.NewTool("get_my_tasks", opts(readOnly(),
			mcp.WithDescription("Tasks assigned to you, oldest first."),
			statusParam(),
			mcp.WithInteger("limit", mcp.Min(1), mcp.Max(200), mcp.Description("At most this many (default 20)")),
			mcp.WithString("after", mcp.Description("Page on: the next of the previous answer")),
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
			after, err := c.optString("after")
			if err != nil {
				return nil, err
			}
			page, err := c.srv.store.TaskPage(filestore.TaskFilter{Status: status, AssigneeID: c.agent.ID}, after, limit)
			if err != nil {
				return nil, err
			}
			out := myTasksResult{Success: true, AgentID: c.agent.ID, Tasks: []myTaskView{}, TotalCount: page.Total, Next: page.Next}
			for _, t := range page.Tasks {
				out.Tasks = append(out.Tasks, viewMyTask(t))
			}
			out.Returned = len(out.Tasks)
			out.Instruction = c.text("get_my_tasks.done")
			if page.Total == 0 {
				out.Instruction = c.text("get_my_tasks.none")
			}
			return out, nil
		},
	}
}
