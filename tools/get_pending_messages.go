package tools

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

type messageView struct {
	ID             string    `json:"id"`
	SenderID       string    `json:"sender_id"`
	Content        string    `json:"content"`
	CreatedAt      time.Time `json:"created_at"`
	RelatedTaskID  string    `json:"related_task_id,omitempty"`
	ConversationID string    `json:"conversation_id,omitempty"`
}

type pendingMessagesResult struct {
	Messages    []messageView `json:"messages"`
	Count       int           `json:"count"`
	Instruction string        `json:"instruction"`
}

func getPendingMessagesTool() *tool {
	return &tool{
		perm: ChatOnly,
		def: mcp.NewTool("get_pending_messages", opts(writes(),
			mcp.WithDescription("Messages you have not read yet, oldest first. Marks them read."),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			st := c.srv.store
			msgs, next, err := st.Unread(c.agent.ID)
			if err != nil {
				return nil, err
			}
			if err := st.MarkRead(c.agent.ID, next); err != nil {
				return nil, err
			}
			out := pendingMessagesResult{Messages: make([]messageView, 0, len(msgs)), Count: len(msgs)}
			for _, m := range msgs {
				out.Messages = append(out.Messages, messageView{ID: m.ID, SenderID: m.SenderID, Content: m.Content,
					CreatedAt: m.CreatedAt, RelatedTaskID: m.RelatedTaskID, ConversationID: m.ConversationID})
			}
			out.Instruction = "No unread messages."
			if len(msgs) > 0 {
				out.Instruction = "Read these messages and answer each sender."
			}
			return out, nil
		},
	}
}
