package tools

import (
	"context"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/mcp"
)

type batchResult struct {
	Success         bool              `json:"success"`
	Tasks           []taskView        `json:"tasks"`
	TaskCount       int               `json:"task_count"`
	LocalIDToRealID map[string]string `json:"local_id_to_real_id"`
	Instruction     string            `json:"instruction"`
}

func createTasksBatchTool() *tool {
	return &tool{
		perm: TaskOnly,
		def: mcp.NewTool("create_tasks_batch", opts(writes(),
			mcp.WithDescription("Create several sub-tasks at once, all or nothing. Dependencies name other tasks of the batch by local_id (or existing tasks by id). A title that already exists under the parent is refused."),
			mcp.WithString("parent_task_id", mcp.Description("Parent: your session's task (default) or one of its sub-tasks")),
			mcp.WithArray("tasks", mcp.Required(), mcp.Description("The sub-tasks"), mcp.Items(map[string]any{
				"type": "object",
				"properties": map[string]any{
					"local_id":     map[string]any{"type": "string", "description": "Your name for it within this batch"},
					"title":        map[string]any{"type": "string"},
					"description":  map[string]any{"type": "string"},
					"priority":     map[string]any{"type": "string", "enum": filestore.Priorities},
					"dependencies": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
				},
				"required": []string{"local_id", "title"},
			})),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			parent, err := c.optString("parent_task_id")
			if err != nil {
				return nil, err
			}
			if parent == "" {
				parent = c.session.TaskID
			}
			if err := c.requireInSessionTree(parent); err != nil {
				return nil, err
			}
			raw, ok := c.args["tasks"].([]any)
			if !ok || len(raw) == 0 {
				return nil, badArg("tasks", "must be a non-empty array of task objects")
			}
			if len(raw) > 50 {
				return nil, badArg("tasks", "too many tasks (%d, at most 50 in one batch)", len(raw))
			}
			items := make([]filestore.BatchItem, 0, len(raw))
			for i, r := range raw {
				obj, ok := r.(map[string]any)
				if !ok {
					return nil, badArg("tasks", "item %d must be an object, got %s", i, jsonType(r))
				}
				sub := &call{srv: c.srv, args: obj}
				var it filestore.BatchItem
				if it.LocalID, err = sub.reqString("local_id"); err != nil {
					return nil, err
				}
				if it.NewTask, err = sub.newTaskArgs(); err != nil {
					return nil, err
				}
				if it.Dependencies, err = sub.stringsArg("dependencies"); err != nil {
					return nil, err
				}
				it.Status = filestore.StatusTodo
				if !c.agent.IsManager() {
					it.AssigneeID = c.agent.ID
				}
				items = append(items, it)
			}
			tasks, ids, err := c.srv.store.CreateTasks(c.actor(), parent, items)
			if err != nil {
				return nil, err
			}
			instr := "Created and assigned to you. Start them in dependency order with update_task_status."
			if c.agent.IsManager() {
				instr = "Created unassigned. Assign each to a subordinate with assign_task; unassigned tasks never run."
			}
			return batchResult{Success: true, Tasks: viewTasks(tasks), TaskCount: len(tasks), LocalIDToRealID: ids, Instruction: instr}, nil
		},
	}
}
