package tools

import (
	"context"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/mcp"
)

type updateFromChatResult struct {
	Success        bool     `json:"success"`
	TaskID         string   `json:"task_id"`
	UpdatedFields  []string `json:"updated_fields"`
	PreviousStatus string   `json:"previous_status"`
	NewStatus      string   `json:"new_status"`
	RequesterID    string   `json:"requester_id"`
	Cascaded       []string `json:"cascaded,omitempty"`
	Instruction    string   `json:"instruction"`
}

func updateTaskFromChatTool() *tool {
	return &tool{
		perm: ChatOnly,
		def: mcp.NewTool("update_task_from_chat", opts(writes(),
			mcp.WithDescription("Change a task you are assigned or created because a superior asked in chat: title, description, priority, status (under the transition rules) or blocked_reason."),
			mcp.WithString("task_id", mcp.Required(), mcp.Description("The task")),
			mcp.WithString("requester_id", mcp.Required(), mcp.Description("The superior who asked you")),
			mcp.WithString("conversation_id", mcp.Description("The conversation in which they asked")),
			mcp.WithString("title", mcp.Description("New title")),
			mcp.WithString("description", mcp.Description("New description")),
			mcp.WithString("priority", mcp.Enum(filestore.Priorities...), mcp.Description("New priority")),
			mcp.WithString("status", mcp.Enum(filestore.Statuses...), mcp.Description("New status")),
			mcp.WithString("blocked_reason", mcp.Description("Why it is blocked")),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			var r filestore.ChatTaskUpdate
			var err error
			if r.TaskID, err = c.reqString("task_id"); err != nil {
				return nil, err
			}
			if r.RequesterID, err = c.reqString("requester_id"); err != nil {
				return nil, err
			}
			if r.ConversationID, err = c.optString("conversation_id"); err != nil {
				return nil, err
			}
			for name, dst := range map[string]**string{"title": &r.Title, "description": &r.Description, "priority": &r.Priority,
				"status": &r.Status, "blocked_reason": &r.BlockedReason} {
				if _, ok := c.args[name]; !ok {
					continue
				}
				v, err := c.optString(name)
				if err != nil {
					return nil, err
				}
				*dst = &v
			}
			res, err := c.srv.store.UpdateTaskFromChat(c.actor(), r)
			if err != nil {
				return nil, err
			}
			out := updateFromChatResult{Success: true, TaskID: r.TaskID, UpdatedFields: nonNil(res.UpdatedFields), PreviousStatus: res.PreviousStatus,
				NewStatus: res.Task.Status, RequesterID: r.RequesterID, Instruction: c.text("update_task_from_chat.done", r.RequesterID)}
			for _, t := range res.Cascaded {
				out.Cascaded = append(out.Cascaded, t.ID)
			}
			if len(res.UpdatedFields) == 0 {
				out.Instruction = c.text("update_task_from_chat.unchanged")
			}
			return out, nil
		},
	}
}
