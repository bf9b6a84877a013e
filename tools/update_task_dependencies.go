package tools

import (
	"context"
	"slices"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/mcp"
)

type depsResult struct {
	Success      bool     `json:"success"`
	TaskID       string   `json:"task_id"`
	Dependencies []string `json:"dependencies"`
	Instruction  string   `json:"instruction"`
}

// updateTaskDependenciesTool is the agents' `aipm task edit --add-dep/--remove-dep`: the
// same store call and rules (the tasks exist, no cycle, no change to a finished task), for
// a task inside the session's task tree.
func updateTaskDependenciesTool() *tool {
	return &tool{
		perm: TaskOnly,
		def: mcp.NewTool("update_task_dependencies", opts(writes(),
			mcp.WithDescription("Add or remove dependencies of a pending task in your session's task tree, e.g. drop one on a cancelled task. The tasks must exist and form no cycle."),
			mcp.WithString("task_id", mcp.Required(), mcp.Description("The task")),
			mcp.WithArray("add", mcp.WithStringItems(), mcp.Description("Ids to wait for")),
			mcp.WithArray("remove", mcp.WithStringItems(), mcp.Description("Ids to drop")),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			id, err := c.reqString("task_id")
			if err != nil {
				return nil, err
			}
			add, err := c.stringsArg("add")
			if err != nil {
				return nil, err
			}
			remove, err := c.stringsArg("remove")
			if err != nil {
				return nil, err
			}
			if len(add)+len(remove) == 0 {
				return nil, &toolError{Code: "invalid_argument", Message: "nothing to change: give add or remove (task ids)",
					Hint: "call help with tool_name to see this tool's parameters"}
			}
			if err := c.requireInSessionTree(id); err != nil {
				return nil, err
			}
			st := c.srv.store
			t, err := st.Task(id)
			if err != nil {
				return nil, err
			}
			for _, d := range remove {
				if !slices.Contains(t.Dependencies, d) {
					return nil, &toolError{Code: "invalid_argument", Message: "task " + t.ID + " does not depend on " + d,
						Hint: "get_task shows its dependencies"}
				}
			}
			deps := slices.DeleteFunc(slices.Clone(t.Dependencies), func(d string) bool { return slices.Contains(remove, d) })
			for _, d := range add {
				if !slices.Contains(deps, d) {
					deps = append(deps, d)
				}
			}
			t, _, err = st.EditTask(c.actor(), id, filestore.TaskEdit{Dependencies: &deps})
			if err != nil {
				return nil, err
			}
			if t.Dependencies == nil {
				t.Dependencies = []string{}
			}
			return depsResult{Success: true, TaskID: t.ID, Dependencies: t.Dependencies, Instruction: c.text("update_task_dependencies.done")}, nil
		},
	}
}
