package tools

import (
	"context"
	"time"
)

// chatNextAction is the chat session's get_next_action (SPEC §6.3): unread messages first;
// otherwise it waits for the mailbox to change and then answers wait_for_messages.
func (c *call) chatNextAction(ctx context.Context, timeout time.Duration) (any, error) {
	st := c.srv.store
	me := c.agent.ID
	return c.longPoll(ctx, timeout, []string{"agents/" + me + "/chat.jsonl"}, func() (any, bool, error) {
		n, err := st.UnreadCount(me)
		if err != nil {
			return nil, true, err
		}
		if n > 0 {
			return map[string]any{"action": "get_pending_messages", "state": "chat_session", "unread_count": n,
				"instruction": "Call get_pending_messages, then answer with send_message. Chat sessions talk; real work happens in task sessions."}, true, nil
		}
		return map[string]any{"action": "wait_for_messages", "state": "chat_waiting",
			"instruction": "Nothing pending. Call get_next_action again right away: it waits for new messages. Do not sleep."}, false, nil
	})
}
