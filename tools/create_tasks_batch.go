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
	// Next is what get_next_action answers now, for a batch under the session's task.
	Next        *nextAction `json:"next_action,omitempty"`
	Instruction string      `json:"instruction"`
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
			items, err := c.batchItems("tasks", 1)
			if err != nil {
				return nil, err
			}
			for i := range items {
				items[i].Status = filestore.StatusTodo
				items[i].AssigneeID = ""
				if !c.agent.IsManager() {
					items[i].AssigneeID = c.agent.ID
				}
			}
			tasks, ids, err := c.srv.store.CreateTasks(c.actor(), parent, items)
			if err != nil {
				return nil, err
			}
			instr := c.text("create_tasks_batch.worker")
			if c.agent.IsManager() {
				instr = c.text("create_tasks_batch.manager")
			}
			out := batchResult{Success: true, Tasks: viewTasks(tasks), TaskCount: len(tasks), LocalIDToRealID: ids, Instruction: instr}
			if out.Next = c.followUp(); out.Next != nil {
				out.Instruction = c.text("next.follow")
			}
			return out, nil
		},
	}
}

// batchItems reads an array argument of task objects {local_id, title, description?,
// priority?, assignee_id?, dependencies?}: at least least items, at most 50.
func (c *call) batchItems(name string, least int) ([]filestore.BatchItem, error) {
	raw, ok := c.args[name].([]any)
	if !ok || len(raw) < least {
		return nil, badArg(name, "must be an array of at least %d task object(s)", least)
	}
	if len(raw) > 50 {
		return nil, badArg(name, "too many tasks (%d, at most 50 in one call)", len(raw))
	}
	items := make([]filestore.BatchItem, 0, len(raw))
	for i, r := range raw {
		obj, ok := r.(map[string]any)
		if !ok {
			return nil, badArg(name, "item %d must be an object, got %s", i, jsonType(r))
		}
		sub := &call{srv: c.srv, args: obj}
		var it filestore.BatchItem
		var err error
		if it.LocalID, err = sub.reqString("local_id"); err != nil {
			return nil, err
		}
		if it.NewTask, err = sub.newTaskArgs(); err != nil {
			return nil, err
		}
		if it.Dependencies, err = sub.stringsArg("dependencies"); err != nil {
			return nil, err
		}
		if it.AssigneeID, err = sub.optString("assignee_id"); err != nil {
			return nil, err
		}
		items = append(items, it)
	}
	return items, nil
}
