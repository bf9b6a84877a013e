package filestore

import (
	"crypto/subtle"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// Session purposes and states.
const (
	PurposeTask = "task"
	PurposeChat = "chat"

	SessionActive      = "active"
	SessionTerminating = "terminating"
	SessionEnded       = "ended"
)

// Session is runtime/sessions/<id>.json (git-ignored). The bearer token handed to the agent
// is "<id>.<secret>"; only a hash of the secret is stored.
type Session struct {
	ID          string `json:"id"`
	TokenHash   string `json:"token_hash"`
	AgentID     string `json:"agent_id"`
	Purpose     string `json:"purpose"`
	TaskID      string `json:"task_id"`
	ExecutionID string `json:"execution_id"`
	// SpawnID names the coordinator's process record when the session was opened with a
	// spawn ticket: the process's exit ends exactly these sessions.
	SpawnID string `json:"spawn_id"`
	// Workflow is where the task session's get_next_action flow stands (see Workflow*
	// constants); Selected is the manager's pending select_action choice.
	Workflow string `json:"workflow"`
	Selected string `json:"selected_action"`
	// Baseline is the sub-task state a manager's wait started from: the wait ends when it
	// differs.
	Baseline string `json:"wait_baseline"`
	// Offered are the select_action choices get_next_action offered last (comma-separated):
	// a choice offered that no longer fits when it is made is answered, not refused.
	Offered string `json:"offered_actions,omitempty"`
	// Queued are the sub-tasks a manager dispatched before their dependencies were done
	// (comma-separated): its get_next_action starts each once they are.
	Queued string `json:"queued_subtasks,omitempty"`
	// Waiting is the wait get_next_action last answered the task session with (wait,
	// wait_for_delegation), "" once it answered anything else: the coordinator does not
	// count a process that only waits against its bound.
	Waiting        string     `json:"waiting,omitempty"`
	State          string     `json:"state"`
	PID            int        `json:"pid"`
	PIDStart       string     `json:"pid_start"`
	CreatedAt      time.Time  `json:"created_at"`
	LastActivityAt time.Time  `json:"last_activity_at"`
	ExpiresAt      time.Time  `json:"expires_at"`
	EndedAt        *time.Time `json:"ended_at"`
	EndReason      string     `json:"end_reason"`
	UpdatedAt      time.Time  `json:"updated_at"`
	Version        int        `json:"version"`
}

// Live reports whether the session can still act: active, lease not expired, and its
// serving process still running. Liveness, not just a TTL: a killed server's session is
// dead at once.
func (se *Session) Live(now time.Time) bool {
	return se.State == SessionActive && now.Before(se.ExpiresAt) && processAlive(se.PID, se.PIDStart)
}

func (s *Store) sessionPath(id string) string { return s.path("runtime", "sessions", id+".json") }

// endedSessionPath is where a session's record goes when it ends: out of the directory
// that work detection lists, so ended sessions do not slow it down as they accumulate.
func (s *Store) endedSessionPath(id string) string {
	return s.path("runtime", "sessions", "ended", id+".json")
}

// latestChat is runtime/sessions/latest/<agent-id>.json: when the agent's latest chat
// session started, which work detection needs (a chat a human opened before it has been
// served) and would otherwise have to find among the ended sessions.
type latestChat struct {
	AgentID   string    `json:"agent_id"`
	StartedAt time.Time `json:"chat_session_started_at"`
	// EndedAt is when the agent's latest chat session to end ended: with the sessions not
	// ended yet, it dates an absence that may end a conversation (session_expired).
	EndedAt *time.Time `json:"chat_session_ended_at,omitempty"`
}

func (s *Store) latestChatPath(agentID string) string {
	return s.path("runtime", "sessions", "latest", agentID+".json")
}

// latestChatStart returns when the agent's latest chat session started (zero if never, or
// if the record is unreadable: then only live sessions count).
func (s *Store) latestChatStart(agentID string) time.Time {
	var l latestChat
	if s.readJSON(s.latestChatPath(agentID), &l) != nil {
		return time.Time{}
	}
	return l.StartedAt
}

// latestChatRecord returns the agent's latest-chat record (empty if it has none or it is
// unreadable).
func (s *Store) latestChatRecord(agentID string) latestChat {
	l := latestChat{AgentID: agentID}
	if s.readJSON(s.latestChatPath(agentID), &l) != nil {
		l = latestChat{AgentID: agentID}
	}
	return l
}

// writeLatestChatLocked writes the agent's latest-chat record. The caller holds the lock.
func (s *Store) writeLatestChatLocked(l latestChat) error {
	p := s.latestChatPath(l.AgentID)
	if err := ensureDir(filepath.Dir(p)); err != nil {
		return err
	}
	return writeJSON(p, l, 0o600)
}

// SessionByID reads a session record, live or ended, by its id (not a bearer token: for
// the process that opened it).
func (s *Store) SessionByID(id string) (*Session, error) {
	if err := ValidateEntityID(PrefixSession, id); err != nil {
		return nil, err
	}
	return s.readSession(id)
}

// readSession reads a session record, live or ended.
func (s *Store) readSession(id string) (*Session, error) {
	se, err := s.readLiveSession(id)
	if errors.Is(err, os.ErrNotExist) {
		se = &Session{}
		err = s.readJSON(s.endedSessionPath(id), se)
	}
	if err != nil {
		return nil, err
	}
	se.ID = id // the file name is the identity, whatever the file claims
	return se, nil
}

// readLiveSession reads the record of a session not ended (runtime/sessions/<id>.json).
// A live session is read on every tool call, and every session on each look at presence
// (Sessions): it comes as last read while the file keeps the identity it had before that
// read (a change in between shows as another identity).
func (s *Store) readLiveSession(id string) (*Session, error) {
	path := s.sessionPath(id)
	fi, statErr := os.Lstat(path)
	regular := statErr == nil && fi.Mode().IsRegular()
	if regular {
		s.sessMu.Lock()
		if m, ok := s.sessMemo[id]; ok && m.st == stampOf(fi) {
			se := m.se.clone()
			s.sessMu.Unlock()
			return se, nil
		}
		s.sessMu.Unlock()
	}
	var se Session
	if err := s.readJSON(path, &se); err != nil {
		return nil, err
	}
	se.ID = id
	if regular {
		s.sessMu.Lock()
		if s.sessMemo == nil || len(s.sessMemo) > maxSessionMemo {
			s.sessMemo = map[string]memoSession{}
		}
		s.sessMemo[id] = memoSession{stampOf(fi), *se.clone()}
		s.sessMu.Unlock()
	}
	return &se, nil
}

// maxSessionMemo bounds the session records a process holds: past it the memo starts
// anew. Sessions drops the records of files gone, so only a directory of more sessions
// than this reads them all again.
const maxSessionMemo = 4096

// forgetSessionsBut drops the memo of every session not in ids (the files listed).
func (s *Store) forgetSessionsBut(ids map[string]struct{}) {
	s.sessMu.Lock()
	defer s.sessMu.Unlock()
	for id := range s.sessMemo {
		if _, ok := ids[id]; !ok {
			delete(s.sessMemo, id)
		}
	}
}

// memoSession is a live session record as last read, with the identity of its file then.
type memoSession struct {
	st Stamp
	se Session
}

// clone is a copy callers may change.
func (se *Session) clone() *Session {
	c := *se
	if se.EndedAt != nil {
		t := *se.EndedAt
		c.EndedAt = &t
	}
	return &c
}

// writeSessionLocked writes a session record where its state belongs: an ended session
// moves to sessions/ended/. The caller holds the lock.
func (s *Store) writeSessionLocked(se *Session) error {
	if se.State != SessionEnded {
		return writeJSON(s.sessionPath(se.ID), se, 0o600)
	}
	if err := ensureDir(filepath.Dir(s.endedSessionPath(se.ID))); err != nil {
		return err
	}
	if err := writeJSON(s.endedSessionPath(se.ID), se, 0o600); err != nil {
		return err
	}
	if err := os.Remove(s.sessionPath(se.ID)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// AuthRequest is an authenticate call.
type AuthRequest struct {
	AgentID string
	// Passkey is the agent's passkey or a one-time spawn ticket minted by the coordinator
	// (CreateSpawn), which also fixes the purpose.
	Passkey string
	// Purpose is "task", "chat" or "" to let work detection choose.
	Purpose string
	// PID of the serving process, whose death ends the session.
	PID int
}

// AuthResult is a new session and the token for it (shown once).
type AuthResult struct {
	Session *Session
	Token   string
	Agent   *Agent
}

// Authenticate verifies an AI agent's passkey, decides the session purpose by work
// detection (task first), and creates the session. It runs under the store lock, so two
// processes racing to open a task session for one agent cannot both win.
func (s *Store) Authenticate(r AuthRequest) (*AuthResult, error) {
	if err := ValidateAgentID(r.AgentID); err != nil {
		return nil, err
	}
	if r.Purpose != "" && r.Purpose != PurposeTask && r.Purpose != PurposeChat {
		return nil, newErr(ErrInvalid, "invalid_argument", "use purpose task or chat, or omit it to let aipm decide", "invalid purpose %q", clip(r.Purpose))
	}
	a, err := s.Member(r.AgentID)
	if err != nil {
		return nil, err
	}
	ticket := IsSpawnTicket(r.Passkey)
	if a.Type != AgentAI || (!ticket && !s.checkPasskey(a.ID, r.Passkey)) {
		return nil, newErr(ErrUnauthorized, "invalid_passkey", "use the passkey printed by `aipm agent add` (rotate it with `aipm agent passkey "+a.ID+"`)",
			"invalid agent_id or passkey")
	}
	if a.Status != AgentActive {
		return nil, newErr(ErrUnauthorized, "agent_not_active", "ask the owner to set the agent active", "agent %s is %s", a.ID, a.Status)
	}
	var res *AuthResult
	err = s.locked(func() error {
		// Under the lock: a pause that lands while this runs either comes first (no session)
		// or after (its interrupt reaches the new session).
		p, err := s.ProjectView()
		if err != nil {
			return err
		}
		if p.Status != ProjectActive {
			return newErr(ErrConflict, "project_paused", "wait until the owner resumes the project (`aipm project resume`)", "project is %s: no sessions start", p.Status)
		}
		var sp *Spawn
		if ticket {
			if sp, err = s.redeemTicketLocked(a.ID, r.Passkey); err != nil {
				return err
			}
			if r.Purpose != "" && r.Purpose != sp.Purpose {
				return newErr(ErrInvalid, "invalid_argument", "omit purpose: the spawn ticket already names it",
					"this process was started for a %s session, not %s", sp.Purpose, r.Purpose)
			}
			r.Purpose = sp.Purpose
		}
		// Whoever notices an orphan first ends it, so the history shows when it died.
		if _, err := s.endOrphansLocked(a.ID); err != nil {
			return err
		}
		// Likewise a conversation deadline that passed: the file says so from now on.
		if _, err := s.conversationsLocked(ConversationFilter{AgentID: a.ID, States: []string{ConvPending, ConvActive}}); err != nil {
			return err
		}
		w, err := s.detectWork(a)
		if err != nil {
			return err
		}
		// A process started for a task works that task: its directory may be that task's
		// own worktree, so another task of the agent that started meanwhile is not its.
		if sp != nil && sp.TaskID != "" && w.TaskID != "" && w.TaskID != sp.TaskID {
			if t, err := s.Task(sp.TaskID); err == nil && t.Status == StatusInProgress && t.AssigneeID == a.ID {
				w.TaskID = t.ID
			}
		}
		purpose, taskID := "", ""
		switch r.Purpose {
		case PurposeTask:
			if w.TaskID == "" {
				return noWork(a.ID, "no in_progress task without a live task session", w)
			}
			purpose, taskID = PurposeTask, w.TaskID
		case PurposeChat:
			if !w.Chat {
				return noWork(a.ID, "no chat work (no unread messages, pending delegations, conversation requests or notices, and no open chat) without a live chat session", w)
			}
			purpose = PurposeChat
		default:
			switch {
			case w.TaskID != "":
				purpose, taskID = PurposeTask, w.TaskID
			case w.Chat:
				purpose = PurposeChat
			default:
				return noWork(a.ID, "nothing to do", w)
			}
		}
		now := s.Now()
		secret := newSecret("")
		sid := NewID(PrefixSession, now)
		tokenHash, err := s.boundHash(sid, secret)
		if err != nil {
			return err
		}
		se := &Session{ID: sid, TokenHash: tokenHash, AgentID: a.ID, Purpose: purpose,
			TaskID: taskID, State: SessionActive, PID: r.PID, PIDStart: processStart(r.PID), CreatedAt: now,
			LastActivityAt: now, ExpiresAt: now.Add(p.Settings.Lease()), UpdatedAt: now, Version: 1}
		if sp != nil {
			se.SpawnID = sp.ID
			if err := s.updateSpawnLocked(sp.ID, func(cur *Spawn) error {
				cur.TicketUsedAt = &now
				cur.SessionIDs = append(cur.SessionIDs, se.ID)
				return nil
			}); err != nil {
				return err
			}
		}
		if err := writeJSON(s.sessionPath(se.ID), se, 0o600); err != nil {
			return err
		}
		if purpose == PurposeChat {
			// Ended sessions are not listed by work detection: remember when the latest
			// chat session started (an open chat before it is served).
			l := s.latestChatRecord(a.ID)
			l.StartedAt = now
			if err := s.writeLatestChatLocked(l); err != nil {
				return err
			}
		}
		res = &AuthResult{Session: se, Token: se.ID + "." + secret, Agent: a}
		return s.appendEvent(Event{At: now, Actor: a.ID, Via: ViaTool, Entity: "session", ID: se.ID, Change: "started", To: purpose, Reason: taskID})
	})
	return res, err
}

func noWork(agentID, why string, w Work) error {
	msg := "agent " + agentID + " has no work: " + why
	if w.LiveTask || w.LiveChat {
		var live []string
		if w.LiveTask {
			live = append(live, "task")
		}
		if w.LiveChat {
			live = append(live, "chat")
		}
		msg += " (a live " + strings.Join(live, " and ") + " session already runs for it)"
	}
	return newErr(ErrConflict, "no_work", "exit now; the coordinator starts you again when there is work", "%s", msg)
}

// Work is what an agent could do now, decided the same way for authenticate and for the
// coordinator.
type Work struct {
	// TaskID is the in_progress task a new task session would take ("" if none).
	TaskID string
	// Chat is true when there is chat work (any of the counts below) and no live chat
	// session.
	Chat bool
	// Unread counts unread mailbox messages.
	Unread int
	// PendingDelegations counts the agent's delegations its chat session has not taken,
	// and, when it has no live chat session, those left processing by one that ended
	// (ResumeDelegation hands them to the next).
	PendingDelegations int
	// ConversationRequests counts pending conversations in which it is the participant.
	ConversationRequests int
	// Notices counts conversation endings and expiries it has yet to be told about.
	Notices int
	// ChatOpened is true when a human opened a chat with it that no chat session has
	// served yet (OpenChat).
	ChatOpened bool
	// LiveTask and LiveChat report live sessions that already cover a purpose.
	LiveTask, LiveChat bool
}

// ChatInput reports whether anything waits for a chat session to read it, whether or not
// one runs.
func (w Work) ChatInput() bool { return w.chatWork() }

// chatWork reports whether anything waits for a chat session.
func (w Work) chatWork() bool {
	return w.Unread > 0 || w.PendingDelegations > 0 || w.ConversationRequests > 0 || w.Notices > 0 || w.ChatOpened
}

// DetectWork reports the agent's work (SPEC §4.4): task work is an in_progress task assigned
// to it while it has no live task session; chat work is unread messages, pending
// delegations, conversation requests, conversation notices or a chat a human opened, while
// it has no live chat session.
func (s *Store) DetectWork(agentID string) (Work, error) {
	a, err := s.Member(agentID)
	if err != nil {
		return Work{}, err
	}
	return s.detectWork(a)
}

// detectWork takes no lock (Authenticate calls it holding the lock): conversation timeouts
// are evaluated in memory, not written.
func (s *Store) detectWork(a *Agent) (Work, error) {
	var w Work
	all, err := s.Sessions(a.ID)
	if err != nil {
		return w, err
	}
	now := s.Now()
	// Start of the agent's latest chat session, live or not.
	lastChat := s.latestChatStart(a.ID)
	for _, se := range all {
		if se.Purpose == PurposeChat && se.CreatedAt.After(lastChat) {
			lastChat = se.CreatedAt
		}
		if !se.Live(now) {
			continue
		}
		switch se.Purpose {
		case PurposeTask:
			w.LiveTask = true
		case PurposeChat:
			w.LiveChat = true
		}
	}
	if !w.LiveTask {
		tasks, err := s.Tasks(TaskFilter{Status: StatusInProgress, AssigneeID: a.ID})
		if err != nil {
			return w, err
		}
		// Deterministic: the oldest top-level task first, then the oldest sub-task.
		sort.SliceStable(tasks, func(i, j int) bool { return tasks[i].ParentID == "" && tasks[j].ParentID != "" })
		if len(tasks) > 0 {
			w.TaskID = tasks[0].ID
		}
	}
	if err := s.detectChatWork(a, lastChat, &w); err != nil {
		return w, err
	}
	w.Chat = !w.LiveChat && w.chatWork()
	return w, nil
}

// detectChatWork fills in the chat counts of w.
func (s *Store) detectChatWork(a *Agent, lastChat time.Time, w *Work) error {
	var err error
	if w.Unread, err = s.UnreadCount(a.ID); err != nil {
		return err
	}
	dl, err := s.Delegations(DelegationFilter{AgentID: a.ID, Status: DelegationPending})
	if err != nil {
		return err
	}
	w.PendingDelegations = len(dl)
	if !w.LiveChat {
		left, err := s.Delegations(DelegationFilter{AgentID: a.ID, Status: DelegationProcessing})
		if err != nil {
			return err
		}
		w.PendingDelegations += len(left)
	}
	k, err := s.convClock()
	if err != nil {
		return err
	}
	// Ended conversations are neither requests nor notices.
	convs, _, err := s.scanConversations(k, ConversationFilter{AgentID: a.ID,
		States: []string{ConvPending, ConvActive, ConvTerminating, ConvExpired}})
	if err != nil {
		return err
	}
	for _, c := range convs {
		if c.State == ConvPending && c.ParticipantID == a.ID {
			w.ConversationRequests++
		}
		if c.needsNotice(a.ID) {
			w.Notices++
		}
	}
	st, err := s.Chat(a.ID)
	if err != nil {
		return err
	}
	w.ChatOpened = st.chatOpenedUnserved(lastChat)
	return nil
}

// Sessions lists the session records of an agent ("" for all), oldest first.
func (s *Store) Sessions(agentID string) ([]*Session, error) {
	entries, err := os.ReadDir(s.path("runtime", "sessions"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var out []*Session
	listed := make(map[string]struct{}, len(entries))
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || ValidateEntityID(PrefixSession, id) != nil {
			continue
		}
		listed[id] = struct{}{}
		se, err := s.readLiveSession(id)
		if err != nil {
			continue
		}
		if agentID == "" || se.AgentID == agentID {
			out = append(out, se)
		}
	}
	s.forgetSessionsBut(listed)
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// LiveSessions returns the agent's live sessions ("" for all agents).
func (s *Store) LiveSessions(agentID string) ([]*Session, error) {
	all, err := s.Sessions(agentID)
	if err != nil {
		return nil, err
	}
	now := s.Now()
	return slices.DeleteFunc(all, func(se *Session) bool { return !se.Live(now) }), nil
}

// Session resolves a bearer token to its session. An unknown or malformed token is
// invalid_session; a session that ended, expired or lost its process is session_expired.
func (s *Store) Session(token string) (*Session, error) {
	id, secret, ok := strings.Cut(token, ".")
	bad := newErr(ErrUnauthorized, "invalid_session", "call authenticate to get a session_token", "invalid session_token")
	if !ok || ValidateEntityID(PrefixSession, id) != nil {
		return nil, bad
	}
	se, err := s.readSession(id)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, bad
		}
		return nil, err
	}
	// The hash is bound to this machine's key: a session record that came with the
	// repository matches no token.
	want, err := s.boundHash(se.ID, secret)
	if err != nil {
		return nil, err
	}
	if subtle.ConstantTimeCompare([]byte(want), []byte(se.TokenHash)) != 1 {
		return nil, bad
	}
	if !se.Live(s.Now()) {
		why := se.EndReason
		if se.State == SessionActive {
			why = "lease expired or serving process gone"
		}
		return se, newErr(ErrUnauthorized, "session_expired", "call authenticate again if there is still work; otherwise exit",
			"session %s is no longer live (%s)", se.ID, why)
	}
	return se, nil
}

// Touch renews the session's lease after a tool call. It writes only when a noticeable part
// of the lease has passed, so a burst of calls costs no extra fsyncs.
func (s *Store) Touch(se *Session, lease time.Duration) error {
	now := s.Now()
	if now.Sub(se.LastActivityAt) < min(lease/10, time.Minute) {
		return nil
	}
	return s.updateSession(se.ID, func(cur *Session) error {
		if cur.State != SessionActive {
			return nil
		}
		cur.LastActivityAt = now
		cur.ExpiresAt = now.Add(lease)
		return nil
	})
}

// EndSession ends a session for a reason (logout, process_exit, report_completed, ...). A
// running execution record of the session is closed with it. Ending is idempotent.
func (s *Store) EndSession(id, reason string) error {
	return s.updateSession(id, func(se *Session) error { return s.endSession(se, reason) })
}

// endSession ends se in memory, closing its execution record; the caller holds the lock and
// writes se.
func (s *Store) endSession(se *Session, reason string) error {
	if se.State == SessionEnded {
		return errNoChange
	}
	now := s.Now()
	se.State = SessionEnded
	se.EndedAt = &now
	se.EndReason = reason
	if se.Purpose == PurposeChat {
		l := s.latestChatRecord(se.AgentID)
		l.EndedAt = &now
		if err := s.writeLatestChatLocked(l); err != nil {
			return err
		}
	}
	if se.ExecutionID != "" {
		if err := s.finishExecution(se.ExecutionID, ExecFailed, "session ended before report_completed: "+reason); err != nil {
			return err
		}
	}
	return s.appendEvent(Event{At: now, Actor: se.AgentID, Via: ViaTool, Entity: "session", ID: se.ID, Change: "ended", From: se.Purpose, Reason: reason})
}

var errNoChange = errors.New("no change")

// Workflow phases of a task session, kept in the session record (runtime state, not part
// of the task's history).
const (
	WorkflowTaskFetched      = "task_fetched"      // get_my_task was called
	WorkflowCreatingSubtasks = "creating_subtasks" // asked to decompose
)

// SetWorkflow records the task session's workflow phase, the manager's pending selection,
// and the baseline a manager's wait compares against.
func (s *Store) SetWorkflow(sessionID, phase, selected, baseline string) error {
	return s.updateSession(sessionID, func(se *Session) error {
		if se.Workflow == phase && se.Selected == selected && se.Baseline == baseline {
			return errNoChange
		}
		se.Workflow, se.Selected, se.Baseline = phase, selected, baseline
		return nil
	})
}

// SetOffered records the select_action choices get_next_action offered the session.
func (s *Store) SetOffered(sessionID, offered string) error {
	return s.updateSession(sessionID, func(se *Session) error {
		if se.Offered == offered {
			return errNoChange
		}
		se.Offered = offered
		return nil
	})
}

// SetWaiting records what the task session was told to wait for ("" for nothing).
func (s *Store) SetWaiting(sessionID, waiting string) error {
	return s.updateSession(sessionID, func(se *Session) error {
		if se.Waiting == waiting {
			return errNoChange
		}
		se.Waiting = waiting
		return nil
	})
}

// SetQueued records the sub-tasks a manager's session starts once their dependencies
// are done.
func (s *Store) SetQueued(sessionID, queued string) error {
	return s.updateSession(sessionID, func(se *Session) error {
		if se.Queued == queued {
			return errNoChange
		}
		se.Queued = queued
		return nil
	})
}

// updateSession is the read-modify-write of one session under the lock.
func (s *Store) updateSession(id string, fn func(*Session) error) error {
	if err := ValidateEntityID(PrefixSession, id); err != nil {
		return err
	}
	return s.locked(func() error { return s.updateSessionLocked(id, fn) })
}

func (s *Store) updateSessionLocked(id string, fn func(*Session) error) error {
	se, err := s.readSession(id)
	if err != nil {
		return err
	}
	if err := fn(se); err != nil {
		if errors.Is(err, errNoChange) {
			return nil
		}
		return err
	}
	se.UpdatedAt = s.Now()
	se.Version++
	return s.writeSessionLocked(se)
}

// EndOrphans ends the active sessions of an agent ("" for all) whose serving process is
// gone or whose lease expired. Only those sessions end; a live sibling of the other purpose
// is untouched (anchor defect 9.1.1).
func (s *Store) EndOrphans(agentID string) (int, error) {
	n := 0
	err := s.locked(func() error {
		var err error
		n, err = s.endOrphansLocked(agentID)
		return err
	})
	return n, err
}

func (s *Store) endOrphansLocked(agentID string) (int, error) {
	all, err := s.Sessions(agentID)
	if err != nil {
		return 0, err
	}
	now := s.Now()
	n := 0
	for _, se := range all {
		if se.State == SessionEnded {
			// Written where it stays by an older version: move it out of the way.
			if err := s.writeSessionLocked(se); err != nil {
				return n, err
			}
			continue
		}
		if se.State != SessionActive || se.Live(now) {
			continue
		}
		reason := "process_gone"
		if !now.Before(se.ExpiresAt) {
			reason = "lease_expired"
		}
		if err := s.updateSessionLocked(se.ID, func(cur *Session) error { return s.endSession(cur, reason) }); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
