package filestore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/aipm/aipm/filestore/internal/engine"
)

// requesterWindow is how many of the assignee's most recent received messages are searched
// for the requester of a task request (the window SPEC §5.2 (5) calls "the last N
// messages"; 20 is the original's chat context size).
const requesterWindow = 20

// TaskRequest describes a task an agent asks to have assigned to itself (request_task). The
// rest is decided by RequestTask: the assignee (the caller), status backlog, and the
// approval.
type TaskRequest struct {
	Title       string
	Description string
	Priority    string // default medium
	ParentID    string
	// RequestMessageID names the message in which the requester asked for this task; without
	// it, one of the recent messages must be it.
	RequestMessageID string
}

// RequestResult is what RequestTask did: the new task and the human ancestors of the
// assignee who were messaged to approve it (empty when approved at once).
type RequestResult struct {
	Task     *Task
	Notified []string
}

// RequestTask creates a backlog task assigned to the actor itself, on behalf of requesterID
// (empty: the actor). The original system never assigned a requested task to anyone but
// the caller, and never trusted a claimed requester: it read it from the caller's mailbox.
// Here the requester may be named, so a requester other than the actor must have asked the
// actor for this very task (unverified_requester otherwise, see askedFor) — without this
// check any agent could approve its own work by naming its manager.
//
// The task is approved at once (approved_by the requester) when the requester is an
// ancestor of the actor; otherwise it is pending_approval, cannot start (SPEC §4.3), and
// every human ancestor of the actor gets a system message in its mailbox asking to approve
// or reject it. AI ancestors are not messaged: they find pending tasks through the task
// tools (the task view shows the approval); humans read their mailbox.
func (s *Store) RequestTask(actor Actor, requesterID string, r TaskRequest) (*RequestResult, error) {
	if err := ValidateAgentID(actor.ID); err != nil {
		return nil, err
	}
	if requesterID == "" {
		requesterID = actor.ID
	}
	if err := ValidateAgentID(requesterID); err != nil {
		return nil, err
	}
	var res *RequestResult
	s.warmTasks()
	err := s.locked(func() error {
		if _, err := s.Member(requesterID); err != nil {
			return err
		}
		if requesterID != actor.ID {
			asked, err := s.askedFor(actor.ID, requesterID, r.Title, r.RequestMessageID)
			if err != nil {
				return err
			}
			if !asked {
				return newErr(ErrUnauthorized, "unverified_requester",
					"name as requester someone whose message to you is the request itself (the task's title alone, or after please, task: or could you; request_message_id may name that message), or omit requester_id to request it yourself (it then waits for approval)",
					"agent %s has not asked agent %s for %q in its last %d received messages (a message that only mentions the title is no request)", requesterID, actor.ID, clip(r.Title), requesterWindow)
			}
		}
		all, err := s.taskSetLocked()
		if err != nil {
			return err
		}
		approval := ApprovalPending
		if s.IsAncestor(requesterID, actor.ID) {
			approval = ApprovalApproved
		}
		t, err := s.newTask(actor, NewTask{Title: r.Title, Description: r.Description, Priority: r.Priority,
			Status: StatusBacklog, AssigneeID: actor.ID, ParentID: r.ParentID, RequesterID: requesterID, Approval: approval}, all)
		if err != nil {
			return err
		}
		ids, err := s.mintTaskIDs(1, t.CreatedAt)
		if err != nil {
			return err
		}
		t.ID = ids[0]
		if approval == ApprovalApproved {
			t.ApprovedBy = requesterID // the ancestor's request is the approval
		}
		if err := s.saveNewTask(actor, t); err != nil {
			return err
		}
		res = &RequestResult{Task: t, Notified: []string{}}
		if approval == ApprovalApproved {
			return nil
		}
		humans, err := s.humanAncestors(actor.ID)
		if err != nil {
			return err
		}
		for _, h := range humans {
			m := Message{ID: NewID(PrefixMessage, t.CreatedAt), SenderID: SystemSender, Content: approvalRequestText(t, requesterID),
				CreatedAt: t.CreatedAt, RelatedTaskID: t.ID}
			if err := s.appendMailbox(h, m); err != nil {
				return err
			}
			res.Notified = append(res.Notified, h)
		}
		return nil
	})
	return res, err
}

func approvalRequestText(t *Task, requesterID string) string {
	return fmt.Sprintf("Task request awaiting your approval: %s %q, for %s, requested by %s. "+
		"Approve it with `aipm task approve %s`, or reject it with `aipm task reject %s --reason ...`.",
		t.ID, t.Title, t.AssigneeID, requesterID, t.ID, t.ID)
}

// ApproveTask approves a pending task request. The actor must be an ancestor of the
// task's assignee.
func (s *Store) ApproveTask(actor Actor, taskID string) (*Task, error) {
	return s.decideApproval(actor, taskID, ApprovalApproved, "")
}

// RejectTask rejects a pending task request, recording the reason. The actor must be an
// ancestor of the task's assignee. The task keeps its status: a rejected task can never
// start (SPEC §4.3), and the original left its status alone too, so the board still shows
// what was asked and why it was refused; whoever owns it may cancel it.
func (s *Store) RejectTask(actor Actor, taskID, reason string) (*Task, error) {
	return s.decideApproval(actor, taskID, ApprovalRejected, reason)
}

func (s *Store) decideApproval(actor Actor, taskID, to, reason string) (*Task, error) {
	if err := ValidateEntityID(PrefixTask, taskID); err != nil {
		return nil, err
	}
	if err := ValidateAgentID(actor.ID); err != nil {
		return nil, err
	}
	var t *Task
	err := s.locked(func() error {
		var err error
		if t, err = s.Task(taskID); err != nil {
			return err
		}
		if t.Approval != ApprovalPending {
			return newErr(ErrConflict, "not_pending_approval", "only a pending_approval task can be approved or rejected",
				"task %s is not pending approval (approval: %s)", t.ID, t.Approval)
		}
		if t.AssigneeID == "" {
			return newErr(ErrConflict, "assignee_required", "assign the task first; its assignee's ancestors decide on it",
				"task %s has no assignee, so nobody can approve it", t.ID)
		}
		if !s.IsAncestor(actor.ID, t.AssigneeID) {
			return newErr(ErrUnauthorized, "unauthorized", "ask an ancestor of "+t.AssigneeID+" (its manager or their superiors) to decide",
				"agent %s is not an ancestor of %s, the assignee of task %s", actor.ID, t.AssigneeID, t.ID)
		}
		prev := t.Approval
		t.Approval = to
		if to == ApprovalApproved {
			t.ApprovedBy = actor.ID
		} else {
			t.RejectedReason = reason
		}
		return s.commitTask(actor, t, s.Now(), Event{Change: "approval", From: prev, To: to, Reason: reason, RequesterID: t.RequesterID})
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// humanAncestors returns the human members on the agent's parent chain, nearest first.
func (s *Store) humanAncestors(agentID string) ([]string, error) {
	var out []string
	seen := map[string]bool{agentID: true}
	a, err := s.Agent(agentID)
	if err != nil {
		return nil, err
	}
	for a.ParentID != "" && !seen[a.ParentID] {
		seen[a.ParentID] = true
		if a, err = s.Agent(a.ParentID); err != nil {
			if errors.Is(err, ErrNotFound) {
				break // a dangling parent ends the chain, as in IsAncestor; doctor reports it
			}
			return nil, err
		}
		if a.Type == AgentHuman && a.Status != AgentInactive {
			out = append(out, a.ID)
		}
	}
	return out, nil
}

// recentSenders returns the senders of the agent's last n received messages (system
// messages aside), newest first. Only the tail of the mailbox is read, so the cost does
// not grow with its history.
func (s *Store) recentSenders(agentID string, n int) ([]string, error) {
	if err := ValidateAgentID(agentID); err != nil {
		return nil, err
	}
	// n messages of at most 4000 characters (up to 4 bytes each, JSON-escaped) fit here.
	tail := int64(n) * 40_000
	data, err := readTail(s.mailboxPath(agentID), tail)
	if err != nil {
		return nil, err
	}
	var out []string
	for len(data) > 0 && len(out) < n {
		i := bytes.LastIndexByte(data[:len(data)-1], '\n')
		line := data[i+1:]
		data = data[:i+1]
		var m Message
		if json.Unmarshal(line, &m) != nil || !m.received(agentID) || m.SenderID == SystemSender {
			continue
		}
		out = append(out, m.SenderID)
	}
	return out, nil
}

// askedFor reports whether the requester asked the agent for the task titled title: the
// message named msgID (among the agent's last requestIDWindow mailbox lines) or, without
// one, one of the agent's last requesterWindow received messages is from requesterID and
// is a request for that title (see isRequestFor). A message that merely mentions the
// title is no proof: "Please do NOT deploy to production" must not approve
// "deploy to production", nor a greeting a task in the greeter's name.
func (s *Store) askedFor(agentID, requesterID, title, msgID string) (bool, error) {
	if normText(title) == "" {
		return true, nil // no title: newTask refuses the request for that
	}
	found, n, lines := false, 0, 0
	err := scanBack(s.mailboxPath(agentID), func(line []byte) bool {
		lines++
		m, ok := parseMessage(line)
		if !ok || !m.received(agentID) || m.SenderID == SystemSender {
			return lines < requestIDWindow
		}
		n++
		if msgID != "" {
			if m.ID != msgID {
				return lines < requestIDWindow
			}
			found = m.SenderID == requesterID && isRequestFor(m.Content, title)
			return false
		}
		if m.SenderID == requesterID && isRequestFor(m.Content, title) {
			found = true
			return false
		}
		return n < requesterWindow
	})
	return found, err
}

// requestIDWindow is how many of the agent's most recent mailbox lines are searched for a
// message named by request_message_id.
const requestIDWindow = 1000

// requestOpeners may open a request message; the last is the original system's marker,
// which its mailboxes still hold ("@@タスク作成: title --priority high").
var requestOpeners = []string{"please:", "please", "task:", "request:", "request_task:",
	"could you please", "could you", "can you please", "can you", "would you please", "would you", "will you",
	"@@タスク作成:"}

// isRequestFor reports whether a message's whole text is a request for the task titled
// title: the title alone, or after one opener ("please", "task:", "could you", ... and a
// leading "and" or "also"), or before a closing "please"; case, spacing and closing
// punctuation aside. After the original's marker its trailing options ("--priority high")
// are allowed too. Anything else — more words, a negation, a question about the title — is
// a message about the task, not a request for it: "Please do NOT deploy to production" and
// "could you not deploy to production?" do not request "deploy to production".
func isRequestFor(content, title string) bool {
	want := trimClosing(normText(title))
	got := trimClosing(normText(content))
	if want == "" {
		return false
	}
	for _, w := range []string{"and ", "also ", "so "} {
		got = strings.TrimPrefix(got, w)
	}
	if trimClosing(strings.TrimSuffix(strings.TrimSuffix(got, " please"), ",")) == want || got == want {
		return true
	}
	for _, op := range requestOpeners {
		rest, ok := strings.CutPrefix(got, op)
		if !ok || (rest != "" && !strings.HasPrefix(rest, " ") && !strings.HasSuffix(op, ":")) {
			continue
		}
		rest = trimClosing(strings.TrimSpace(rest))
		rest = trimClosing(strings.TrimSuffix(strings.TrimSuffix(rest, " please"), ","))
		if rest == want {
			return true
		}
		if op == "@@タスク作成:" {
			if head, _, ok := strings.Cut(rest, " --"); ok && trimClosing(head) == want {
				return true
			}
		}
		return false // one opener only: "please please X" is not stripped twice
	}
	return false
}

// trimClosing removes the punctuation and spaces a sentence may end with.
func trimClosing(s string) string { return strings.TrimRight(s, " .!?,。！？") }

// normText lowercases s and collapses its runs of white space to one space.
func normText(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }

// readTail returns the complete lines within the last limit bytes of a file: a line cut by
// the window and a last line without newline (a write in progress) are left out. A missing
// file has no lines.
func readTail(path string, limit int64) ([]byte, error) {
	f, err := engine.OpenRead(path, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	// One byte more than the window: if it is a newline, the window starts on a whole line.
	start := max(info.Size()-limit-1, 0)
	data, err := io.ReadAll(io.NewSectionReader(f, start, info.Size()-start))
	if err != nil {
		return nil, err
	}
	if start > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return nil, nil
		}
		data = data[i+1:]
	}
	return data[:bytes.LastIndexByte(data, '\n')+1], nil
}
