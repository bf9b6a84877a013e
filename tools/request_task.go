package tools

import (
	"context"
	"strings"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/mcp"
)

type requestTaskResult struct {
	Success     bool     `json:"success"`
	TaskID      string   `json:"task_id"`
	TaskStatus  string   `json:"task_status"`
	Approval    string   `json:"approval"`
	RequesterID string   `json:"requester_id"`
	Notified    []string `json:"notified"`
	Instruction string   `json:"instruction"`
}

func requestTaskTool() *tool {
	return &tool{
		perm: Authenticated,
		def: mcp.NewTool("request_task", opts(writes(),
			mcp.WithDescription("Ask for a new task for yourself. It lands in your backlog, approved at once if the requester "+
				"is one of your superiors; otherwise it waits for their approval and cannot start until then."),
			mcp.WithString("title", mcp.Required(), mcp.Description("Short title")),
			mcp.WithString("description", mcp.Description("What to do, in detail")),
			mcp.WithString("priority", mcp.Enum(filestore.Priorities...), mcp.Description("Default medium")),
			mcp.WithString("parent_task_id", mcp.Description("Make it a sub-task of this existing task")),
			mcp.WithString("requester_id", mcp.Description("Who asked for it; one of their recent messages to you must be the request itself: "+
				"the task's title alone, or after please, task: or could you (case, spacing and closing punctuation aside). "+
				"A message that only mentions the title, or says not to do it, is no request. "+
				"Default: in a chat session the last person who messaged you, in a task session yourself")),
			mcp.WithString("request_message_id", mcp.Description("The id of the requester's message that is the request for this task (found among your last 1000 mailbox lines)")),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			title, err := c.reqString("title")
			if err != nil {
				return nil, err
			}
			var r filestore.TaskRequest
			r.Title = title
			if r.Description, err = c.optString("description"); err != nil {
				return nil, err
			}
			if r.Priority, err = c.optString("priority"); err != nil {
				return nil, err
			}
			if r.ParentID, err = c.optString("parent_task_id"); err != nil {
				return nil, err
			}
			if r.RequestMessageID, err = c.optString("request_message_id"); err != nil {
				return nil, err
			}
			requester, err := c.optString("requester_id")
			if err != nil {
				return nil, err
			}
			st := c.srv.store
			// The original read the requester from the chat: whoever spoke last asked.
			if requester == "" && c.session.Purpose == filestore.PurposeChat {
				if requester, err = st.LastSender(c.agent.ID); err != nil {
					return nil, err
				}
			}
			res, err := st.RequestTask(c.actor(), requester, r)
			if err != nil {
				return nil, err
			}
			t := res.Task
			out := requestTaskResult{Success: true, TaskID: t.ID, TaskStatus: t.Status, Approval: t.Approval,
				RequesterID: t.RequesterID, Notified: res.Notified}
			switch {
			case t.Approval == filestore.ApprovalApproved:
				out.Instruction = c.text("request_task.approved", t.ID, t.RequesterID)
			case len(res.Notified) > 0:
				out.Instruction = c.text("request_task.asked", t.ID, strings.Join(res.Notified, ", "), t.RequesterID)
			default:
				out.Instruction = c.text("request_task.unasked", t.ID)
			}
			return out, nil
		},
	}
}
