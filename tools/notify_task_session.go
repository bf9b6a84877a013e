package tools

import (
	"context"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/mcp"
)

type notifyTaskResult struct {
	Success          bool   `json:"success"`
	NotificationID   string `json:"notification_id"`
	TargetAgentID    string `json:"target_agent_id"`
	ConversationID   string `json:"conversation_id,omitempty"`
	Type             string `json:"type"`
	Priority         string `json:"priority"`
	TaskSessionAlive bool   `json:"task_session_live"`
	Instruction      string `json:"instruction"`
}

func notifyTaskSessionTool() *tool {
	return &tool{
		perm: ChatOnly,
		def: mcp.NewTool("notify_task_session", opts(writes(),
			mcp.WithDescription("Tell your own task session to read a chat (it gets the note with its next tool call; priority high interrupts it)."),
			mcp.WithString("conversation_id", mcp.Description("The conversation it should read")),
			mcp.WithString("message", mcp.Description("A short summary")),
			mcp.WithString("related_task_id", mcp.Description("The task it is about")),
			mcp.WithString("priority", mcp.Enum(filestore.NotifyNormal, filestore.NotifyHigh), mcp.Description("normal (default) or high (interrupt)")),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			var r filestore.TaskSessionNotice
			var err error
			if r.ConversationID, err = c.optString("conversation_id"); err != nil {
				return nil, err
			}
			if r.Message, err = c.optString("message"); err != nil {
				return nil, err
			}
			if r.RelatedTaskID, err = c.optString("related_task_id"); err != nil {
				return nil, err
			}
			if r.Priority, err = c.optString("priority"); err != nil {
				return nil, err
			}
			n, live, err := c.srv.store.NotifyTaskSession(c.actor(), r)
			if err != nil {
				return nil, err
			}
			out := notifyTaskResult{Success: true, NotificationID: n.ID, TargetAgentID: n.TargetAgentID, ConversationID: n.ConversationID,
				Type: n.Type, Priority: n.Priority, TaskSessionAlive: live,
				Instruction: c.text("notify_task_session.done")}
			if !live {
				out.Instruction = c.text("notify_task_session.no_session")
			}
			return out, nil
		},
	}
}
