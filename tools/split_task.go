package tools

import (
	"context"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/mcp"
)

type splitResult struct {
	Success         bool              `json:"success"`
	OriginalTaskID  string            `json:"original_task_id"`
	OriginalStatus  string            `json:"original_status"`
	Tasks           []taskView        `json:"tasks"`
	LocalIDToRealID map[string]string `json:"local_id_to_real_id"`
	Rewired         []string          `json:"rewired_task_ids,omitempty"`
	Instruction     string            `json:"instruction"`
}

func splitTaskTool() *tool {
	return &tool{
		perm: TaskOnly,
		def: mcp.NewTool("split_task", opts(writes(),
			mcp.WithDescription("Replace a todo or backlog task of your task tree by two or more sibling tasks, at once: they inherit its parent and dependencies, tasks that depended on it depend on all of them, and it is cancelled."),
			mcp.WithString("task_id", mcp.Required(), mcp.Description("The task to split")),
			mcp.WithArray("tasks", mcp.Required(), mcp.Description("At least two replacements"), mcp.Items(map[string]any{
				"type": "object",
				"properties": map[string]any{
					"local_id":     map[string]any{"type": "string", "description": "Your name for it within this call"},
					"title":        map[string]any{"type": "string"},
					"description":  map[string]any{"type": "string"},
					"assignee_id":  map[string]any{"type": "string", "description": "Default: the original's assignee"},
					"priority":     map[string]any{"type": "string", "enum": filestore.Priorities},
					"dependencies": map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "local_ids of other replacements"},
				},
				"required": []string{"local_id", "title"},
			})),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			id, err := c.reqString("task_id")
			if err != nil {
				return nil, err
			}
			if err := c.requireInSessionTree(id); err != nil {
				return nil, err
			}
			items, err := c.batchItems("tasks", 2)
			if err != nil {
				return nil, err
			}
			for i := range items {
				a := items[i].AssigneeID
				if a == "" || a == c.agent.ID {
					continue
				}
				if !c.agent.IsManager() {
					return nil, badArg("tasks", "item %q: only a manager assigns to others; leave assignee_id out", items[i].LocalID)
				}
				m, err := c.srv.store.Member(a)
				if err != nil {
					return nil, err
				}
				if m.ParentID != c.agent.ID {
					return nil, &toolError{Code: "unauthorized", Message: "agent " + a + " is not a direct subordinate of " + c.agent.ID,
						Hint: "call list_subordinates to see whom you can assign"}
				}
			}
			sp, err := c.srv.store.SplitTask(c.actor(), id, items)
			if err != nil {
				return nil, err
			}
			out := splitResult{Success: true, OriginalTaskID: id, OriginalStatus: sp.Original.Status, Tasks: viewTasks(sp.Tasks),
				LocalIDToRealID: sp.IDs, Instruction: c.text("split_task.done")}
			for _, t := range sp.Rewired {
				out.Rewired = append(out.Rewired, t.ID)
			}
			return out, nil
		},
	}
}
