package filestore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aipm/aipm/filestore/internal/engine"
)

// Notification types (SPEC §4.8, seeds 000 and 004).
const (
	// NotifyInterrupt makes the MCP envelope replace the agent's next tool result by a
	// notice to call get_notifications: the agent cannot miss it.
	NotifyInterrupt    = "interrupt"
	NotifyStatusChange = "status_change"
	NotifyMessage      = "message"
	// NotifyChatSession is a chat session's word to the same agent's task session
	// (notify_task_session): it always targets purpose task.
	NotifyChatSession  = "chat_session_notification"
	NotifyConversation = "conversation"
	NotifyDelegation   = "delegation"
)

// NotificationTypes lists the notification types.
var NotificationTypes = []string{NotifyInterrupt, NotifyStatusChange, NotifyMessage, NotifyChatSession, NotifyConversation, NotifyDelegation}

// Common notification actions. Action is open-ended (a lower-case word), these are the
// ones aipm itself sends.
const (
	ActionCancel    = "cancel"
	ActionPause     = "pause"
	ActionResume    = "resume"
	ActionBlocked   = "blocked"
	ActionCheckChat = "check_chat"
)

// PurposeAny targets every session of the agent, whatever its purpose.
const PurposeAny = "any"

// NotificationPurposes lists the values of target_purpose.
var NotificationPurposes = []string{PurposeTask, PurposeChat, PurposeAny}

// Notification priorities. An interrupt defaults to high, anything else to normal.
const (
	NotifyNormal = "normal"
	NotifyHigh   = "high"
)

// NotificationPriorities lists the notification priorities.
var NotificationPriorities = []string{NotifyNormal, NotifyHigh}

// Tuning of the notification readers.
const (
	// compactAfter is how many inbox lines a session's count may read past its cursor
	// before the cursor is moved up (one small write), so the per-call cost stays bounded
	// by what arrived since, not by the inbox's history.
	compactAfter = 64
	// checkWindow is how many bytes before a cursor offset are fingerprinted to notice an
	// inbox rewritten under it (a `git pull` union merge, an editor).
	checkWindow = 64
)

var actionRe = regexp.MustCompile(`^[a-z][a-z0-9_]{0,39}$`)

// Notification is one line of agents/<id>/notifications.jsonl, the agent's inbox of
// notifications (SPEC §4.8). Lines are append-only and committed, like mailboxes; whether
// a session has read one is runtime state of that session (see SessionNotifications).
type Notification struct {
	ID            string `json:"id"`
	TargetAgentID string `json:"target_agent_id"`
	// TargetPurpose is task, chat or any: which of the agent's sessions it is for.
	TargetPurpose string `json:"target_purpose"`
	// TargetSessionID, if set, restricts it to that one session (e.g. the task session
	// working on the task an interrupt is about).
	TargetSessionID string `json:"target_session_id,omitempty"`
	Type            string `json:"type"`
	Action          string `json:"action"`
	Priority        string `json:"priority"`
	TaskID          string `json:"task_id,omitempty"`
	ConversationID  string `json:"conversation_id,omitempty"`
	// FromAgentID is who caused it (default: the actor that added it).
	FromAgentID string `json:"from_agent_id,omitempty"`
	Message     string `json:"message"`
	Instruction string `json:"instruction"`
	// Key deduplicates: a second notification with the key of an existing one in the same
	// inbox is not added (one notification per change, however many writers notice it).
	Key string `json:"key,omitempty"`
	// UntilRead marks a notice made while no session it is for was live (a
	// notify_task_session with no task session running): instead of reaching nobody, it
	// also reaches the sessions of its purpose that start later, until one of them reads it
	// (seed 000: the task session gets it with its next tool call).
	UntilRead bool      `json:"until_read,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// ReadAt is never stored in the inbox: readers fill it in with the time the asking
	// session read the notification (nil: unread).
	ReadAt *time.Time `json:"read_at,omitempty"`
}

// targets reports whether the notification is for session se: its agent, its purpose (or
// any), its id if one is named, and — unless it names the session — created at or after
// the session started, so a new session does not inherit what earlier sessions were told.
// An until_read notice is also for sessions that started after it, unless another session
// has read it: taken says which session read it ("" for none).
func (n *Notification) targets(se *Session, taken func(id string) string) bool {
	if n.TargetAgentID != se.AgentID {
		return false
	}
	if n.TargetSessionID != "" {
		return n.TargetSessionID == se.ID
	}
	if n.TargetPurpose != PurposeAny && n.TargetPurpose != se.Purpose {
		return false
	}
	if !n.CreatedAt.Before(se.CreatedAt) {
		return true
	}
	if !n.UntilRead {
		return false
	}
	by := taken(n.ID)
	return by == "" || by == se.ID
}

func (s *Store) takenPath(agentID string) string {
	return s.path("runtime", "notifications", "taken", agentID+".jsonl")
}

// takenMark is one line of runtime/notifications/taken/<agent-id>.jsonl: an until_read
// notice of the agent, read by one of its sessions, which later sessions no longer get.
type takenMark struct {
	ID        string    `json:"id"`
	SessionID string    `json:"session_id"`
	At        time.Time `json:"at"`
}

// takenBy returns a lookup of the agent's until_read notices that a session has read,
// reading the file at the first lookup (only a scan that meets such a notice makes one).
func (s *Store) takenBy(agentID string) func(id string) string {
	var marks map[string]string
	return func(id string) string {
		if marks == nil {
			marks = map[string]string{}
			// A file that cannot be read counts as empty: a notice is then told once more
			// rather than lost; doctor reports the file.
			lines, _ := engine.ReadLines(s.takenPath(agentID), 0)
			for _, l := range lines {
				var m takenMark
				if json.Unmarshal(l.Data, &m) == nil && marks[m.ID] == "" {
					marks[m.ID] = m.SessionID
				}
			}
		}
		return marks[id]
	}
}

// markTakenLocked records that session se read the until_read notices among ns.
func (s *Store) markTakenLocked(se *Session, ns []Notification, at time.Time) error {
	for _, n := range ns {
		if !n.UntilRead {
			continue
		}
		if err := engine.MkdirAll(filepath.Dir(s.takenPath(se.AgentID)), 0o755); err != nil {
			return err
		}
		if err := engine.AppendLine(s.takenPath(se.AgentID), takenMark{ID: n.ID, SessionID: se.ID, At: at}, true); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) inboxPath(agentID string) string {
	return s.path("agents", agentID, "notifications.jsonl")
}

func (s *Store) readsPath(sessionID string) string {
	return s.path("runtime", "notifications", sessionID+".json")
}

// AddNotification appends a notification to the target agent's inbox and returns it with
// its id and created_at, and true. If n.Key is set and the inbox already holds a
// notification with that key, nothing is written and the existing one is returned with
// false: however many writers notice one change, the agent is told once.
//
// Defaults: target_purpose task for a chat_session_notification (it is only ever for the
// task session) and any otherwise; priority high for an interrupt, normal otherwise;
// from_agent_id the actor. Checks: the target is an existing member
// (agent_not_found, target_agent_not_in_project); type, purpose and priority are known;
// action is a lower-case word; message and instruction are 1..message_max_chars
// characters; a named session exists, belongs to the target and fits the purpose; a named
// task or conversation exists. The line is fsynced before AddNotification returns.
// Notifications are not history events: the inbox is their record.
func (s *Store) AddNotification(actor Actor, n Notification) (*Notification, bool, error) {
	if err := s.validateNotification(&n); err != nil {
		return nil, false, err
	}
	var out *Notification
	created := false
	err := s.locked(func() error {
		var err error
		out, created, err = s.addNotificationLocked(actor, n)
		return err
	})
	return out, created, err
}

// validateNotification checks and defaults what needs no lock.
func (s *Store) validateNotification(n *Notification) error {
	if err := ValidateAgentID(n.TargetAgentID); err != nil {
		return err
	}
	if !slices.Contains(NotificationTypes, n.Type) {
		return newErr(ErrInvalid, "invalid_argument", "use one of "+strings.Join(NotificationTypes, ", "), "invalid notification type %q", clip(n.Type))
	}
	if n.TargetPurpose == "" {
		n.TargetPurpose = PurposeAny
		if n.Type == NotifyChatSession {
			n.TargetPurpose = PurposeTask
		}
	}
	if !slices.Contains(NotificationPurposes, n.TargetPurpose) {
		return newErr(ErrInvalid, "invalid_argument", "use one of "+strings.Join(NotificationPurposes, ", "), "invalid target_purpose %q", clip(n.TargetPurpose))
	}
	if n.Type == NotifyChatSession && n.TargetPurpose != PurposeTask {
		return newErr(ErrInvalid, "invalid_argument", "send it with target_purpose task (or leave it empty)",
			"a %s is for the agent's task session, not target_purpose %s", NotifyChatSession, n.TargetPurpose)
	}
	if !actionRe.MatchString(n.Action) {
		return newErr(ErrInvalid, "invalid_argument", "use a lower-case word such as cancel, pause, blocked or check_chat", "invalid notification action %q", clip(n.Action))
	}
	if n.Priority == "" {
		n.Priority = NotifyNormal
		if n.Type == NotifyInterrupt {
			n.Priority = NotifyHigh
		}
	}
	if !slices.Contains(NotificationPriorities, n.Priority) {
		return newErr(ErrInvalid, "invalid_argument", "use normal or high", "invalid notification priority %q", clip(n.Priority))
	}
	if n.TargetSessionID != "" {
		if err := ValidateEntityID(PrefixSession, n.TargetSessionID); err != nil {
			return err
		}
	}
	if n.TaskID != "" {
		if err := ValidateEntityID(PrefixTask, n.TaskID); err != nil {
			return err
		}
	}
	if n.ConversationID != "" {
		if err := ValidateEntityID(PrefixConversation, n.ConversationID); err != nil {
			return err
		}
	}
	if n.FromAgentID != "" {
		if err := ValidateAgentID(n.FromAgentID); err != nil {
			return err
		}
	}
	if utf8.RuneCountInString(n.Key) > 200 {
		return newErr(ErrInvalid, "invalid_argument", "use a short key naming the change, e.g. task:<id>:status:v7", "notification key too long")
	}
	if err := s.checkContent("message", n.Message); err != nil {
		return err
	}
	if err := s.checkContent("instruction", n.Instruction); err != nil {
		return err
	}
	n.ID, n.CreatedAt, n.ReadAt = "", time.Time{}, nil
	return nil
}

// addNotificationLocked is AddNotification under the lock, for n already validated.
func (s *Store) addNotificationLocked(actor Actor, n Notification) (*Notification, bool, error) {
	if _, err := s.target(n.TargetAgentID); err != nil {
		return nil, false, err
	}
	if n.TargetSessionID != "" {
		se, err := s.readSession(n.TargetSessionID)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, false, newErr(ErrNotFound, "session_not_found", "target the agent and purpose instead of a session that does not exist",
					"session %s not found", n.TargetSessionID)
			}
			return nil, false, err
		}
		if se.AgentID != n.TargetAgentID {
			return nil, false, newErr(ErrInvalid, "invalid_argument", "name a session of the target agent",
				"session %s belongs to agent %s, not %s", se.ID, se.AgentID, n.TargetAgentID)
		}
		if n.TargetPurpose != PurposeAny && n.TargetPurpose != se.Purpose {
			return nil, false, newErr(ErrInvalid, "invalid_argument", "leave target_purpose empty (any) when naming a session",
				"session %s is a %s session, not %s", se.ID, se.Purpose, n.TargetPurpose)
		}
	}
	if n.TaskID != "" {
		if _, err := s.Task(n.TaskID); err != nil {
			return nil, false, err
		}
	}
	if n.ConversationID != "" {
		if _, err := s.readConversation(n.ConversationID); err != nil {
			return nil, false, err
		}
	}
	if n.FromAgentID == "" && ValidateAgentID(actor.ID) == nil {
		n.FromAgentID = actor.ID
	}
	if n.Key != "" {
		old, err := s.notificationByKey(n.TargetAgentID, n.Key)
		if err != nil || old != nil {
			return old, false, err
		}
	}
	now := s.Now()
	n.ID = NewID(PrefixNotification, now)
	n.CreatedAt = now
	path := s.inboxPath(n.TargetAgentID)
	_, statErr := engine.Lstat(path)
	if err := engine.AppendLine(path, n, true); err != nil {
		return nil, false, err
	}
	if errors.Is(statErr, os.ErrNotExist) {
		// As for a mailbox: without this a crash could lose the new file's name.
		if err := engine.SyncDir(filepath.Dir(path)); err != nil {
			return nil, false, err
		}
	}
	return &n, true, nil
}

// notificationByKey returns the notification of the agent's inbox with the key, or nil.
func (s *Store) notificationByKey(agentID, key string) (*Notification, error) {
	s.inboxMu.Lock()
	idx := s.inboxKeys[agentID]
	if idx == nil {
		idx = &lineIndex{key: func(line []byte) string { return jsonField(line, "key") }}
		s.inboxKeys[agentID] = idx
	}
	s.inboxMu.Unlock()
	path := s.inboxPath(agentID)
	offs, err := idx.offsets(path, key)
	if err != nil || len(offs) == 0 {
		return nil, err
	}
	f, err := engine.OpenRead(path, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	for _, off := range offs {
		line, err := lineAtOffset(f, off)
		if err != nil {
			return nil, err
		}
		var n Notification
		if json.Unmarshal(line, &n) == nil && n.Key == key {
			n.ReadAt = nil
			return &n, nil
		}
	}
	return nil, nil
}

// notificationReads is runtime/notifications/<session-id>.json, one of the two
// git-ignored files of a session's read state:
//
//   - <session-id>.read.jsonl, the read log: one line per marking, {"at", "ids"}. It alone
//     decides what the session has read, and it only grows by appends.
//   - <session-id>.json, this index: a byte offset into the inbox and the session's unread
//     notifications before it. Every line before Offset that targets the session is
//     either in the read log or in Unread, so a count reads the index and the inbox lines
//     after Offset — not the read log, and not the inbox's history.
//
// OffsetCheck fingerprints the bytes just before Offset; if they change, the inbox was
// rewritten (a `git pull` union merge, an editor) and the index is rebuilt from the start
// of the file, the read log keeping read notifications read.
type notificationReads struct {
	SessionID   string      `json:"session_id"`
	AgentID     string      `json:"agent_id"`
	Offset      int64       `json:"offset"`
	OffsetCheck string      `json:"offset_check"`
	Unread      []unreadRef `json:"unread"`
	UpdatedAt   time.Time   `json:"updated_at"`
	Version     int         `json:"version"`
}

// unreadRef is an unread notification before the cursor: its id, type (for counting
// interrupts) and the byte position of its line.
type unreadRef struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	Pos  int64  `json:"pos"`
}

// readMarks is one line of a session's read log.
type readMarks struct {
	At  time.Time `json:"at"`
	IDs []string  `json:"ids"`
}

func (s *Store) readLogPath(sessionID string) string {
	return s.path("runtime", "notifications", sessionID+".read.jsonl")
}

// readLog returns when the session read each notification it has read.
func (s *Store) readLog(sessionID string) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	err := engine.ScanLines(s.readLogPath(sessionID), 0, func(l Line) error {
		var m readMarks
		if json.Unmarshal(l.Data, &m) != nil {
			return nil // doctor reports it
		}
		for _, id := range m.IDs {
			if _, ok := out[id]; !ok {
				out[id] = m.At
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// markNotificationsLocked appends ids to the session's read log (before the index drops them, so
// a crash in between over-counts until the next read, never loses a notification).
func (s *Store) markNotificationsLocked(sessionID string, ids []string, at time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	return engine.AppendLine(s.readLogPath(sessionID), readMarks{At: at, IDs: ids}, true)
}

func (st *notificationReads) unreadIDs() map[string]bool {
	m := make(map[string]bool, len(st.Unread))
	for _, r := range st.Unread {
		m[r.ID] = true
	}
	return m
}

// from is where a scan for every unread notification starts: the cursor, or the oldest
// unread line before it.
func (st *notificationReads) from() int64 {
	from := st.Offset
	for _, r := range st.Unread {
		from = min(from, r.Pos)
	}
	return from
}

func checkSession(se *Session) error {
	if se == nil {
		return newErr(ErrInvalid, "invalid_argument", "pass the caller's session", "no session")
	}
	if err := ValidateEntityID(PrefixSession, se.ID); err != nil {
		return err
	}
	return ValidateAgentID(se.AgentID)
}

// loadReads returns the session's index (empty if it has none yet), reset if the inbox
// no longer matches it.
func (s *Store) loadReads(se *Session) (*notificationReads, error) {
	if err := checkSession(se); err != nil {
		return nil, err
	}
	st := &notificationReads{SessionID: se.ID, AgentID: se.AgentID}
	if err := s.readJSON(s.readsPath(se.ID), st); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	ok, err := s.offsetFits(se.AgentID, st.Offset, st.OffsetCheck)
	if err != nil {
		return nil, err
	}
	if !ok {
		st.Offset, st.OffsetCheck, st.Unread = 0, "", nil
	}
	if st.Unread == nil {
		st.Unread = []unreadRef{}
	}
	return st, nil
}

// offsetFits reports whether the inbox still has, just before off, the bytes fingerprinted
// when the cursor was set.
func (s *Store) offsetFits(agentID string, off int64, check string) (bool, error) {
	if off == 0 {
		return true, nil
	}
	got, err := s.inboxCheck(agentID, off)
	if err != nil {
		return false, err
	}
	return got != "" && got == check, nil
}

// inboxCheck fingerprints the checkWindow bytes before off ("" if the inbox is shorter or
// off is not at the end of a line).
func (s *Store) inboxCheck(agentID string, off int64) (string, error) {
	return tailCheck(s.inboxPath(agentID), off)
}

// tailCheck fingerprints the checkWindow bytes of a JSONL file before off: "" if the file
// is shorter or off is not at the end of a line. A cursor keeps it to notice the file
// rewritten under it.
func tailCheck(path string, off int64) (string, error) {
	if off == 0 {
		return "", nil
	}
	f, err := engine.OpenRead(path, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", nil
		}
		return "", err
	}
	defer f.Close()
	start := max(off-checkWindow, 0)
	buf := make([]byte, off-start)
	if _, err := f.ReadAt(buf, start); err != nil {
		if errors.Is(err, io.EOF) {
			return "", nil
		}
		return "", err
	}
	if buf[len(buf)-1] != '\n' {
		return "", nil
	}
	return fmt.Sprintf("%d:%08x", off, crc32.ChecksumIEEE(buf)), nil
}

// inboxLine is a notification of the inbox that targets a session, with the byte
// position of its line.
type inboxLine struct {
	n   Notification
	pos int64
}

// scanInbox reads the inbox of se's agent from byte offset from and returns the
// notifications targeted at se (each id once), the number of lines read, and the offset
// after the last complete line. Undecodable lines are skipped; doctor reports them.
func (s *Store) scanInbox(se *Session, from int64) ([]inboxLine, int, int64, error) {
	end := from
	var out []inboxLine
	seen := map[string]bool{}
	taken := s.takenBy(se.AgentID)
	count := 0
	err := engine.ScanLines(s.inboxPath(se.AgentID), from, func(l Line) error {
		count++
		end = l.Next
		if !bytes.Contains(l.Data, []byte(`"id"`)) {
			return nil // no notification (doctor reports the line)
		}
		var n Notification
		if json.Unmarshal(l.Data, &n) != nil || n.ID == "" || seen[n.ID] || !n.targets(se, taken) {
			return nil
		}
		seen[n.ID] = true
		n.ReadAt = nil
		out = append(out, inboxLine{n: n, pos: l.Next - int64(len(l.Data)) - 1})
		return nil
	})
	if err != nil {
		return nil, 0, from, err
	}
	return out, count, end, nil
}

// unreadState is a session's unread notifications as the index and the lines after its
// cursor give them.
type unreadState struct {
	st *notificationReads
	// fresh are the unread notifications after the cursor (not yet in the index).
	fresh []inboxLine
	// lines is how many inbox lines lie after the cursor; end is the offset after them.
	lines int
	end   int64
}

// unread reads the session's index and the inbox lines after its cursor. Lines after the
// cursor are unread by construction — reads happen under the lock after indexing up to
// the end — except for a line a merge duplicated or a crash between read log and index.
// So the read log is consulted only with checkLog (writers, which then repair the index)
// or when the index starts from scratch (new, or reset after a rewrite); the hot path
// may over-count such a line until the next read, and costs what arrived since the
// cursor, however much the session has read.
func (s *Store) unread(se *Session, checkLog bool) (*unreadState, error) {
	st, err := s.loadReads(se)
	if err != nil {
		return nil, err
	}
	hits, lines, end, err := s.scanInbox(se, st.Offset)
	if err != nil {
		return nil, err
	}
	u := &unreadState{st: st, lines: lines, end: end}
	known := st.unreadIDs()
	hits = slices.DeleteFunc(hits, func(h inboxLine) bool { return known[h.n.ID] })
	if len(hits) > 0 && (checkLog || st.Offset == 0) {
		read, err := s.readLog(se.ID)
		if err != nil {
			return nil, err
		}
		hits = slices.DeleteFunc(hits, func(h inboxLine) bool { _, ok := read[h.n.ID]; return ok })
	}
	u.fresh = hits
	return u, nil
}

// indexLocked brings the session's index up to the end of the inbox: every unread
// notification for it after the cursor becomes an unread ref, and the cursor moves to the
// end. Refs the read log names (left by a crash between log and index) are dropped. The
// caller holds the lock and saves the index.
func (s *Store) indexLocked(se *Session, read map[string]time.Time) (*notificationReads, error) {
	u, err := s.unread(se, true)
	if err != nil {
		return nil, err
	}
	st := u.st
	st.Unread = slices.DeleteFunc(st.Unread, func(r unreadRef) bool { _, ok := read[r.ID]; return ok })
	for _, h := range u.fresh {
		st.Unread = append(st.Unread, unreadRef{ID: h.n.ID, Type: h.n.Type, Pos: h.pos})
	}
	if u.end != st.Offset {
		check, err := s.inboxCheck(se.AgentID, u.end)
		if err != nil {
			return nil, err
		}
		st.Offset, st.OffsetCheck = u.end, check
	}
	return st, nil
}

func (s *Store) saveReadsLocked(st *notificationReads) error {
	st.UpdatedAt = s.Now()
	st.Version++
	return engine.WriteJSON(s.readsPath(st.SessionID), st, 0o644)
}

// NotificationSummary is what the MCP envelope adds to every response: how many
// notifications the session has not read, how many of them are interrupts, and the
// newest unread chat_session_notification (the envelope's _chat_notification).
type NotificationSummary struct {
	Unread     int
	Interrupts int
	// ChatNotice is the latest unread chat_session_notification, nil if there is none.
	ChatNotice *Notification
}

// NotificationSummary counts the session's unread notifications. It runs on every tool
// call, so it reads only the session's small index file and the inbox lines appended
// since its cursor: its cost does not grow with the inbox's history or with what the
// session has read. When more than compactAfter lines lie past the cursor, it moves the
// cursor up (under the lock, one small write to runtime/), so that cost stays bounded.
func (s *Store) NotificationSummary(se *Session) (NotificationSummary, error) {
	var sum NotificationSummary
	u, err := s.unread(se, false)
	if err != nil {
		return sum, err
	}
	var chatRef *unreadRef
	for i, r := range u.st.Unread {
		sum.count(r.Type)
		if r.Type == NotifyChatSession {
			chatRef = &u.st.Unread[i]
		}
	}
	for i, h := range u.fresh {
		sum.count(h.n.Type)
		if h.n.Type == NotifyChatSession {
			sum.ChatNotice = &u.fresh[i].n
		}
	}
	if sum.ChatNotice == nil && chatRef != nil {
		if sum.ChatNotice, err = s.notificationAt(se, chatRef.Pos); err != nil {
			return sum, err
		}
	}
	if u.lines >= compactAfter {
		err = s.locked(func() error {
			read, err := s.readLog(se.ID)
			if err != nil {
				return err
			}
			st, err := s.indexLocked(se, read)
			if err != nil {
				return err
			}
			return s.saveReadsLocked(st)
		})
	}
	return sum, err
}

func (sum *NotificationSummary) count(typ string) {
	sum.Unread++
	if typ == NotifyInterrupt {
		sum.Interrupts++
	}
}

// notificationAt decodes the notification on the inbox line starting at pos.
func (s *Store) notificationAt(se *Session, pos int64) (*Notification, error) {
	f, err := engine.OpenRead(s.inboxPath(se.AgentID), 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	line, err := readLineAt(f, pos)
	if err != nil || line == nil {
		return nil, err
	}
	var n Notification
	if json.Unmarshal(line, &n) != nil || !n.targets(se, s.takenBy(se.AgentID)) {
		return nil, nil
	}
	n.ReadAt = nil
	return &n, nil
}

// readLineAt returns the complete line starting at pos, without its newline (nil if
// there is none).
func readLineAt(f *os.File, pos int64) ([]byte, error) {
	var line []byte
	buf := make([]byte, 4096)
	for {
		n, err := f.ReadAt(buf, pos+int64(len(line)))
		if i := slices.Index(buf[:n], '\n'); i >= 0 {
			return append(line, buf[:i]...), nil
		}
		line = append(line, buf[:n]...)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, nil
			}
			return nil, err
		}
	}
}

// UnreadCounts returns the number of notifications the session has not read and how many
// of them are interrupts (see NotificationSummary).
func (s *Store) UnreadCounts(se *Session) (total, interrupts int, err error) {
	sum, err := s.NotificationSummary(se)
	return sum.Unread, sum.Interrupts, err
}

// SessionNotifications returns the notifications targeted at the session, newest first:
// those for its agent and for its purpose (or any) created since the session started,
// and those naming the session. With unreadOnly, only the ones it has not read;
// otherwise all, read ones with ReadAt set. It marks nothing read (see
// TakeNotifications and MarkNotificationsRead).
func (s *Store) SessionNotifications(se *Session, unreadOnly bool) ([]Notification, error) {
	st, err := s.loadReads(se)
	if err != nil {
		return nil, err
	}
	read, err := s.readLog(se.ID)
	if err != nil {
		return nil, err
	}
	from := int64(0)
	if unreadOnly {
		from = st.from()
	}
	hits, _, _, err := s.scanInbox(se, from)
	if err != nil {
		return nil, err
	}
	out := []Notification{}
	for _, h := range hits {
		if at, ok := read[h.n.ID]; ok {
			if unreadOnly {
				continue
			}
			h.n.ReadAt = &at
		}
		out = append(out, h.n)
	}
	newestFirst(out)
	return out, nil
}

// newestFirst orders notifications as get_notifications lists them and tells the agent
// to follow them: interrupts first, then the rest, each newest first. An interrupt
// (a reassignment, a pause) changes what every other notification means.
func newestFirst(ns []Notification) {
	sort.SliceStable(ns, func(i, j int) bool {
		if ii, ji := ns[i].Type == NotifyInterrupt, ns[j].Type == NotifyInterrupt; ii != ji {
			return ii
		}
		if !ns[i].CreatedAt.Equal(ns[j].CreatedAt) {
			return ns[i].CreatedAt.After(ns[j].CreatedAt)
		}
		return ns[i].ID > ns[j].ID
	})
}

// TakeNotifications returns the session's unread notifications, newest first, and marks
// them read, in one step under the store lock (get_notifications with mark_as_read):
// two calls never both return one notification, and one arriving meanwhile stays unread
// for the next call. Other sessions' read state is untouched: a notification for
// purpose any stays unread for the agent's other session.
func (s *Store) TakeNotifications(se *Session) ([]Notification, error) {
	if err := checkSession(se); err != nil {
		return nil, err
	}
	out := []Notification{}
	err := s.locked(func() error {
		read, err := s.readLog(se.ID)
		if err != nil {
			return err
		}
		st, err := s.indexLocked(se, read)
		if err != nil {
			return err
		}
		if refs := st.unreadIDs(); len(refs) > 0 {
			hits, _, _, err := s.scanInbox(se, st.from())
			if err != nil {
				return err
			}
			now := s.Now()
			var ids []string
			for _, h := range hits {
				if refs[h.n.ID] {
					h.n.ReadAt = &now
					out = append(out, h.n)
					ids = append(ids, h.n.ID)
				}
			}
			if err := s.markNotificationsLocked(se.ID, ids, now); err != nil {
				return err
			}
			if err := s.markTakenLocked(se, out, now); err != nil {
				return err
			}
			st.Unread = []unreadRef{}
		}
		return s.saveReadsLocked(st)
	})
	if err != nil {
		return nil, err
	}
	newestFirst(out)
	return out, nil
}

// MarkNotificationsRead marks notifications of the session read, for it alone. Marking a
// read one again is a no-op; an id that is not a notification for this session is
// notification_not_found, and then nothing is marked.
func (s *Store) MarkNotificationsRead(se *Session, ids []string) error {
	if err := checkSession(se); err != nil {
		return err
	}
	for _, id := range ids {
		if err := ValidateEntityID(PrefixNotification, id); err != nil {
			return err
		}
	}
	return s.locked(func() error {
		read, err := s.readLog(se.ID)
		if err != nil {
			return err
		}
		st, err := s.indexLocked(se, read)
		if err != nil {
			return err
		}
		unread := st.unreadIDs()
		var mark []string
		for _, id := range ids {
			if _, ok := read[id]; ok || slices.Contains(mark, id) {
				continue
			}
			if !unread[id] {
				return newErr(ErrNotFound, "notification_not_found", "pass ids returned by get_notifications for this session",
					"notification %s is not a notification for session %s (agent %s, purpose %s)", id, se.ID, se.AgentID, se.Purpose)
			}
			mark = append(mark, id)
		}
		now := s.Now()
		if err := s.markNotificationsLocked(se.ID, mark, now); err != nil {
			return err
		}
		if len(mark) > 0 {
			hits, _, _, err := s.scanInbox(se, st.from())
			if err != nil {
				return err
			}
			var marked []Notification
			for _, h := range hits {
				if slices.Contains(mark, h.n.ID) {
					marked = append(marked, h.n)
				}
			}
			if err := s.markTakenLocked(se, marked, now); err != nil {
				return err
			}
		}
		st.Unread = slices.DeleteFunc(st.Unread, func(r unreadRef) bool { return slices.Contains(mark, r.ID) })
		return s.saveReadsLocked(st)
	})
}

// PendingNotifications counts the agent's notifications that one of its live sessions is
// meant to read and has not read yet (each counted once, even if both sessions have it
// unread): what `aipm status` shows as waiting. An agent with no live session has none
// pending — a notification reaches sessions live when it was made (or the one it names);
// an until_read one waits for the next session, which is then the one that counts it.
func (s *Store) PendingNotifications(agentID string) (int, error) {
	if err := ValidateAgentID(agentID); err != nil {
		return 0, err
	}
	live, err := s.LiveSessions(agentID)
	if err != nil {
		return 0, err
	}
	ids := map[string]bool{}
	for _, se := range live {
		u, err := s.unread(se, true)
		if err != nil {
			return 0, err
		}
		for _, r := range u.st.Unread {
			ids[r.ID] = true
		}
		for _, h := range u.fresh {
			ids[h.n.ID] = true
		}
	}
	return len(ids), nil
}
