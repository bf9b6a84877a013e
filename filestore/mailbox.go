package filestore

import (
	"encoding/json"
	"errors"
	"os"
	"time"
)

// SystemSender is the pseudo-sender of system messages.
const SystemSender = "system"

// Message is one line of agents/<id>/chat.jsonl, in the original system's format so that
// mailboxes it wrote stay readable: camelCase keys, receiverId only in the sender's copy.
type Message struct {
	ID             string    `json:"id"`
	SenderID       string    `json:"senderId"`
	ReceiverID     string    `json:"receiverId,omitempty"`
	Content        string    `json:"content"`
	CreatedAt      time.Time `json:"createdAt"`
	RelatedTaskID  string    `json:"relatedTaskId,omitempty"`
	ConversationID string    `json:"conversationId,omitempty"`
}

// received reports whether the line is a message the mailbox owner received (the owner's
// sent copies carry receiverId).
func (m *Message) received(owner string) bool {
	return m.ReceiverID == "" && m.SenderID != owner
}

func (s *Store) mailboxPath(agentID string) string { return s.path("agents", agentID, "chat.jsonl") }
func (s *Store) cursorPath(agentID string) string {
	return s.path("runtime", "cursors", agentID+".json")
}

// cursor is runtime/cursors/<agent>.json: the byte offset up to which the agent has read its
// mailbox. Reading costs O(new lines), and a line that lands during a read is past the
// offset, so it is never lost (anchor defect 9.4.31).
type cursor struct {
	Offset    int64     `json:"offset"`
	UpdatedAt time.Time `json:"updated_at"`
}

func (s *Store) readCursor(agentID string) (cursor, error) {
	var c cursor
	err := s.readJSON(s.cursorPath(agentID), &c)
	if err != nil && errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	return c, err
}

// Unread returns the messages the agent received after its read cursor, and the offset that
// marks them read.
func (s *Store) Unread(agentID string) ([]Message, int64, error) {
	if err := ValidateAgentID(agentID); err != nil {
		return nil, 0, err
	}
	c, err := s.readCursor(agentID)
	if err != nil {
		return nil, 0, err
	}
	lines, err := readLines(s.mailboxPath(agentID), c.Offset)
	if err != nil {
		return nil, 0, err
	}
	next := c.Offset
	var out []Message
	for _, l := range lines {
		next = l.Next
		var m Message
		if json.Unmarshal(l.Data, &m) != nil {
			continue // doctor reports it
		}
		if m.received(agentID) {
			out = append(out, m)
		}
	}
	return out, next, nil
}

// UnreadCount counts unread received messages.
func (s *Store) UnreadCount(agentID string) (int, error) {
	msgs, _, err := s.Unread(agentID)
	return len(msgs), err
}

// MarkRead moves the agent's read cursor forward to offset (never backward).
func (s *Store) MarkRead(agentID string, offset int64) error {
	if err := ValidateAgentID(agentID); err != nil {
		return err
	}
	return s.locked(func() error {
		c, err := s.readCursor(agentID)
		if err != nil {
			return err
		}
		if offset <= c.Offset {
			return nil
		}
		return writeJSON(s.cursorPath(agentID), cursor{Offset: offset, UpdatedAt: s.Now()}, 0o644)
	})
}
