package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
)

type startFromChatResult struct {
	Success        bool     `json:"success"`
	TaskID         string   `json:"task_id"`
	PreviousStatus string   `json:"previous_status"`
	NewStatus      string   `json:"new_status"`
	RequesterID    string   `json:"requester_id"`
	Cascaded       []string `json:"cascaded,omitempty"`
	Instruction    string   `json:"instruction"`
}

func startTaskFromChatTool() *tool {
	return &tool{
		perm: ChatOnly,
		def: mcp.NewTool("start_task_from_chat", opts(writes(),
			mcp.WithDescription("Start one of your tasks because a superior asked you to in chat: it goes to in_progress (under the usual rules) and your task session does the work."),
			mcp.WithString("task_id", mcp.Required(), mcp.Description("Your task to start")),
			mcp.WithString("requester_id", mcp.Required(), mcp.Description("The superior who asked you")),
			mcp.WithString("conversation_id", mcp.Description("The conversation in which they asked")),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			id, err := c.reqString("task_id")
			if err != nil {
				return nil, err
			}
			req, err := c.reqString("requester_id")
			if err != nil {
				return nil, err
			}
			cnv, err := c.optString("conversation_id")
			if err != nil {
				return nil, err
			}
			ch, err := c.srv.store.StartTaskFromChat(c.actor(), id, req, cnv)
			if err != nil {
				return nil, err
			}
			return startFromChatResult{Success: true, TaskID: id, PreviousStatus: ch.Previous, NewStatus: ch.Task.Status, RequesterID: req,
				Instruction: c.text("start_task_from_chat.done", req)}, nil
		},
	}
}
