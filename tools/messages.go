package tools

import (
	"context"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/aipm/aipm/filestore"
	"github.com/aipm/aipm/filestore/msg"
)

// Message notifications (SPEC §4.8, seed 004): a message for an agent whose chat session is
// live but busy — not waiting in get_next_action, which the message wakes — becomes a
// `message` notification for that session, so that its next tool response says a
// notification waits. The process serving the session notices the message through its
// watcher, whoever wrote it (another agent, `aipm chat send`, a `git pull`). Reading the
// messages with get_pending_messages marks these notifications read.

// messageExcerpt is how much of a message its notification quotes, in characters.
const messageExcerpt = 200

// runMessages derives message notifications until ctx ends.
func (s *Server) runMessages(ctx context.Context) {
	sub := s.hub.SubscribePaths("agents/")
	defer sub.Close()
	for {
		select {
		case <-ctx.Done():
			return
		case <-sub.C:
		}
		s.deriveMessages(mailboxesIn(sub.Paths()))
	}
}

// mailboxesIn returns the agents whose mailbox a batch of changed paths names; nil when
// the batch may hold any mailbox (a rescan, a directory).
func mailboxesIn(paths []string) map[string]bool {
	out := map[string]bool{}
	for _, p := range paths {
		rest, ok := strings.CutPrefix(p, "agents/")
		if !ok {
			return nil
		}
		agent, file, ok := strings.Cut(rest, "/")
		if !ok || strings.Contains(file, "/") {
			return nil
		}
		if file == "chat.jsonl" {
			out[agent] = true
		}
	}
	return out
}

// waitFor marks the session as waiting in get_next_action until the returned func is
// called. The messages unread when the wait ends were the wait's to report (it answers
// get_pending_messages for them), so no notification follows for them even if the
// watcher reports them late.
func (s *Server) waitFor(se *filestore.Session) func() {
	s.mu.Lock()
	s.waiting[se.ID]++
	s.mu.Unlock()
	return func() {
		s.msgMu.Lock()
		defer s.msgMu.Unlock()
		msgs, _, err := s.store.Unread(se.AgentID)
		if err != nil {
			s.log("messages of %s: %v", se.AgentID, err)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, m := range msgs {
			if m.ID > s.msgSeen[se.ID] {
				s.msgSeen[se.ID] = m.ID
			}
		}
		s.waiting[se.ID]--
		if s.waiting[se.ID] <= 0 {
			delete(s.waiting, se.ID)
		}
	}
}

// deriveMessages looks at the chat sessions this process serves whose agent's mailbox
// changed (every one of them when mailboxes is nil).
func (s *Server) deriveMessages(mailboxes map[string]bool) {
	if mailboxes != nil && len(mailboxes) == 0 {
		return
	}
	changed := func(_ string, o ownedSession) bool { return mailboxes == nil || mailboxes[o.agent] }
	for _, se := range s.served(filestore.PurposeChat, changed) {
		if err := s.deriveMessagesFor(se); err != nil {
			s.log("message notifications for %s: %v", se.ID, err)
		}
	}
}

// deriveMessagesFor notifies the chat session of unread messages it has not been told of,
// unless it is waiting for them. Messages from before the session started are the work it
// was started for, not news.
func (s *Server) deriveMessagesFor(se *filestore.Session) error {
	s.msgMu.Lock()
	defer s.msgMu.Unlock()
	msgs, _, err := s.store.Unread(se.AgentID)
	if err != nil {
		return err
	}
	s.mu.Lock()
	waiting := s.waiting[se.ID] > 0
	last := s.msgSeen[se.ID]
	s.mu.Unlock()
	lang, limit := "", 0
	if p, err := s.store.Project(); err == nil {
		lang, limit = p.Settings.Language, p.Settings.MaxMessageChars()
	}
	for _, m := range msgs {
		if m.ID <= last || m.CreatedAt.Before(se.CreatedAt) {
			continue
		}
		last = m.ID
		if waiting {
			continue
		}
		// Texts are bounded like messages (message_max_chars), however small the setting.
		n := filestore.Notification{TargetAgentID: se.AgentID, TargetPurpose: filestore.PurposeChat, TargetSessionID: se.ID,
			Type: filestore.NotifyMessage, Action: "new_message", FromAgentID: m.SenderID, ConversationID: m.ConversationID,
			Message:     clipRunes(msg.Text(lang, "message.new", m.SenderID, clipRunes(m.Content, messageExcerpt)), limit),
			Instruction: clipRunes(msg.Text(lang, "message.read"), limit),
			Key:         "message:" + m.ID + ":" + se.ID}
		if _, _, err := s.store.AddNotification(filestore.Actor{ID: "system", Via: filestore.ViaFile}, n); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.msgSeen[se.ID] = last
	s.mu.Unlock()
	return nil
}

// readMessageNotices marks the session's unread message notifications read: it has just
// read the messages themselves.
func (c *call) readMessageNotices() error {
	if c.summary().Unread == 0 {
		return nil
	}
	ns, err := c.srv.store.SessionNotifications(c.session, true)
	if err != nil {
		return err
	}
	var ids []string
	for _, n := range ns {
		if n.Type == filestore.NotifyMessage && !slices.Contains(ids, n.ID) {
			ids = append(ids, n.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	c.sum = nil
	return c.srv.store.MarkNotificationsRead(c.session, ids)
}

// clipRunes cuts s to at most n characters, the last of them "…" when it cuts (n <= 0: no
// bound).
func clipRunes(s string, n int) string {
	if n <= 0 || utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
