package tools

import (
	"context"
	"os"
	"slices"
	"time"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/mcp"
)

type executionView struct {
	ExecutionID     string     `json:"execution_id"`
	TaskID          string     `json:"task_id"`
	TaskTitle       string     `json:"task_title"`
	Status          string     `json:"status"`
	StartedAt       time.Time  `json:"started_at"`
	CompletedAt     *time.Time `json:"completed_at"`
	DurationSeconds *float64   `json:"duration_seconds"`
	ExitCode        *int       `json:"exit_code"`
	HasLog          bool       `json:"has_log"`
}

type executionHistoryResult struct {
	Success     bool            `json:"success"`
	AgentID     string          `json:"agent_id"`
	Executions  []executionView `json:"executions"`
	TotalCount  int             `json:"total_count"`
	Instruction string          `json:"instruction"`
}

func getMyExecutionHistoryTool() *tool {
	return &tool{
		perm: Authenticated,
		def: mcp.NewTool("get_my_execution_history", opts(readOnly(),
			mcp.WithDescription("Your own task-session runs, newest first (filters apply before the limit)."),
			mcp.WithString("task_id", mcp.Description("Only runs of this task")),
			mcp.WithString("status", mcp.Enum(filestore.ExecRunning, filestore.ExecCompleted, filestore.ExecFailed), mcp.Description("Only runs with this status")),
			mcp.WithInteger("limit", mcp.Min(1), mcp.Max(100), mcp.Description("At most this many (default 10)")),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			taskID, err := c.optString("task_id")
			if err != nil {
				return nil, err
			}
			status, err := c.optString("status")
			if err != nil {
				return nil, err
			}
			if status != "" && !slices.Contains([]string{filestore.ExecRunning, filestore.ExecCompleted, filestore.ExecFailed}, status) {
				return nil, badArg("status", "%q is not a run status (use running, completed or failed)", clipName(status))
			}
			limit, err := c.limitArg("limit", 10, 100)
			if err != nil {
				return nil, err
			}
			st := c.srv.store
			all, err := st.Executions(c.agent.ID)
			if err != nil {
				return nil, err
			}
			// Filter first, then limit: a filter must never hide matches beyond the newest N.
			all = slices.DeleteFunc(all, func(ex *filestore.Execution) bool {
				return (taskID != "" && ex.TaskID != taskID) || (status != "" && ex.Status != status)
			})
			out := executionHistoryResult{Success: true, AgentID: c.agent.ID, Executions: []executionView{}, TotalCount: len(all),
				Instruction: c.text("get_my_execution_history.done")}
			for _, ex := range all[:min(limit, len(all))] {
				v := executionView{ExecutionID: ex.ID, TaskID: ex.TaskID, Status: ex.Status, StartedAt: ex.StartedAt,
					CompletedAt: ex.CompletedAt, ExitCode: ex.ExitCode}
				if t, err := st.Task(ex.TaskID); err == nil {
					v.TaskTitle = t.Title
				}
				if ex.CompletedAt != nil {
					d := ex.DurationSeconds
					v.DurationSeconds = &d
				}
				if info, err := os.Stat(st.Dir() + "/executions/" + ex.ID + ".log"); err == nil && info.Size() > 0 {
					v.HasLog = true
				}
				out.Executions = append(out.Executions, v)
			}
			return out, nil
		},
	}
}
