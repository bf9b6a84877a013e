package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
)

type executionLogResult struct {
	Success       bool     `json:"success"`
	ExecutionID   string   `json:"execution_id"`
	TaskID        string   `json:"task_id"`
	Status        string   `json:"status"`
	LogFilePath   string   `json:"log_file_path"`
	LogContent    []string `json:"log_content"`
	Offset        int      `json:"offset"`
	TotalLines    int      `json:"total_lines"`
	ReturnedLines int      `json:"returned_lines"`
	Truncated     bool     `json:"truncated"`
	Instruction   string   `json:"instruction"`
}

func getExecutionLogTool() *tool {
	return &tool{
		perm: Authenticated,
		def: mcp.NewTool("get_execution_log", opts(readOnly(),
			mcp.WithDescription("The captured output of one of your runs: the last `tail` lines (default 100), or `limit` lines from `offset`."),
			mcp.WithString("execution_id", mcp.Required(), mcp.Description("A run from get_my_execution_history")),
			mcp.WithInteger("tail", mcp.Min(1), mcp.Max(1000), mcp.Description("Lines from the end (default 100); not with offset")),
			mcp.WithInteger("offset", mcp.Min(0), mcp.Description("First line, counted from 0")),
			mcp.WithInteger("limit", mcp.Min(1), mcp.Max(1000), mcp.Description("Lines from offset (default 100)")),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			id, err := c.reqString("execution_id")
			if err != nil {
				return nil, err
			}
			_, hasTail := c.args["tail"]
			offset, err := c.optInt("offset", -1)
			if err != nil {
				return nil, err
			}
			if hasTail && offset >= 0 {
				return nil, badArg("tail", "cannot be combined with offset; use offset and limit, or tail alone")
			}
			if _, ok := c.args["offset"]; ok && offset < 0 {
				return nil, badArg("offset", "must be 0 or more")
			}
			tail, err := c.limitArg("tail", 100, 1000)
			if err != nil {
				return nil, err
			}
			limit, err := c.limitArg("limit", 100, 1000)
			if err != nil {
				return nil, err
			}
			st := c.srv.store
			ex, err := st.Execution(id)
			if err != nil {
				return nil, err
			}
			if ex.AgentID != c.agent.ID {
				return nil, &toolError{Code: "unauthorized", Message: "execution " + id + " belongs to agent " + ex.AgentID + ", not " + c.agent.ID,
					Hint: "read only your own runs (get_my_execution_history)"}
			}
			page, err := st.ExecutionLog(id, tail, offset, limit)
			if err != nil {
				return nil, err
			}
			out := executionLogResult{Success: true, ExecutionID: ex.ID, TaskID: ex.TaskID, Status: ex.Status, LogFilePath: page.Path,
				LogContent: page.Lines, Offset: page.Offset, TotalLines: page.TotalLines, ReturnedLines: len(page.Lines),
				Truncated: page.Truncated, Instruction: c.text("get_execution_log.whole")}
			if !page.Truncated && len(page.Lines) < page.TotalLines {
				out.Instruction = c.text("get_execution_log.end")
			}
			if page.Truncated {
				out.Instruction = c.text("get_execution_log.truncated")
			}
			return out, nil
		},
	}
}
