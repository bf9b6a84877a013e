package tools

import (
	"context"
	"slices"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/mcp"
)

type reportResult struct {
	Success        bool   `json:"success"`
	TaskID         string `json:"task_id"`
	PreviousStatus string `json:"previous_status"`
	NewStatus      string `json:"new_status"`
	Result         string `json:"result"`
	// TaskUnchanged says the report ended the session but left the task alone: it was
	// cancelled or assigned to someone else meanwhile, or the project is paused.
	TaskUnchanged bool   `json:"task_unchanged,omitempty"`
	Action        string `json:"action"`
	Instruction   string `json:"instruction"`
}

func reportCompletedTool(s *Server) *tool {
	return &tool{
		perm: TaskOnly,
		def: mcp.NewTool("report_completed", opts(writes(),
			mcp.WithDescription("Finish your session's task: success (done; every sub-task must be finished), failed or blocked. Ends the session."),
			mcp.WithString("result", mcp.Required(), mcp.Enum(filestore.ResultSuccess, filestore.ResultFailed, filestore.ResultBlocked), mcp.Description("The outcome")),
			mcp.WithString("summary", mcp.Description("What was done, or why it failed or is blocked")),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			result, err := c.reqString("result")
			if err != nil {
				return nil, err
			}
			summary, err := c.optString("summary")
			if err != nil {
				return nil, err
			}
			done, err := s.store.ReportCompleted(c.session.ID, result, summary)
			if err != nil {
				if done != nil && len(done.Open) > 0 {
					te := asToolError(err)
					te.Extra = map[string]any{"incomplete_subtasks": viewTasks(done.Open)}
					return nil, te
				}
				return nil, err
			}
			s.mu.Lock()
			s.owned = slices.DeleteFunc(s.owned, func(id string) bool { return id == c.session.ID })
			s.mu.Unlock()
			if done.Released {
				t := done.Task
				why := c.text("report_completed.released_cancelled", t.ID, t.StatusChangedBy)
				switch {
				case t.AssigneeID != c.session.AgentID:
					why = c.text("report_completed.released_reassigned", t.ID, orAssignee(c.lang(), t.AssigneeID))
				case done.Paused && t.Status != filestore.StatusCancelled:
					why = c.text("report_completed.released_paused", t.ID, t.Status)
				}
				return reportResult{Success: true, TaskID: t.ID, PreviousStatus: done.Previous, NewStatus: t.Status,
					Result: result, TaskUnchanged: true, Action: "exit", Instruction: why + c.text("report_completed.released")}, nil
			}
			return reportResult{Success: true, TaskID: done.Task.ID, PreviousStatus: done.Previous, NewStatus: done.Task.Status,
				Result: result, Action: "exit",
				Instruction: c.text("report_completed.done")}, nil
		},
	}
}
