package tools

import (
	"context"
	"time"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/mcp"
)

type conversationView struct {
	ConversationID string     `json:"conversation_id"`
	InitiatorID    string     `json:"initiator_id"`
	ParticipantID  string     `json:"participant_id"`
	Purpose        string     `json:"purpose,omitempty"`
	State          string     `json:"state"`
	Turns          int        `json:"turns"`
	MaxTurns       int        `json:"max_turns"`
	EndReason      string     `json:"end_reason,omitempty"`
	CreatedAt      time.Time  `json:"created_at"`
	EndedAt        *time.Time `json:"ended_at,omitempty"`
}

func viewConversation(cv *filestore.Conversation) conversationView {
	return conversationView{ConversationID: cv.ID, InitiatorID: cv.InitiatorID, ParticipantID: cv.ParticipantID, Purpose: cv.Purpose,
		State: cv.State, Turns: cv.Turns, MaxTurns: cv.MaxTurns, EndReason: cv.EndReason, CreatedAt: cv.CreatedAt, EndedAt: cv.EndedAt}
}

type taskConversationsResult struct {
	TaskID        string             `json:"task_id"`
	Conversations []conversationView `json:"conversations"`
	Delegations   []delegationView   `json:"delegations"`
	Instruction   string             `json:"instruction"`
}

func getTaskConversationsTool() *tool {
	return &tool{
		perm: TaskOnly,
		def: mcp.NewTool("get_task_conversations", opts(readOnly(),
			mcp.WithDescription("The conversations and delegations tied to your session's task, with their states and results."),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			st := c.srv.store
			task := c.session.TaskID
			cvs, err := st.Conversations(filestore.ConversationFilter{TaskID: task})
			if err != nil {
				return nil, err
			}
			dels, err := st.Delegations(filestore.DelegationFilter{TaskID: task})
			if err != nil {
				return nil, err
			}
			out := taskConversationsResult{TaskID: task, Conversations: []conversationView{}, Delegations: []delegationView{}}
			for _, cv := range cvs {
				out.Conversations = append(out.Conversations, viewConversation(cv))
			}
			open := 0
			for _, d := range dels {
				out.Delegations = append(out.Delegations, viewDelegation(d))
				if !d.Finished() {
					open++
				}
			}
			out.Instruction = c.text("get_task_conversations.done")
			if open > 0 {
				out.Instruction = c.text("get_task_conversations.open")
			}
			return out, nil
		},
	}
}
