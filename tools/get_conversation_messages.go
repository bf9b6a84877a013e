package tools

import (
	"context"
	"time"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/mcp"
)

type conversationMessagesResult struct {
	Success        bool          `json:"success"`
	ConversationID string        `json:"conversation_id,omitempty"`
	PartnerAgentID string        `json:"partner_agent_id"`
	State          string        `json:"state,omitempty"`
	Messages       []messageView `json:"messages"`
	Count          int           `json:"count"`
	// TotalCount is seed 000's name for count: the messages returned.
	TotalCount  int    `json:"total_count"`
	Truncated   bool   `json:"truncated"`
	Instruction string `json:"instruction"`
}

// messageView is a message as get_conversation_messages shows it (seed 000).
type messageView struct {
	ID            string    `json:"id"`
	SenderID      string    `json:"sender_id"`
	SenderName    string    `json:"sender_name"`
	Content       string    `json:"content"`
	CreatedAt     time.Time `json:"created_at"`
	RelatedTaskID string    `json:"related_task_id,omitempty"`
}

func (c *call) viewMessages(ms []filestore.Message) []messageView {
	names := map[string]string{}
	out := make([]messageView, 0, len(ms))
	for _, m := range ms {
		name, ok := names[m.SenderID]
		if !ok {
			name = m.SenderID
			if a, err := c.srv.store.Agent(m.SenderID); err == nil && a.Name != "" {
				name = a.Name
			}
			names[m.SenderID] = name
		}
		out = append(out, messageView{ID: m.ID, SenderID: m.SenderID, SenderName: name, Content: m.Content, CreatedAt: m.CreatedAt, RelatedTaskID: m.RelatedTaskID})
	}
	return out
}

func getConversationMessagesTool() *tool {
	return &tool{
		perm: TaskOnly,
		def: mcp.NewTool("get_conversation_messages", opts(readOnly(),
			mcp.WithDescription("Read what your chat session said and heard: a conversation by id, or the chat with a human by partner_agent_id. Oldest first."),
			mcp.WithString("conversation_id", mcp.Description("The conversation")),
			mcp.WithString("partner_agent_id", mcp.Description("Instead of conversation_id: the other side of a chat (e.g. a human)")),
			mcp.WithInteger("limit", mcp.Min(1), mcp.Max(filestore.MaxMessageLimit), mcp.Description("Last messages to return (default 50)")),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			id, err := c.optString("conversation_id")
			if err != nil {
				return nil, err
			}
			partner, err := c.optString("partner_agent_id")
			if err != nil {
				return nil, err
			}
			limit, err := c.optInt("limit", filestore.DefaultMessageLimit)
			if err != nil {
				return nil, err
			}
			if limit < 1 || limit > filestore.MaxMessageLimit {
				return nil, badArg("limit", "must be 1..%d (got %d)", filestore.MaxMessageLimit, limit)
			}
			st := c.srv.store
			switch {
			case id != "":
				cv, page, err := st.ConversationMessages(c.agent.ID, id, limit)
				if err != nil {
					return nil, err
				}
				return conversationMessagesResult{Success: true, ConversationID: cv.ID, PartnerAgentID: cv.Partner(c.agent.ID), State: cv.State,
					Messages: c.viewMessages(page.Messages), Count: len(page.Messages), TotalCount: len(page.Messages), Truncated: page.Truncated,
					Instruction: c.text("get_conversation_messages.done")}, nil
			case partner != "":
				page, err := st.MessagesWith(c.agent.ID, partner, limit)
				if err != nil {
					return nil, err
				}
				return conversationMessagesResult{Success: true, PartnerAgentID: partner, Messages: c.viewMessages(page.Messages), Count: len(page.Messages),
					TotalCount: len(page.Messages), Truncated: page.Truncated, Instruction: c.text("get_conversation_messages.done")}, nil
			}
			return nil, badArg("conversation_id", "give conversation_id or partner_agent_id")
		},
	}
}
