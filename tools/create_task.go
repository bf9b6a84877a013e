package tools

import (
	"context"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/mcp"
)

type createTaskResult struct {
	Success     bool     `json:"success"`
	Task        taskView `json:"task"`
	Instruction string   `json:"instruction"`
}

func createTaskTool() *tool {
	return &tool{
		perm: TaskOnly,
		def: mcp.NewTool("create_task", opts(writes(),
			mcp.WithDescription("Create a sub-task (todo) inside your session's task. A worker's sub-task is assigned to the worker; a manager's is unassigned until assign_task."),
			mcp.WithString("title", mcp.Required(), mcp.Description("Short title")),
			mcp.WithString("description", mcp.Description("What to do")),
			mcp.WithString("priority", mcp.Enum(filestore.Priorities...), mcp.Description("Default medium")),
			mcp.WithString("parent_task_id", mcp.Description("Parent: your session's task (default) or one of its sub-tasks")),
			mcp.WithArray("dependencies", mcp.WithStringItems(), mcp.Description("Task ids that must be done before this one starts")),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			n, err := c.newTaskArgs()
			if err != nil {
				return nil, err
			}
			if n.ParentID, err = c.optString("parent_task_id"); err != nil {
				return nil, err
			}
			if n.ParentID == "" {
				n.ParentID = c.session.TaskID
			}
			if err := c.requireInSessionTree(n.ParentID); err != nil {
				return nil, err
			}
			if n.Dependencies, err = c.stringsArg("dependencies"); err != nil {
				return nil, err
			}
			n.Status = filestore.StatusTodo
			instr := c.text("create_task.worker")
			if c.agent.IsManager() {
				instr = c.text("create_task.manager")
			} else {
				n.AssigneeID = c.agent.ID
			}
			t, err := c.srv.store.CreateTask(c.actor(), n)
			if err != nil {
				return nil, err
			}
			return createTaskResult{Success: true, Task: viewTask(t), Instruction: instr}, nil
		},
	}
}

// newTaskArgs reads title, description and priority.
func (c *call) newTaskArgs() (filestore.NewTask, error) {
	var n filestore.NewTask
	var err error
	if n.Title, err = c.reqString("title"); err != nil {
		return n, err
	}
	if n.Description, err = c.optString("description"); err != nil {
		return n, err
	}
	if n.Priority, err = c.optString("priority"); err != nil {
		return n, err
	}
	return n, nil
}

// requireInSessionTree refuses a task outside the session's task and its sub-tree: a task
// session works on its own task only.
func (c *call) requireInSessionTree(id string) error {
	if _, err := c.srv.store.Task(id); err != nil {
		return err
	}
	ok, err := c.srv.store.InSubtree(c.session.TaskID, id)
	if err != nil {
		return err
	}
	if !ok {
		return &toolError{Code: "unauthorized", Message: "task " + id + " is outside this session's task " + c.session.TaskID + " and its sub-tasks",
			Hint: "work only on your session's task tree; ask its owner about other tasks"}
	}
	return nil
}

// stringsArg reads an optional array of strings.
func (c *call) stringsArg(name string) ([]string, error) {
	v, ok := c.args[name]
	if !ok || v == nil {
		return nil, nil
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, badArg(name, "must be an array of strings, got %s", jsonType(v))
	}
	if len(arr) > 200 {
		return nil, badArg(name, "too many items (%d, at most 200)", len(arr))
	}
	out := make([]string, 0, len(arr))
	for i, x := range arr {
		s, ok := x.(string)
		if !ok {
			return nil, badArg(name, "item %d must be a string, got %s", i, jsonType(x))
		}
		out = append(out, s)
	}
	return out, nil
}
