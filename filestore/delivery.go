package filestore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"time"
	"unicode/utf8"

	"github.com/aipm/aipm/filestore/internal/engine"
)

// A message is two lines: the sender's copy (with receiverId) and the receiver's. They are
// two appends to two files, and a process killed between them, or a disk that fills up
// after the first, would leave the message in the sender's mailbox only: sent as far as the
// sender can see, never received. So a send first records what it is delivering in
// runtime/journal/delivery.json (fsynced), then appends both lines, then empties the record. A
// write that fails is undone (undoDelivery). A record found non-empty means a send was
// killed: whoever takes the store lock next to send, or the receiver reading its messages,
// finishes it (finishDeliveryLocked), and `aipm doctor --repair` does too. Found by
// message id, a copy already there is never written twice.
//
// The record covers this machine. Check also compares the recent lines of every mailbox
// with their receivers' (unpairedMessages), which finds a message in one mailbox only
// whatever left it there, and RepairDeliveries appends the missing copies.

// deliveryRecord is runtime/journal/delivery.json while a send is under way.
type deliveryRecord struct {
	To      string  `json:"to"`
	Message Message `json:"message"` // the receiver's copy: no receiverId
}

func (s *Store) deliveryPath() string { return s.path(JournalDir, "delivery.json") }

// deliveryFault, when set (by tests), runs between the sender's append and the receiver's:
// it stands for a kill (a panic) or a failed write (an error) at the worst moment.
var deliveryFault func() error

// pairWindow is how many of the last lines of each mailbox unpairedMessages checks for sent
// copies: an interrupted send leaves its line near the end.
const pairWindow = 1000

// pairSlack is how far before the oldest sent copy looked for a receiver's mailbox is read
// back: lines merged from other clones need not be in time order.
const pairSlack = 24 * time.Hour

// deliverLocked is the dual write: the sender's copy (with receiverId) first, then the
// receiver's (without), each fsynced, between a record of the delivery and its clearing.
// A write that fails (a full disk, a mailbox aipm refuses to open) undoes what the send
// wrote, so the message is in neither mailbox and the sender gets the error; only a send
// that cannot undo, or a process killed on the way, leaves the record for the next one to
// finish. The caller holds the store lock.
func (s *Store) deliverLocked(m Message, to string) error {
	if _, err := s.finishDeliveryLocked(""); err != nil {
		return fmt.Errorf("an earlier message, interrupted while being sent, cannot be delivered: %w", err)
	}
	m.ReceiverID = ""
	rec, err := json.Marshal(deliveryRecord{To: to, Message: m})
	if err != nil {
		return err
	}
	if err := s.writeDeliveryRecord(append(rec, '\n'), true); err != nil {
		return err
	}
	sent := m
	sent.ReceiverID = to
	err = s.appendMessage(m.SenderID, sent)
	if err == nil && deliveryFault != nil {
		err = deliveryFault()
	}
	if err == nil {
		err = s.appendMessage(to, m)
	}
	if err != nil {
		return s.undoDelivery(m, to, err)
	}
	// Not fsynced: a record that survives a crash only leads to a check that finds both
	// copies.
	return s.writeDeliveryRecord(nil, false)
}

// undoDelivery takes the message's lines (whole or torn) off the end of both mailboxes
// after a failed write, and clears the record: the send did not happen. If that fails too,
// the record stays and the message is delivered later instead, as after a kill.
func (s *Store) undoDelivery(m Message, to string, cause error) error {
	for _, id := range []string{to, m.SenderID} {
		if err := s.dropLastLine(id, m.ID); err != nil {
			return fmt.Errorf("message %s to %s not fully written (%w); it is kept in %s and delivered by the next message sent in this project, or by `aipm doctor --repair`, once the store can write again: do not send it again", m.ID, to, cause, s.Rel(s.deliveryPath()))
		}
	}
	if err := s.writeDeliveryRecord(nil, true); err != nil {
		return errors.Join(cause, err)
	}
	return cause
}

// dropLastLine truncates a torn last line of the agent's mailbox, then its last line if
// it is the message id. A missing mailbox has nothing to drop; one aipm refuses to open
// (a link) was not written to.
func (s *Store) dropLastLine(agentID, id string) error {
	path := s.mailboxPath(agentID)
	fi, err := engine.Lstat(path)
	if errors.Is(err, os.ErrNotExist) || (err == nil && !fi.Mode().IsRegular()) {
		return nil
	}
	f, err := engine.Open(path, os.O_RDWR, 0, engine.MaxJSONLFile)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	// A message line is at most a few times MessageMaxChars bytes; 1 MiB covers the
	// longest the store writes.
	start := max(info.Size()-(1<<20), 0)
	data := make([]byte, info.Size()-start)
	if _, err := f.ReadAt(data, start); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	end := bytes.LastIndexByte(data, '\n') + 1 // past the last complete line
	if end > 0 {
		i := bytes.LastIndexByte(data[:end-1], '\n')
		if m, ok := parseMessage(data[i+1 : end-1]); ok && m.ID == id {
			end = i + 1
		}
	}
	if start+int64(end) == info.Size() {
		return nil
	}
	if err := f.Truncate(start + int64(end)); err != nil {
		return err
	}
	return f.Sync()
}

// writeDeliveryRecord replaces the record's content (nil empties it).
func (s *Store) writeDeliveryRecord(data []byte, durable bool) error {
	if err := EnsureDir(s.path(JournalDir)); err != nil {
		return err
	}
	f, err := engine.Open(s.deliveryPath(), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644, 0)
	if err != nil {
		return err
	}
	if len(data) > 0 {
		if _, err := f.Write(data); err != nil {
			f.Close()
			return err
		}
	}
	if durable {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// finishDeliveryLocked completes a send that was interrupted: when the record names a
// message whose sender's copy is there, the receiver's copy is appended unless it is there
// too. With onlyTo set, only a message to that agent is finished (a reader finishes its
// own mail, and a broken mailbox elsewhere does not stop it). It returns the message it
// delivered (with ReceiverID), if any. The caller holds the store lock.
func (s *Store) finishDeliveryLocked(onlyTo string) (*Message, error) {
	data, err := engine.ReadFile(s.deliveryPath(), 1<<20)
	if errors.Is(err, os.ErrNotExist) || (err == nil && len(bytes.TrimSpace(data)) == 0) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rec deliveryRecord
	if json.Unmarshal(data, &rec) != nil || rec.Message.ID == "" ||
		ValidateAgentID(rec.To) != nil || ValidateAgentID(rec.Message.SenderID) != nil {
		// Torn: the record is fsynced before any mailbox line, so none was written.
		return nil, s.writeDeliveryRecord(nil, false)
	}
	if onlyTo != "" && rec.To != onlyTo {
		return nil, nil
	}
	m := rec.Message
	m.ReceiverID = ""
	var delivered *Message
	sent, err := s.hasMessage(m.SenderID, m.ID)
	if err != nil {
		return nil, err
	}
	if sent { // else the send died before its first line: nothing was sent
		got, err := s.hasMessage(rec.To, m.ID)
		if err != nil {
			return nil, err
		}
		if !got {
			if err := s.appendMessage(rec.To, m); err != nil {
				return nil, err
			}
			d := m
			d.ReceiverID = rec.To
			delivered = &d
		}
	}
	return delivered, s.writeDeliveryRecord(nil, false)
}

// hasMessage reports whether the agent's mailbox holds a line of the message id among its
// last pairWindow lines (an interrupted send is the last thing written under the lock).
func (s *Store) hasMessage(agentID, id string) (bool, error) {
	found, n := false, 0
	key := []byte(`"` + id + `"`)
	err := scanBack(s.mailboxPath(agentID), func(line []byte) bool {
		n++
		if bytes.Contains(line, key) {
			if m, ok := parseMessage(line); ok && m.ID == id {
				found = true
				return false
			}
		}
		return n < pairWindow
	})
	return found, err
}

// unpaired is a sent copy whose receiver's mailbox lacks the message.
type unpaired struct {
	Path string // the sender's mailbox
	Line int
	To   string
	Msg  Message // the receiver's copy
}

// pairFields are the fields of a mailbox line the pairing of sent copies reads.
type pairFields struct {
	ID         string    `json:"id"`
	ReceiverID string    `json:"receiverId"`
	CreatedAt  time.Time `json:"createdAt"`
}

// unpairedMessages compares the sent copies among the last pairWindow lines of every
// mailbox with their receivers' mailboxes, read back to a day before the oldest of them:
// memory and time stay bounded by the recent past, not by the history.
func (s *Store) unpairedMessages() ([]unpaired, error) {
	entries, err := engine.ReadDir(s.path("agents"))
	if err != nil {
		return nil, err
	}
	want := pairWant{}
	for _, e := range entries {
		owner := e.Name()
		if !e.IsDir() || ValidateAgentID(owner) != nil {
			continue
		}
		n := 0
		err := scanBack(s.mailboxPath(owner), func(line []byte) bool {
			n++
			if c, ok := sentCopyOf(owner, &mailLine{data: line}); ok {
				want.add(owner, c)
			}
			return n < pairWindow
		})
		if err != nil {
			return nil, err
		}
	}
	for to, ids := range want {
		received := receivedBack(ids)
		if err := scanBack(s.mailboxPath(to), func(line []byte) bool { return received(&mailLine{data: line}) }); err != nil {
			return nil, err
		}
	}
	return s.unpairedOf(want)
}

// sentCopy is a message found in its sender's mailbox, as the receiver's copy would be
// compared with it.
type sentCopy struct {
	from string
	m    Message // line's fields the pairing reads, or all of them when line is nil
	line []byte  // the line, decoded whole only when the message is reported
}

// message is the sent copy decoded whole.
func (c sentCopy) message() Message {
	if c.line == nil {
		return c.m
	}
	var m Message
	if json.Unmarshal(c.line, &m) != nil {
		return c.m
	}
	return m
}

// pairWant is, per receiver, the sent copies whose receiver's copies are looked for (by
// message id); what is left once the receivers' mailboxes are read is unpaired.
type pairWant map[string]map[string]sentCopy

// add records a sent copy found in owner's mailbox. Lines are met last first, so of two
// copies of one message the earlier line's is kept.
func (w pairWant) add(owner string, c sentCopy) {
	if w[c.m.ReceiverID] == nil {
		w[c.m.ReceiverID] = map[string]sentCopy{}
	}
	c.from = owner
	w[c.m.ReceiverID][c.m.ID] = c
}

// sentCopyOf returns the message of a line of owner's mailbox when it is a sent copy the
// pairing checks: from owner, to another valid agent.
func sentCopyOf(owner string, l *mailLine) (sentCopy, bool) {
	if !bytes.Contains(l.data, []byte(`"receiverId"`)) {
		return sentCopy{}, false
	}
	var c sentCopy
	if l.quick() {
		// What parseMessage would decode, read as the line holds it.
		var idOK, senderOK, receiverOK bool
		c.m.ID, idOK = quotedString(l.id)
		c.m.SenderID, senderOK = quotedString(l.sender)
		c.m.ReceiverID, receiverOK = quotedString(l.receiver)
		if !idOK || !senderOK || !receiverOK || c.m.ID == "" || c.m.SenderID == "" {
			return sentCopy{}, false
		}
		c.m.CreatedAt, c.line = l.createdAt, l.data
	} else {
		m, ok := parseMessage(l.data)
		if !ok {
			return sentCopy{}, false
		}
		c.m = m
	}
	m := c.m
	if m.SenderID == owner && m.ReceiverID != "" && m.ReceiverID != owner && ValidateAgentID(m.ReceiverID) == nil {
		return c, true
	}
	return sentCopy{}, false
}

// receivedBack returns the check of each line of a receiver's mailbox, read last line
// first, against ids, the sent copies addressed to it: a received copy removes its id. It
// says whether to read on: while ids are left, back to a day before the oldest of them.
func receivedBack(ids map[string]sentCopy) func(l *mailLine) bool {
	oldest := time.Time{}
	for _, c := range ids {
		if oldest.IsZero() || c.m.CreatedAt.Before(oldest) {
			oldest = c.m.CreatedAt
		}
	}
	since := oldest.Add(-pairSlack)
	return func(l *mailLine) bool {
		// Of a line of aipm's own shape (quickMessage), only what the pairing needs is
		// read, as it stands in the line; a line it does not vouch for decodes whole.
		var created time.Time
		if l.quick() {
			if len(l.receiver) <= 2 { // null, absent or ""
				if id, ok := quotedString(l.id); ok {
					delete(ids, id)
				}
			}
			created = l.createdAt
		} else {
			m, err := l.decoded()
			if err != nil {
				return true
			}
			if m.ReceiverID == "" {
				delete(ids, m.ID)
			}
			created = m.CreatedAt
		}
		return len(ids) > 0 && (created.IsZero() || !created.Before(since))
	}
}

// mailLine is one line of a mailbox as the checks read it, decoded once and only as far
// as they need: what quickMessage vouches for is read as the line holds it.
type mailLine struct {
	data                 []byte
	quickDone, quickOK   bool
	idSet, senderSet     bool   // quickMessage's answers
	id, sender, receiver []byte // the values of id, senderId and receiverId, quoted; nil when absent or null
	createdAt            time.Time
	message              *Message // decoded whole, when it was asked for
	decodeErr            error
}

// quick tells whether quickMessage vouches for the line, reading its values on the way.
func (l *mailLine) quick() bool {
	if !l.quickDone {
		l.quickDone = true
		l.idSet, l.senderSet, l.quickOK = quickObjectValues(l.data, messageKeys, "id", "senderId", func(key, raw []byte, t time.Time) {
			if raw == nil {
				return // null leaves a field as it was, as json.Unmarshal does
			}
			switch string(key) {
			case "id":
				l.id = raw
			case "senderId":
				l.sender = raw
			case "receiverId":
				l.receiver = raw
			case "createdAt":
				l.createdAt = t
			}
		})
	}
	return l.quickOK
}

// quotedString decodes a JSON string value as json.Unmarshal does (nil: ""); ok is false
// for one it cannot decode.
func quotedString(v []byte) (s string, ok bool) {
	if v == nil {
		return "", true
	}
	raw := v[1 : len(v)-1]
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw), true
	}
	return s, json.Unmarshal(v, &s) == nil
}

// decoded is the line decoded whole.
func (l *mailLine) decoded() (*Message, error) {
	if l.message == nil {
		l.message = new(Message)
		l.decodeErr = json.Unmarshal(l.data, l.message)
	}
	return l.message, l.decodeErr
}

// unpairedOf lists the sent copies left in want after their receivers' mailboxes were
// read, each with its line in its sender's mailbox.
func (s *Store) unpairedOf(want pairWant) ([]unpaired, error) {
	var out []unpaired
	byPath := map[string]map[string]*unpaired{}
	for to, ids := range want {
		for _, c := range ids {
			m := c.message()
			m.ReceiverID = ""
			p := s.mailboxPath(c.from)
			if byPath[p] == nil {
				byPath[p] = map[string]*unpaired{}
			}
			byPath[p][m.ID] = &unpaired{Path: p, To: to, Msg: m}
		}
	}
	// Line numbers, for the report: found only when something is missing.
	for p, ids := range byPath {
		left := len(ids)
		err := engine.ScanLines(p, 0, func(l Line) error {
			if m, ok := parseMessage(l.Data); ok && m.ReceiverID != "" {
				if u := ids[m.ID]; u != nil && u.Line == 0 {
					u.Line = l.N
					if left--; left == 0 {
						return engine.ErrStop
					}
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		for _, u := range ids {
			out = append(out, *u)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Line < out[j].Line
	})
	return out, nil
}

// Undelivered is a message RepairDeliveries found in its sender's mailbox only.
type Undelivered struct {
	Message   Message // with ReceiverID
	Delivered bool    // its receiver's copy was appended; false: the receiver is no agent
}

func (u Undelivered) String() string {
	if u.Delivered {
		return fmt.Sprintf("message %s from %s delivered to %s (it was in the sender's mailbox only)", u.Message.ID, u.Message.SenderID, u.Message.ReceiverID)
	}
	return fmt.Sprintf("message %s from %s is in the sender's mailbox only, and %s is no agent of the project: not delivered", u.Message.ID, u.Message.SenderID, u.Message.ReceiverID)
}

// RepairDeliveries finishes an interrupted send (see deliverLocked) and appends the
// receiver's copy of every message unpairedMessages finds in its sender's mailbox only.
func (s *Store) RepairDeliveries() ([]Undelivered, error) {
	var out []Undelivered
	err := s.locked(func() error {
		m, err := s.finishDeliveryLocked("")
		if err != nil {
			return err
		}
		if m != nil {
			out = append(out, Undelivered{Message: *m, Delivered: true})
		}
		list, err := s.unpairedMessages()
		if err != nil {
			return err
		}
		for _, u := range list {
			sent := u.Msg
			sent.ReceiverID = u.To
			if _, err := s.Agent(u.To); err != nil {
				if errors.Is(err, ErrNotFound) {
					out = append(out, Undelivered{Message: sent})
					continue
				}
				return err
			}
			if err := s.appendMessage(u.To, u.Msg); err != nil {
				return err
			}
			out = append(out, Undelivered{Message: sent, Delivered: true})
		}
		return nil
	})
	return out, err
}

// reportUnpaired adds Check's problem for every message in its sender's mailbox only
// (list), or for the comparison that failed (err).
func (c *checker) reportUnpaired(list []unpaired, err error) {
	if err != nil {
		c.add(c.s.path("agents"), 1, "cannot compare the mailboxes: %v", err)
		return
	}
	for _, u := range list {
		c.add(u.Path, u.Line, "message %s to %s is in this mailbox only: %s lacks it (a send interrupted between its two writes); `aipm doctor --repair` delivers it",
			u.Msg.ID, u.To, c.s.Rel(c.s.mailboxPath(u.To)))
	}
}
