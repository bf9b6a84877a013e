package filestore

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aipm/aipm/filestore/msg"
)

// Chat → task operations (SPEC §5.2, seed 000). A chat session does no work itself, but a
// superior may ask an agent in chat to start one of its tasks or to change one; the chat
// session then acts on that request. The original trusted the claimed requester and
// bypassed the task rules; here every request is checked, in this order, each failure a
// distinct error:
//
//  1. the requester exists (agent_not_found);
//  2. the requester is a project member (agent_not_assigned_to_project);
//  3. the requester is an ancestor of the caller (unauthorized, naming both);
//  4. the caller may touch the task: start — it is the assignee; update — it is the
//     assignee or the creator (unauthorized);
//  5. the requester really asked: it sent the caller a message in the named conversation,
//     or among the caller's last requesterWindow received messages. This one does not
//     refuse: seed 000 checks the chat history to record a warning and "does not block"
//     (ブロックはしない) — the ancestry check of step 3 is what keeps non-superiors out. A
//     request without such a message goes ahead, and the history records the warning
//     twice: on the task's event (warning), and as an unverified_requester event of the
//     caller, which `aipm status` shows the human. Naming a conversation the caller is no
//     part of is still refused (not_conversation_participant): that is a wrong argument,
//     not a missing message;
//  6. the task rules of SPEC §4.3, exactly as for every other writer.
//
// Nothing is written unless all pass. The task records the caller as status_changed_by;
// the history event records the requester, the conversation and the fields changed (the
// seed's ChatModificationLog).

// StartTaskFromChat moves a task assigned to the actor to in_progress at the request of
// requesterID, a superior of the actor (start_task_from_chat). conversationID, if not
// empty, is the conversation in which the requester asked; otherwise the request must be
// among the actor's recent received messages. The move obeys every entry rule of
// in_progress — dependencies done, approval, max_parallel_tasks — which the original
// skipped. A task session then does the work (the coordinator starts one for an
// in_progress task without a live task session).
func (s *Store) StartTaskFromChat(actor Actor, taskID, requesterID, conversationID string) (*StatusChange, error) {
	if err := validateChatRequest(actor, taskID, requesterID, conversationID); err != nil {
		return nil, err
	}
	var ch *StatusChange
	s.warmTasks()
	err := s.locked(func() error {
		if err := s.checkRequesterLocked(actor, requesterID); err != nil {
			return err
		}
		t, err := s.Task(taskID)
		if err != nil {
			return err
		}
		if t.AssigneeID != actor.ID {
			return newErr(ErrUnauthorized, "unauthorized", "start only tasks assigned to you; ask "+requesterID+" to assign it to you first",
				"task %s is assigned to %s, not to %s: only its assignee can start it", t.ID, orNobody(t.AssigneeID), actor.ID)
		}
		warning, err := s.checkRequestMessageLocked(actor.ID, requesterID, conversationID)
		if err != nil {
			return err
		}
		all, err := s.taskSetLocked()
		if err != nil {
			return err
		}
		if err := s.checkStatus(all, t, StatusInProgress); err != nil {
			return err
		}
		ev := Event{RequesterID: requesterID, ConversationID: conversationID, Fields: []string{"status"}, Warning: warning}
		if ch, err = s.applyStatusEvent(actor, all, t, StatusInProgress, "", ev); err != nil {
			return err
		}
		return s.warnUnverifiedLocked(actor, t.ID, "started", ev)
	})
	return ch, err
}

// ChatTaskUpdate is an update_task_from_chat request. A nil field is left unchanged.
type ChatTaskUpdate struct {
	TaskID      string
	RequesterID string
	// ConversationID is the conversation in which the requester asked ("" to look for the
	// request among the caller's recent received messages).
	ConversationID string
	Title          *string
	Description    *string
	Priority       *string
	Status         *string
	// BlockedReason applies to a task that is or becomes blocked.
	BlockedReason *string
}

// ChatTaskResult is what UpdateTaskFromChat did.
type ChatTaskResult struct {
	Task *Task
	// PreviousStatus is the status before the update (equal to Task.Status if the status
	// did not change).
	PreviousStatus string
	// UpdatedFields lists the fields that changed, in the order title, description,
	// priority, status, blocked_reason; empty if the request changed nothing (then nothing
	// was written).
	UpdatedFields []string
	// Cascaded lists the sub-tasks blocked or cancelled with the task.
	Cascaded []*Task
}

// UpdateTaskFromChat changes a task's title, description, priority, status or blocked
// reason at the request of requesterID, a superior of the actor (update_task_from_chat).
// The actor must be the task's assignee or creator. A status change follows the table
// and entry rules of SPEC §4.3 like any other (blocked and cancelled cascade to the
// sub-tasks); a field given with its current value is not a change. All changes are one
// write and one history event. A finished (done or cancelled) task is not edited.
func (s *Store) UpdateTaskFromChat(actor Actor, r ChatTaskUpdate) (*ChatTaskResult, error) {
	if err := validateChatRequest(actor, r.TaskID, r.RequesterID, r.ConversationID); err != nil {
		return nil, err
	}
	if err := r.validate(); err != nil {
		return nil, err
	}
	var res *ChatTaskResult
	s.warmTasks()
	err := s.locked(func() error {
		if err := s.checkRequesterLocked(actor, r.RequesterID); err != nil {
			return err
		}
		t, err := s.Task(r.TaskID)
		if err != nil {
			return err
		}
		if t.AssigneeID != actor.ID && t.CreatedBy != actor.ID {
			return newErr(ErrUnauthorized, "unauthorized", "change only tasks assigned to you or created by you; ask "+r.RequesterID+" to change it",
				"agent %s may not change task %s: it is assigned to %s and was created by %s", actor.ID, t.ID, orNobody(t.AssigneeID), orNobody(t.CreatedBy))
		}
		warning, err := s.checkRequestMessageLocked(actor.ID, r.RequesterID, r.ConversationID)
		if err != nil {
			return err
		}
		if res, err = s.updateFromChatLocked(actor, t, r, warning); err != nil || len(res.UpdatedFields) == 0 {
			return err
		}
		return s.warnUnverifiedLocked(actor, t.ID, "changed", Event{RequesterID: r.RequesterID, ConversationID: r.ConversationID, Warning: warning})
	})
	return res, err
}

// validate checks the update's values before anything is read.
func (r *ChatTaskUpdate) validate() error {
	if r.Title == nil && r.Description == nil && r.Priority == nil && r.Status == nil && r.BlockedReason == nil {
		return newErr(ErrInvalid, "invalid_argument", "give at least one of title, description, priority, status, blocked_reason",
			"nothing to update in task %s", r.TaskID)
	}
	if err := checkEditedFields(&r.Title, r.Priority); err != nil {
		return err
	}
	if r.Status != nil && !slices.Contains(Statuses, *r.Status) {
		return newErr(ErrInvalid, "invalid_status", "use one of "+strings.Join(Statuses, ", "), "invalid status %q", clip(*r.Status))
	}
	if r.BlockedReason != nil && strings.TrimSpace(*r.BlockedReason) == "" {
		return newErr(ErrInvalid, "invalid_argument", "say why the task is blocked, or leave blocked_reason out", "blocked_reason is empty")
	}
	return nil
}

// updateFromChatLocked applies a checked request (step 6): the caller holds the lock.
func (s *Store) updateFromChatLocked(actor Actor, t *Task, r ChatTaskUpdate, warning string) (*ChatTaskResult, error) {
	res := &ChatTaskResult{Task: t, PreviousStatus: t.Status, UpdatedFields: []string{}}
	to := t.Status
	if r.Status != nil {
		to = *r.Status
	}
	if r.BlockedReason != nil && to != StatusBlocked {
		return nil, newErr(ErrInvalid, "invalid_argument", "give blocked_reason only with status blocked, or for a task that is blocked",
			"task %s is %s, not blocked: blocked_reason does not apply", t.ID, to)
	}
	changes := editChanges(t, r.Title, r.Description, r.Priority)
	fields := changedFields(changes)
	if to != t.Status {
		fields = append(fields, "status")
	}
	if r.BlockedReason != nil && *r.BlockedReason != t.BlockedReason {
		fields = append(fields, "blocked_reason")
		changes = append(changes, FieldChange{"blocked_reason", t.BlockedReason, *r.BlockedReason})
	}
	if len(fields) == 0 {
		return res, nil
	}
	if Finished(t.Status) {
		return nil, newErr(ErrConflict, "task_finished", "a finished task keeps its record; create a new task for further work",
			"task %s is %s and cannot be changed", t.ID, t.Status)
	}
	var all taskSet
	if to != t.Status {
		var err error
		if all, err = s.taskSetLocked(); err != nil {
			return nil, err
		}
		if err := s.checkStatus(all, t, to); err != nil {
			return nil, err
		}
	}
	if r.Title != nil {
		t.Title = *r.Title
	}
	if r.Description != nil {
		t.Description = *r.Description
	}
	if r.Priority != nil {
		t.Priority = *r.Priority
	}
	res.UpdatedFields = fields
	ev := Event{RequesterID: r.RequesterID, ConversationID: r.ConversationID, Fields: fields, Changes: changes, Warning: warning}
	if to == t.Status {
		if r.BlockedReason != nil {
			t.BlockedReason = *r.BlockedReason
		}
		ev.Change = "updated"
		return res, s.commitTask(actor, t, s.Now(), ev)
	}
	reason := ""
	if to == StatusBlocked {
		reason = "blocked at the request of " + r.RequesterID
		if r.BlockedReason != nil {
			reason = *r.BlockedReason
		}
	}
	ch, err := s.applyStatusEvent(actor, all, t, to, reason, ev)
	if err != nil {
		return nil, err
	}
	res.Cascaded = ch.Cascaded
	return res, nil
}

// validateChatRequest checks the identifiers of a chat → task request before any of them
// reaches a path.
func validateChatRequest(actor Actor, taskID, requesterID, conversationID string) error {
	if err := ValidateAgentID(actor.ID); err != nil {
		return err
	}
	if err := ValidateEntityID(PrefixTask, taskID); err != nil {
		return err
	}
	if requesterID == "" {
		return newErr(ErrInvalid, "invalid_argument", "pass requester_id: the superior who asked you in chat", "requester_id is required")
	}
	if err := ValidateAgentID(requesterID); err != nil {
		return err
	}
	if conversationID != "" {
		if err := ValidateEntityID(PrefixConversation, conversationID); err != nil {
			return err
		}
	}
	return nil
}

// checkRequesterLocked is steps 1–3: the caller is a member, and the requester exists,
// is a member, and is an ancestor of the caller.
func (s *Store) checkRequesterLocked(actor Actor, requesterID string) error {
	if _, err := s.Member(actor.ID); err != nil {
		return err
	}
	if _, err := s.Agent(requesterID); err != nil {
		return err
	}
	if _, err := s.Member(requesterID); err != nil {
		return err
	}
	if !s.IsAncestor(requesterID, actor.ID) {
		return newErr(ErrUnauthorized, "unauthorized",
			"only a superior of yours (your manager, or theirs) can ask you to start or change a task from chat; name the superior who asked you",
			"this operation needs a request from a superior: requester %s is not an ancestor of %s", requesterID, actor.ID)
	}
	return nil
}

// checkRequestMessageLocked is step 5: the requester sent the agent a message — in the
// conversation, if one is named (the agent must be part of it); otherwise among the
// agent's last requesterWindow received messages (the check RequestTask makes). A
// request with no such message is not refused: the warning says what is missing ("" when
// the message is there).
func (s *Store) checkRequestMessageLocked(agentID, requesterID, conversationID string) (warning string, err error) {
	if conversationID == "" {
		senders, err := s.recentSenders(agentID, requesterWindow)
		if err != nil {
			return "", err
		}
		if !slices.Contains(senders, requesterID) {
			return fmt.Sprintf("requester %s sent %s no message among its last %d received messages", requesterID, agentID, requesterWindow), nil
		}
		return "", nil
	}
	c, err := s.readConversation(conversationID)
	if err != nil {
		return "", err
	}
	if !c.Includes(agentID) {
		return "", newErr(ErrUnauthorized, "not_conversation_participant", "name a conversation you are part of, or leave conversation_id out",
			"agent %s is not part of conversation %s (between %s and %s)", agentID, c.ID, c.InitiatorID, c.ParticipantID)
	}
	if !c.Includes(requesterID) {
		return fmt.Sprintf("requester %s is not part of conversation %s (between %s and %s), so it asked nothing there", requesterID, c.ID, c.InitiatorID, c.ParticipantID), nil
	}
	page, err := s.lastMessages(agentID, requesterWindow, func(m *Message) (bool, bool) {
		return m.ConversationID == c.ID, !m.CreatedAt.Before(c.CreatedAt.Add(-timeSlack))
	})
	if err != nil {
		return "", err
	}
	for _, m := range page.Messages {
		if m.received(agentID) && m.SenderID == requesterID {
			return "", nil
		}
	}
	return fmt.Sprintf("requester %s sent %s no message in conversation %s (last %d messages)", requesterID, agentID, c.ID, requesterWindow), nil
}

// ChangeUnverifiedRequester is the change of the history event that records a chat
// session acting on a request its chat history does not show (step 5). The event is the
// caller's (entity agent, id the caller), so `aipm status` finds it among the caller's
// few events, whatever became of the task.
const ChangeUnverifiedRequester = "unverified_requester"

// unverifiedScan is how many of an agent's latest history events UnverifiedRequests reads:
// an agent has few events of its own (its record, its passkey, these warnings).
const unverifiedScan = 20

// UnverifiedShown is how long `aipm status` and the web view list an unverified chat
// request: the history keeps it for good; they show what needs a look now.
const UnverifiedShown = 24 * time.Hour

// UnverifiedRequests are the agent's unverified_requester events at or after since,
// oldest first, among its latest unverifiedScan history events: what `aipm status` and the
// web view show the human.
func (s *Store) UnverifiedRequests(agentID string, since time.Time) ([]Event, error) {
	evs, _, err := s.EventsTail(agentID, unverifiedScan)
	if err != nil {
		return nil, err
	}
	var out []Event
	for _, e := range evs {
		if e.Entity == "agent" && e.Change == ChangeUnverifiedRequester && !e.At.Before(since) {
			out = append(out, e)
		}
	}
	return out, nil
}

// warnUnverifiedLocked records, when ev carries a warning, that the actor did (started,
// changed) task taskID on an unverified request. The caller holds the lock.
func (s *Store) warnUnverifiedLocked(actor Actor, taskID, did string, ev Event) error {
	if ev.Warning == "" {
		return nil
	}
	return s.appendEvent(Event{At: s.Now(), Actor: actor.ID, Via: actor.Via, Entity: "agent", ID: actor.ID, Change: ChangeUnverifiedRequester,
		To: taskID, Reason: did + " task " + taskID + " at the request of " + ev.RequesterID, ConversationID: ev.ConversationID,
		RequesterID: ev.RequesterID, Warning: ev.Warning})
}

// timeSlack allows for lines merged from another clone that are not in time order.
const timeSlack = time.Minute

func orNobody(id string) string {
	if id == "" {
		return "nobody"
	}
	return id
}

// TaskSessionNotice is a chat session's word to the same agent's task session
// (notify_task_session): check the chat.
type TaskSessionNotice struct {
	// ConversationID is the conversation to read, if the chat was one (a chat with a
	// human has none: no id is made up, unlike the original).
	ConversationID string
	// RelatedTaskID is the task it is about, if any.
	RelatedTaskID string
	// Message is a summary for the task session.
	Message string
	// Priority normal (default) or high: high makes it an interrupt, so the task session
	// stops what it is doing to read it.
	Priority string
	// Instruction overrides the default instruction (e.g. in the project's language).
	Instruction string
}

// NotifyTaskSession adds a notification from the actor's chat session to its own task
// session (seed 000): type chat_session_notification, or interrupt at priority high;
// action check_chat; target the actor itself, purpose task. A conversation must exist and
// include the actor (not_conversation_participant); a related task must exist; at least
// one of conversation and message is needed. It also reports whether the agent has a live
// task session now. Without one, the notice is until_read: the agent's next task session
// gets it (and the ones after, until one of them reads it).
func (s *Store) NotifyTaskSession(actor Actor, r TaskSessionNotice) (*Notification, bool, error) {
	if err := ValidateAgentID(actor.ID); err != nil {
		return nil, false, err
	}
	if r.ConversationID == "" && strings.TrimSpace(r.Message) == "" {
		return nil, false, newErr(ErrInvalid, "invalid_argument", "pass the conversation_id to read, or a message summing up what the task session should know",
			"nothing to notify: neither conversation_id nor message given")
	}
	p, err := s.ProjectView()
	if err != nil {
		return nil, false, err
	}
	lang := p.Settings.Language // the notice is read in the language of the moment it is made
	n := Notification{TargetAgentID: actor.ID, TargetPurpose: PurposeTask, Type: NotifyChatSession, Action: ActionCheckChat,
		Priority: r.Priority, TaskID: r.RelatedTaskID, ConversationID: r.ConversationID, FromAgentID: actor.ID,
		Message: r.Message, Instruction: r.Instruction}
	if n.Priority == "" {
		n.Priority = NotifyNormal
	}
	if n.Priority == NotifyHigh {
		n.Type = NotifyInterrupt
	}
	if strings.TrimSpace(n.Message) == "" {
		n.Message = msg.Text(lang, "self_notice.message")
	}
	if n.Instruction == "" {
		n.Instruction = selfNoticeInstruction(r.ConversationID, lang)
	}
	if err := s.validateNotification(&n); err != nil {
		return nil, false, err
	}
	var out *Notification
	live := false
	err = s.locked(func() error {
		if r.ConversationID != "" {
			c, err := s.readConversation(r.ConversationID)
			if err != nil {
				return err
			}
			if !c.Includes(actor.ID) {
				return newErr(ErrUnauthorized, "not_conversation_participant", "name a conversation you are part of",
					"agent %s is not part of conversation %s (between %s and %s)", actor.ID, c.ID, c.InitiatorID, c.ParticipantID)
			}
		}
		sessions, err := s.LiveSessions(actor.ID)
		if err != nil {
			return err
		}
		live = slices.ContainsFunc(sessions, func(se *Session) bool { return se.Purpose == PurposeTask })
		// With no task session to read it now, it waits for the next one (seed 000).
		n.UntilRead = !live
		out, _, err = s.addNotificationLocked(actor, n)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return out, live, nil
}

// selfNoticeInstruction tells the task session that the notice is its own (seed 000: the
// same agent, another session) and how to read the chat.
func selfNoticeInstruction(conversationID, lang string) string {
	if conversationID != "" {
		return msg.Text(lang, "self_notice.conversation", conversationID)
	}
	return msg.Text(lang, "self_notice.plain")
}
