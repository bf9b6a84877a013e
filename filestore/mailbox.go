package filestore

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aipm/aipm/filestore/internal/engine"
)

// SystemSender is the pseudo-sender of system messages. It has no mailbox of its own: a
// system message is written only to its receiver.
const SystemSender = "system"

// Limits of the message readers.
const (
	// DefaultMessageLimit is the page size of ConversationMessages and MessagesWith when
	// the caller gives none; MaxMessageLimit caps what a caller may ask for.
	DefaultMessageLimit = 50
	MaxMessageLimit     = 200
	// DefaultContextMessages is how many recent messages RecentMessages returns when the
	// caller gives no count (the original's chat context size).
	DefaultContextMessages = 20
	// unansweredWindow is how many mailbox lines UnansweredSender looks back over. A
	// message further back than that is history, not a pending question.
	unansweredWindow = 200
)

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

// partner returns the other agent of a line of owner's mailbox: the receiver of a sent
// copy, the sender of a received message.
func (m *Message) partner(owner string) string {
	if m.received(owner) {
		return m.SenderID
	}
	return m.ReceiverID
}

func (s *Store) mailboxPath(agentID string) string { return s.path("agents", agentID, "chat.jsonl") }
func (s *Store) cursorPath(agentID string) string {
	return s.path("runtime", "cursors", agentID+".json")
}

// SendRequest is a message to send. The sender is the actor of SendMessage.
type SendRequest struct {
	To            string
	Content       string
	RelatedTaskID string
	// ConversationID names the conversation explicitly. Between two AI agents it is found
	// (and attached) automatically when empty; in any other chat it must be empty.
	ConversationID string
}

// Sent is what SendMessage did.
type Sent struct {
	// Message is the message as the sender's copy holds it, with ReceiverID set (a system
	// message has no sender copy; ReceiverID is set all the same).
	Message Message
	// Conversation is the conversation the message counted a turn in, as it is after the
	// send (Turns, MaxTurns, State); nil for a chat that needs none.
	Conversation *Conversation
	// Terminated is true when this message reached the conversation's max_turns: the
	// conversation is now terminating (reason max_turns). The sender learns it from this
	// answer, so it is recorded as notified; the partner learns it from TakeEndedNotice.
	Terminated bool
}

// SendMessage delivers a message from actor.ID to r.To (SPEC §4.5, seeds 001 and 002): one
// line in the sender's mailbox, with receiverId, and one in the receiver's, without. Both
// are written and fsynced under the store lock before it returns, so an acknowledged
// message is in both mailboxes; the lock also orders them, so every mailbox is in send
// order. A send interrupted between the two is finished later (see deliverLocked). Actor
// SystemSender writes only the receiver's copy.
//
// Checks, in the seeds' order: content 1..MessageMaxChars characters (Unicode code points,
// not bytes: content_too_long / empty_content), not to oneself (cannot_message_self), the
// sender a member, the target existing (agent_not_found) and a member
// (target_agent_not_in_project). Between two AI agents a live conversation is required
// (conversation_required_for_ai_to_ai): an active one, or a pending one the sender started.
// Its id is attached to the message and the message counts a turn; the turn that reaches
// max_turns moves the conversation to terminating. Human↔AI messages need no conversation.
//
// A message is not a history event: the mailboxes are its record. Conversation state
// changes it causes are.
func (s *Store) SendMessage(actor Actor, r SendRequest) (*Sent, error) {
	if err := s.validateSend(actor, r); err != nil {
		return nil, err
	}
	var out *Sent
	err := s.locked(func() error {
		var err error
		out, err = s.sendLocked(actor, r)
		return err
	})
	return out, err
}

// validateSend checks what needs no lock: ids and content.
func (s *Store) validateSend(actor Actor, r SendRequest) error {
	if err := ValidateAgentID(actor.ID); err != nil {
		return err
	}
	if err := ValidateAgentID(r.To); err != nil {
		return err
	}
	if r.RelatedTaskID != "" {
		if err := ValidateEntityID(PrefixTask, r.RelatedTaskID); err != nil {
			return err
		}
	}
	if r.ConversationID != "" {
		if err := ValidateEntityID(PrefixConversation, r.ConversationID); err != nil {
			return err
		}
	}
	if err := s.checkContent("content", r.Content); err != nil {
		return err
	}
	if actor.ID == r.To {
		return newErr(ErrInvalid, "cannot_message_self", "send the message to another agent of the project",
			"agent %s cannot send a message to itself", actor.ID)
	}
	return nil
}

// checkContent enforces the message length: at least one non-space character, at most the
// project's MessageMaxChars characters, counted as Unicode code points (Japanese text
// takes three bytes per character and must not get a third of the room).
func (s *Store) checkContent(field, content string) error {
	p, err := s.ProjectView()
	if err != nil {
		return err
	}
	limit := p.Settings.MaxMessageChars()
	if strings.TrimSpace(content) == "" {
		return newErr(ErrInvalid, "empty_content", "write something to say", "%s is empty", field)
	}
	if n := utf8.RuneCountInString(content); n > limit {
		return newErr(ErrInvalid, "content_too_long", "shorten it, or split it into several messages",
			"%s too long: %d characters (max %d)", field, n, limit)
	}
	return nil
}

// sendLocked is SendMessage under the lock.
func (s *Store) sendLocked(actor Actor, r SendRequest) (*Sent, error) {
	system := actor.ID == SystemSender
	var from *Agent
	if !system {
		var err error
		if from, err = s.Member(actor.ID); err != nil {
			return nil, err
		}
	}
	to, err := s.target(r.To)
	if err != nil {
		return nil, err
	}
	if r.RelatedTaskID != "" {
		if _, err := s.Task(r.RelatedTaskID); err != nil {
			return nil, err
		}
	}
	var c *Conversation
	if !system {
		if c, err = s.routeLocked(from, to, r.ConversationID); err != nil {
			return nil, err
		}
	} else if r.ConversationID != "" {
		return nil, newErr(ErrInvalid, "invalid_argument", "send system messages without a conversation_id",
			"system messages belong to no conversation")
	}
	now := s.Now()
	m := Message{ID: NewID(PrefixMessage, now), SenderID: actor.ID, Content: r.Content, CreatedAt: now, RelatedTaskID: r.RelatedTaskID}
	if c != nil {
		m.ConversationID = c.ID
	}
	if system {
		if err := s.appendMessage(to.ID, m); err != nil {
			return nil, err
		}
		m.ReceiverID = to.ID
		return &Sent{Message: m}, nil
	}
	if err := s.deliverLocked(m, to.ID); err != nil {
		return nil, err
	}
	m.ReceiverID = to.ID
	out := &Sent{Message: m, Conversation: c}
	if c != nil {
		if out.Terminated, err = s.countTurnLocked(actor, c, now); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// target returns the agent a message, conversation or delegation is addressed to: it must
// exist (agent_not_found) and belong to the project (target_agent_not_in_project).
func (s *Store) target(id string) (*Agent, error) {
	a, err := s.Agent(id)
	if err != nil {
		return nil, err
	}
	if a.Status == AgentInactive {
		return nil, newErr(ErrUnauthorized, "target_agent_not_in_project", "address an active member of the project (list them with `aipm agent list`)",
			"target agent %s is not assigned to this project (status inactive)", id)
	}
	return a, nil
}

// appendMessage is appendMailbox (one fsynced line) plus, when the line creates the
// mailbox, an fsync of its directory: without it a crash could lose the new file's name,
// and with it an acknowledged first message.
func (s *Store) appendMessage(agentID string, m Message) error {
	_, statErr := engine.Lstat(s.mailboxPath(agentID))
	if err := s.appendMailbox(agentID, m); err != nil {
		return err
	}
	if errors.Is(statErr, os.ErrNotExist) {
		return engine.SyncDir(filepath.Dir(s.mailboxPath(agentID)))
	}
	return nil
}

// cursor is runtime/cursors/<agent>.json: the byte offset up to which the agent has read its
// mailbox. Reading costs O(new lines), and a line that lands during a read is past the
// offset, so it is never lost (anchor defect 9.4.31).
//
// A mailbox is committed and union-merged, so a `git pull` (above all with --rebase) can
// rewrite it under the cursor: lines from the other clone land before lines this machine
// has read. Check fingerprints the bytes before Offset; when they differ, the cursor is
// rebuilt from the read log (runtime/cursors/<agent>.read.jsonl, the ids of every message
// marked read): Offset moves back to the first unread line, and Skip lists the read
// messages after it. No message is lost and none is delivered twice.
//
// The read log is the agent's, not the machine's: agents/<agent>/reads.jsonl is committed
// and union-merged like the mailbox, so a machine that takes an agent over (its machine
// stopped, or a partition healed) knows what the agent already read elsewhere, and does
// not answer it again. Reads records the log's size when the cursor was written: when
// another machine's marks arrive (the size differs), or this machine has no cursor yet,
// the cursor is rebuilt from the log.
type cursor struct {
	Offset    int64     `json:"offset"`
	Check     string    `json:"offset_check,omitempty"`
	Skip      []string  `json:"skip,omitempty"`
	Reads     int64     `json:"reads_size,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

func (s *Store) readLogOf(agentID string) string {
	return s.path("agents", agentID, "reads.jsonl")
}

// legacyReadLogOf is where a read log lived before it was the agent's (machine-local):
// still read, never written.
func (s *Store) legacyReadLogOf(agentID string) string {
	return s.path("runtime", "cursors", agentID+".read.jsonl")
}

// readLogSize is the size of the agent's read log (0 when it has none).
func (s *Store) readLogSize(agentID string) int64 {
	fi, err := engine.Lstat(s.readLogOf(agentID))
	if err != nil {
		return 0
	}
	return fi.Size()
}

func (s *Store) readCursor(agentID string) (cursor, error) {
	var c cursor
	err := s.readJSON(s.cursorPath(agentID), &c)
	if err != nil && errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	return c, err
}

// currentCursor is the agent's cursor, rebuilt when the mailbox was rewritten under it. A
// cursor written before fingerprints existed (no Check) is taken as it is.
func (s *Store) currentCursor(agentID string) (cursor, error) {
	c, err := s.readCursor(agentID)
	if err != nil {
		return c, err
	}
	reads := s.readLogSize(agentID)
	switch {
	case c.Offset == 0 && reads == 0:
		return c, nil // nothing read, here or elsewhere
	case reads != c.Reads:
		// Another machine's marks arrived, or this one has none of its own yet.
	case c.Offset == 0 || c.Check == "":
		return c, nil
	default:
		got, err := tailCheck(s.mailboxPath(agentID), c.Offset)
		if err != nil {
			return c, err
		}
		if got == c.Check {
			return c, nil
		}
	}
	// Until the next MarkRead writes it, every count would rebuild the cursor from the
	// whole mailbox; the process keeps the rebuilt one while the files stay as they were.
	key, ok := s.rebuildKey(agentID)
	s.rebuiltMu.Lock()
	r, hit := s.rebuilt[agentID]
	s.rebuiltMu.Unlock()
	if ok && hit && r.key == key {
		return r.c, nil
	}
	c, err = s.rebuildCursor(agentID)
	if err == nil && ok {
		s.rebuiltMu.Lock()
		if s.rebuilt == nil {
			s.rebuilt = map[string]rebuiltCursor{}
		}
		s.rebuilt[agentID] = rebuiltCursor{key: key, c: c}
		s.rebuiltMu.Unlock()
	}
	return c, err
}

// rebuiltCursor is a cursor rebuilt from the read log, valid while key (the identities of
// the cursor, the mailbox and the read log) holds.
type rebuiltCursor struct {
	key [3]engine.Stamp
	c   cursor
}

func (s *Store) rebuildKey(agentID string) ([3]engine.Stamp, bool) {
	var k [3]engine.Stamp
	for i, p := range []string{s.cursorPath(agentID), s.mailboxPath(agentID), s.readLogOf(agentID)} {
		fi, err := engine.Lstat(p)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return k, false
		}
		k[i] = engine.StampOf(fi)
	}
	return k, true
}

// rebuildCursor finds, from the read log, the first received message not read and the
// read ones after it.
func (s *Store) rebuildCursor(agentID string) (cursor, error) {
	read := map[string]bool{}
	reads := s.readLogSize(agentID)
	for _, log := range []string{s.legacyReadLogOf(agentID), s.readLogOf(agentID)} {
		err := engine.ScanLines(log, 0, func(l Line) error {
			var m readMarks
			if json.Unmarshal(l.Data, &m) == nil {
				for _, id := range m.IDs {
					read[id] = true
				}
			}
			return nil
		})
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return cursor{}, err
		}
	}
	c := cursor{Reads: reads}
	gap := false // an unread message lies before this line
	err := engine.ScanLines(s.mailboxPath(agentID), 0, func(l Line) error {
		m, ok := parseMessage(l.Data)
		isRead := true
		if ok && m.received(agentID) {
			isRead = read[m.ID]
		}
		switch {
		case !gap && isRead:
			c.Offset = l.Next
		case !isRead:
			gap = true
		case ok && m.received(agentID):
			c.Skip = append(c.Skip, m.ID)
		}
		return nil
	})
	if err != nil {
		return cursor{}, err
	}
	c.Check, err = tailCheck(s.mailboxPath(agentID), c.Offset)
	return c, err
}

// One Unread call returns at most maxUnreadPage messages or about maxUnreadPageBytes of
// them; the rest stay unread for the next call: the read cursor is the page cursor, so
// memory and answers stay bounded however much mail piled up.
const (
	maxUnreadPage      = 500
	maxUnreadPageBytes = 1 << 20
)

// Unread returns the messages the agent received after its read cursor (at most a page, see
// maxUnreadPage), and the offset that marks them read. Pass that offset, not the file's
// size, to MarkRead: a message appended after this read lies beyond it and stays unread.
func (s *Store) Unread(agentID string) ([]Message, int64, error) {
	var out []Message
	size := 0
	next, err := s.scanUnread(agentID, func(m *Message, l Line) bool {
		if len(out) >= maxUnreadPage || size >= maxUnreadPageBytes {
			return false
		}
		out = append(out, *m)
		size += len(l.Data)
		return true
	})
	return out, next, err
}

// scanUnread calls fn with each unread received message after the agent's read cursor
// until fn returns false, and returns the offset past the last line fn took (or passed
// over as not a message to read).
func (s *Store) scanUnread(agentID string, fn func(*Message, Line) bool) (int64, error) {
	if err := ValidateAgentID(agentID); err != nil {
		return 0, err
	}
	c, err := s.currentCursor(agentID)
	if err != nil {
		return 0, err
	}
	path := s.mailboxPath(agentID)
	skip := make(map[string]bool, len(c.Skip))
	for _, id := range c.Skip {
		skip[id] = true
	}
	key := unreadKey{c.Offset, c.Check, strings.Join(c.Skip, "\n")}
	from := c.Offset
	if end, ok := s.unreadFrom(agentID, key, path); ok {
		from = end
	}
	next, end, clean := from, from, true
	err = engine.ScanLines(path, from, func(l Line) error {
		m, ok := parseMessage(l.Data)
		if ok && m.received(agentID) && !skip[m.ID] {
			clean = false
			if !fn(&m, l) {
				return engine.ErrStop
			}
		}
		next = l.Next
		if clean {
			end = l.Next
		}
		return nil
	})
	if err == nil && end > from {
		s.noteUnreadFrom(agentID, key, path, end)
	}
	return next, err
}

// unreadHint is where, in an agent's mailbox, its first unread message can be: no line
// between the read cursor and end is one. An agent that sends and never receives (the
// read cursor stays at the start) would otherwise have every call go over all the
// copies it ever sent.
type unreadHint struct {
	key      unreadKey
	end      int64
	endCheck string // tailCheck at end: the lines before it are the ones gone over
}

// unreadKey is the read cursor a hint was found under.
type unreadKey struct {
	offset      int64
	check, skip string
}

// unreadFrom returns where to look for the agent's unread messages under the read cursor
// key, when this process went over the mailbox before and its lines up to there are still
// the same.
func (s *Store) unreadFrom(agentID string, key unreadKey, path string) (int64, bool) {
	s.unreadMu.Lock()
	h, ok := s.unreadHints[agentID]
	s.unreadMu.Unlock()
	if !ok || h.key != key {
		return 0, false
	}
	got, err := tailCheck(path, h.end)
	return h.end, err == nil && got == h.endCheck
}

// noteUnreadFrom records that no unread message of the agent lies before end.
func (s *Store) noteUnreadFrom(agentID string, key unreadKey, path string, end int64) {
	check, err := tailCheck(path, end)
	if err != nil || check == "" {
		return
	}
	s.unreadMu.Lock()
	defer s.unreadMu.Unlock()
	if s.unreadHints == nil {
		s.unreadHints = map[string]unreadHint{}
	}
	s.unreadHints[agentID] = unreadHint{key, end, check}
}

// parseMessage decodes a mailbox line; ok is false for a line that is no message (no id or
// no sender: a broken or hostile line, which doctor reports). Lines without an "id" key are
// passed over without decoding.
func parseMessage(line []byte) (m Message, ok bool) {
	if !bytes.Contains(line, []byte(`"id"`)) {
		return m, false
	}
	if json.Unmarshal(line, &m) != nil || m.ID == "" || m.SenderID == "" {
		return m, false
	}
	return m, true
}

// UnreadCount counts unread received messages, all of them, holding none in memory.
func (s *Store) UnreadCount(agentID string) (int, error) {
	n := 0
	_, err := s.scanUnread(agentID, func(*Message, Line) bool { n++; return true })
	return n, err
}

// MarkRead moves the agent's read cursor forward to offset (never backward).
func (s *Store) MarkRead(agentID string, offset int64) error {
	if err := ValidateAgentID(agentID); err != nil {
		return err
	}
	return s.locked(func() error { return s.markReadLocked(agentID, offset) })
}

// markReadLocked records the received messages between the cursor and offset in the read
// log, then moves the cursor. The caller holds the lock.
func (s *Store) markReadLocked(agentID string, offset int64) error {
	c, err := s.currentCursor(agentID)
	if err != nil {
		return err
	}
	if offset <= c.Offset {
		return nil
	}
	var ids []string
	passed := map[string]bool{} // skipped messages the cursor moves past
	skipping := make(map[string]bool, len(c.Skip))
	for _, id := range c.Skip {
		skipping[id] = true
	}
	err = engine.ScanLines(s.mailboxPath(agentID), c.Offset, func(l Line) error {
		if l.Next > offset {
			return engine.ErrStop
		}
		m, ok := parseMessage(l.Data)
		if !ok || !m.received(agentID) {
			return nil
		}
		if skipping[m.ID] {
			passed[m.ID] = true
			return nil
		}
		ids = append(ids, m.ID)
		return nil
	})
	if err != nil {
		return err
	}
	var skip []string
	for _, id := range c.Skip {
		if !passed[id] {
			skip = append(skip, id)
		}
	}
	if len(ids) > 0 {
		if err := EnsureDir(filepath.Dir(s.readLogOf(agentID))); err != nil {
			return err
		}
		if err := engine.AppendLine(s.readLogOf(agentID), readMarks{At: s.Now(), IDs: ids}, false); err != nil {
			return err
		}
	}
	check, err := tailCheck(s.mailboxPath(agentID), offset)
	if err != nil {
		return err
	}
	return engine.WriteJSON(s.cursorPath(agentID), cursor{Offset: offset, Check: check, Skip: skip, Reads: s.readLogSize(agentID), UpdatedAt: s.Now()}, 0o644)
}

// TakeUnread returns the agent's unread messages, oldest first, and marks them read, in one
// step under the store lock: two readers of one mailbox never both get the same message,
// and a message arriving meanwhile stays unread for the next call.
func (s *Store) TakeUnread(agentID string) ([]Message, error) {
	if err := ValidateAgentID(agentID); err != nil {
		return nil, err
	}
	var out []Message
	err := s.locked(func() error {
		// A send to this reader killed between its two lines is finished first.
		if _, err := s.finishDeliveryLocked(agentID); err != nil {
			return err
		}
		msgs, next, err := s.Unread(agentID)
		if err != nil {
			return err
		}
		out = msgs
		return s.markReadLocked(agentID, next)
	})
	return out, err
}

// RecentMessages returns the last n messages of the agent's mailbox, sent and received,
// oldest first: the context a chat session reads before answering. n <= 0 means
// DefaultContextMessages; n is capped at MaxMessageLimit. Only the tail of the mailbox is
// read, so the cost does not grow with its history.
func (s *Store) RecentMessages(agentID string, n int) ([]Message, error) {
	if err := ValidateAgentID(agentID); err != nil {
		return nil, err
	}
	if n <= 0 {
		n = DefaultContextMessages
	}
	page, err := s.lastMessages(agentID, min(n, MaxMessageLimit), nil)
	if err != nil {
		return nil, err
	}
	return page.Messages, nil
}

// MessagePage is a page of a mailbox: the last messages that matched, oldest first, and
// whether older ones matched too.
type MessagePage struct {
	Messages  []Message
	Truncated bool
}

// MessagesWith returns the last messages between the agent and partner, both directions,
// from the agent's own mailbox: a human chat's log. limit <= 0 means DefaultMessageLimit;
// it is capped at MaxMessageLimit.
func (s *Store) MessagesWith(agentID, partnerID string, limit int) (*MessagePage, error) {
	if err := ValidateAgentID(agentID); err != nil {
		return nil, err
	}
	if err := ValidateAgentID(partnerID); err != nil {
		return nil, err
	}
	return s.lastMessages(agentID, pageLimit(limit), func(m *Message) (bool, bool) {
		return m.partner(agentID) == partnerID, true
	})
}

func pageLimit(limit int) int {
	if limit <= 0 {
		return DefaultMessageLimit
	}
	return min(limit, MaxMessageLimit)
}

// lastMessages walks the agent's mailbox backward and collects up to limit messages that
// match (nil matches all). match also says whether to go on: a reader that knows no older
// line can match stops early.
func (s *Store) lastMessages(agentID string, limit int, match func(*Message) (ok, more bool)) (*MessagePage, error) {
	page := &MessagePage{Messages: []Message{}}
	err := scanBack(s.mailboxPath(agentID), func(line []byte) bool {
		var m Message
		if json.Unmarshal(line, &m) != nil {
			return true // doctor reports it
		}
		ok, more := true, true
		if match != nil {
			ok, more = match(&m)
		}
		if ok {
			if len(page.Messages) == limit {
				page.Truncated = true
				return false
			}
			page.Messages = append(page.Messages, m)
		}
		return more
	})
	if err != nil {
		return nil, err
	}
	for i, j := 0, len(page.Messages)-1; i < j; i, j = i+1, j-1 {
		page.Messages[i], page.Messages[j] = page.Messages[j], page.Messages[i]
	}
	return page, nil
}

// UnansweredSender returns the sender of the oldest received message the agent has not
// answered — no message from the agent to that sender follows it — among the last
// unansweredWindow lines of its mailbox; "" if there is none. respond_chat replies to it.
// System messages cannot be answered and are passed over.
func (s *Store) UnansweredSender(agentID string) (string, error) {
	if err := ValidateAgentID(agentID); err != nil {
		return "", err
	}
	answered := map[string]bool{}
	oldest, seen := "", 0
	err := scanBack(s.mailboxPath(agentID), func(line []byte) bool {
		seen++
		var m Message
		if json.Unmarshal(line, &m) != nil {
			return seen < unansweredWindow
		}
		switch {
		case m.SenderID == agentID && m.ReceiverID != "":
			answered[m.ReceiverID] = true
		case m.received(agentID) && m.SenderID != SystemSender && !answered[m.SenderID]:
			oldest = m.SenderID
		}
		return seen < unansweredWindow
	})
	return oldest, err
}

// scanBack calls fn with each complete line of a JSONL file, last line first, until fn
// returns false. It reads the file backward in chunks, so a reader of the recent past pays
// for the part it visits, not for the mailbox's whole history. A last line without '\n' (a
// write in progress or a crash's leftover) is not a line yet and is skipped.
func scanBack(path string, fn func(line []byte) bool) error {
	b, err := openBack(path)
	if err != nil || b == nil {
		return err
	}
	defer b.close()
	for {
		line, ok, err := b.prev()
		if err != nil || !ok || !fn(line) {
			return err
		}
	}
}

// backLines reads the complete lines of a JSONL file last first (scanBack). A line it
// returns stays valid after the next call: each chunk is read into memory of its own.
type backLines struct {
	f       *os.File
	size    int64  // the file's size when opened
	pos     int64  // where the bytes not read yet end
	rest    []byte // read bytes before the lines already returned; ends with '\n' once trimmed
	trimmed bool   // the torn tail, if any, is cut off
	torn    int64  // bytes after the last '\n': a torn last line
	// reuse, once set, lets the next chunks be read into the memory of the ones before:
	// a line returned is then valid only until the next call. arr is that memory.
	reuse bool
	arr   []byte
}

// reuseChunks makes the reads from now on reuse their memory (see reuse): a caller that
// keeps no line past the next call reads a long file without allocating as it goes.
func (b *backLines) reuseChunks() { b.reuse, b.arr = true, nil }

// openBack opens path for reading backward; nil, nil when the file does not exist.
func openBack(path string) (*backLines, error) {
	f, err := engine.OpenRead(path, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &backLines{f: f, size: info.Size(), pos: info.Size(), torn: info.Size()}, nil
}

func (b *backLines) close() { b.f.Close() }

// prev returns the line before the last one returned; ok is false at the file's start.
func (b *backLines) prev() (line []byte, ok bool, err error) {
	const chunk = 64 << 10
	for {
		if b.trimmed && len(b.rest) > 0 {
			j := bytes.LastIndexByte(b.rest[:len(b.rest)-1], '\n')
			if j >= 0 || b.pos == 0 {
				line, b.rest = b.rest[j+1:len(b.rest)-1], b.rest[:j+1]
				return line, true, nil
			}
		}
		if b.pos == 0 {
			return nil, false, nil
		}
		if len(b.rest) > engine.MaxLine+1 {
			// A line (or torn tail) over MaxLine, from a hostile or broken file: skipped,
			// not assembled, so that reading past it costs its length once, not its
			// length squared.
			i, err := lastNewline(b.f, b.pos)
			if err != nil || i < 0 {
				return nil, false, err
			}
			if !b.trimmed {
				b.torn = b.size - (i + 1)
			}
			b.rest, b.pos, b.trimmed = nil, i+1, true
			continue
		}
		start := max(b.pos-chunk, 0)
		n, need := b.pos-start, b.pos-start+int64(len(b.rest))
		var buf []byte
		if b.reuse && int64(cap(b.arr)) >= need {
			// rest is the start of arr: it moves up, the chunk is read in before it.
			buf = b.arr[:need]
			copy(buf[n:], b.rest)
		} else {
			c := need
			if b.reuse {
				c = max(need, 2*chunk)
			}
			buf = make([]byte, need, c)
			copy(buf[n:], b.rest)
			if b.reuse {
				b.arr = buf
			}
		}
		if _, err := b.f.ReadAt(buf[:n], start); err != nil && !errors.Is(err, io.EOF) {
			return nil, false, err
		}
		b.rest = buf
		b.pos = start
		if !b.trimmed {
			i := bytes.LastIndexByte(b.rest, '\n')
			if i < 0 {
				continue // still inside the torn tail
			}
			b.torn = int64(len(b.rest) - i - 1)
			b.rest, b.trimmed = b.rest[:i+1], true
		}
	}
}

// lastNewline is the offset of the last '\n' of f before end, -1 if there is none.
func lastNewline(f *os.File, end int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for end > 0 {
		start := max(end-int64(len(buf)), 0)
		b := buf[:end-start]
		if _, err := f.ReadAt(b, start); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			return start + int64(i), nil
		}
		end = start
	}
	return -1, nil
}

// ChatState is runtime/chat/<agent>.json: whether a human has a chat with the AI agent
// open (`aipm chat open|close`). Git-ignored: it is about live sessions on this machine.
type ChatState struct {
	AgentID   string     `json:"agent_id"`
	Open      bool       `json:"open"`
	OpenedBy  string     `json:"opened_by"`
	OpenedAt  *time.Time `json:"opened_at"`
	ClosedBy  string     `json:"closed_by"`
	ClosedAt  *time.Time `json:"closed_at"`
	UpdatedAt time.Time  `json:"updated_at"`
	Version   int        `json:"version"`
}

func (s *Store) chatStatePath(agentID string) string {
	return s.path("runtime", "chat", agentID+".json")
}

// Chat returns the agent's chat state; an agent nobody ever opened a chat with has a
// closed zero state.
func (s *Store) Chat(agentID string) (*ChatState, error) {
	if err := ValidateAgentID(agentID); err != nil {
		return nil, err
	}
	st := ChatState{AgentID: agentID}
	if err := s.readJSON(s.chatStatePath(agentID), &st); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return &st, nil
}

// OpenChat records that a human (the actor) opened a chat with an AI agent. Until a chat
// session of the agent starts, that is chat work: the coordinator starts one even though no
// message is waiting (the original appended a system message for this; a flag leaves the
// mailbox to real messages). Opening an open chat only renews it.
func (s *Store) OpenChat(actor Actor, agentID string) (*ChatState, error) {
	return s.setChat(actor, agentID, true)
}

// CloseChat records that the human closed the chat: every chat session of the agent that
// started before now is told to exit (see ChatClosed). Closing a closed chat changes
// nothing.
func (s *Store) CloseChat(actor Actor, agentID string) (*ChatState, error) {
	return s.setChat(actor, agentID, false)
}

func (s *Store) setChat(actor Actor, agentID string, open bool) (*ChatState, error) {
	if err := ValidateAgentID(actor.ID); err != nil {
		return nil, err
	}
	if err := ValidateAgentID(agentID); err != nil {
		return nil, err
	}
	var st *ChatState
	err := s.locked(func() error {
		h, err := s.Member(actor.ID)
		if err != nil {
			return err
		}
		if h.Type != AgentHuman {
			return newErr(ErrUnauthorized, "unauthorized", "AI agents talk to each other with start_conversation",
				"agent %s is not human: only humans open and close chats", actor.ID)
		}
		a, err := s.target(agentID)
		if err != nil {
			return err
		}
		if a.Type != AgentAI {
			return newErr(ErrInvalid, "invalid_argument", "open a chat with an AI agent; humans read their mailbox with `aipm chat log`",
				"agent %s is human and has no chat sessions", agentID)
		}
		if st, err = s.Chat(agentID); err != nil {
			return err
		}
		if !open && !st.Open && st.ClosedAt != nil {
			return nil
		}
		now := s.Now()
		change := "closed"
		if open {
			st.Open, st.OpenedBy, st.OpenedAt = true, actor.ID, &now
			change = "opened"
		} else {
			st.Open, st.ClosedBy, st.ClosedAt = false, actor.ID, &now
		}
		st.UpdatedAt = now
		st.Version++
		if err := engine.WriteJSON(s.chatStatePath(agentID), st, 0o644); err != nil {
			return err
		}
		return s.appendEvent(Event{At: now, Actor: actor.ID, Via: actor.Via, Entity: "chat", ID: agentID, Change: change})
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// ChatClosed reports whether a human closed the agent's chat at or after since (the start
// of the asking chat session) and has not reopened it: that session's get_next_action
// answers exit. A session started after the close was started for new work and goes on.
func (s *Store) ChatClosed(agentID string, since time.Time) (bool, error) {
	st, err := s.Chat(agentID)
	if err != nil {
		return false, err
	}
	return !st.Open && st.ClosedAt != nil && !st.ClosedAt.Before(since), nil
}

// chatOpenedUnserved reports whether a human opened the chat after the agent's latest chat
// session started (lastChat is zero when it never had one): such a chat still waits for a
// session, which is chat work.
func (st *ChatState) chatOpenedUnserved(lastChat time.Time) bool {
	return st.Open && st.OpenedAt != nil && st.OpenedAt.After(lastChat)
}

// appendMailbox appends one message line to an agent's mailbox, durably (a message is
// acknowledged only once it is on disk). The caller holds the store lock. It writes one
// mailbox only: system messages have no sender copy.
func (s *Store) appendMailbox(agentID string, m Message) error {
	if err := ValidateAgentID(agentID); err != nil {
		return err
	}
	return engine.AppendLine(s.mailboxPath(agentID), m, true)
}

// LastSender returns the sender of the most recent message the agent received, system
// messages aside, or "" if there is none: in a chat session, whoever spoke last is who
// asked for what the agent is doing (the original's requester of request_task).
func (s *Store) LastSender(agentID string) (string, error) {
	senders, err := s.recentSenders(agentID, 1)
	if err != nil || len(senders) == 0 {
		return "", err
	}
	return senders[0], nil
}
