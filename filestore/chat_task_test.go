package filestore

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

func ptr(s string) *string { return &s }

// unchanged snapshots events.jsonl and the task files, and fails the test if a refused
// operation wrote anything.
func unchanged(t *testing.T, s *Store, taskIDs ...string) func() {
	t.Helper()
	before := [][]byte{fileBytes(t, s.path("events.jsonl"))}
	for _, id := range taskIDs {
		before = append(before, fileBytes(t, s.taskPath(id)))
	}
	return func() {
		t.Helper()
		after := [][]byte{fileBytes(t, s.path("events.jsonl"))}
		for _, id := range taskIDs {
			after = append(after, fileBytes(t, s.taskPath(id)))
		}
		for i := range before {
			if !bytes.Equal(before[i], after[i]) {
				t.Errorf("a refused operation wrote (file %d of events.jsonl, %v)", i, taskIDs)
			}
		}
	}
}

func lastEvent(t *testing.T, s *Store, id string) Event {
	t.Helper()
	evs := mustEvents(t, s, id)
	if len(evs) == 0 {
		t.Fatalf("no history for %s", id)
	}
	return evs[len(evs)-1]
}

// TestStartTaskFromChatValidationOrder: each case fails at one step of SPEC §5.2 while
// every later step would fail too, so the error shows which check runs first.
func TestStartTaskFromChatValidationOrder(t *testing.T) {
	cases := []struct {
		name      string
		requester string
		assignee  string
		message   bool // the requester messaged w1
		depDone   bool // the task's dependency is done
		want      string
		mention   []string
	}{
		{"1 requester exists", "ghost", "w2", false, false, "agent_not_found", []string{"ghost"}},
		{"2 requester is a member", "gone", "w2", false, false, "agent_not_assigned_to_project", []string{"gone"}},
		{"3 requester is an ancestor", "w2", "w2", false, false, "unauthorized", []string{"w2", "w1", "ancestor"}},
		{"4 task assigned to the caller", "mgr", "w2", false, false, "unauthorized", []string{"assigned to w2"}},
		// 5 only warns (seed 000: ブロックはしない): a requester that never asked gets as far
		// as the transition rules
		{"5 requester never asked", "mgr", "w1", false, false, "dependencies_not_done", nil},
		{"6 transition rules", "mgr", "w1", true, false, "dependencies_not_done", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newTestStore(t)
			addAgents(t, s) // gone: inactive sibling of w1
			dep := mustTask(t, s, NewTask{Title: "first", AssigneeID: "w2"})
			tk := mustTask(t, s, NewTask{Title: "second", Status: StatusTodo, AssigneeID: c.assignee, Dependencies: []string{dep.ID}})
			if c.message {
				say(t, s, c.requester, "w1", "please start "+tk.ID)
			}
			say(t, s, "w2", "w1", "hi") // a message from someone else is no request
			check := unchanged(t, s, tk.ID, dep.ID)
			_, err := s.StartTaskFromChat(as("w1"), tk.ID, c.requester, "")
			if code(err) != c.want {
				t.Fatalf("got %q (%v), want %s", code(err), err, c.want)
			}
			for _, m := range c.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("message %q does not name %q", err, m)
				}
			}
			var e *Error
			if errors.As(err, &e) && e.Hint == "" {
				t.Errorf("error without hint: %v", err)
			}
			check()
		})
	}
}

func TestStartTaskFromChat(t *testing.T) {
	s := newTestStore(t)
	tk := mustTask(t, s, NewTask{Title: "dashboard", Status: StatusTodo, AssigneeID: "w1"})
	say(t, s, "mgr", "w1", "@@タスク開始: "+tk.ID)
	ch, err := s.StartTaskFromChat(as("w1"), tk.ID, "mgr", "")
	if err != nil {
		t.Fatal(err)
	}
	if ch.Previous != StatusTodo || ch.Task.Status != StatusInProgress || ch.Task.StatusChangedBy != "w1" {
		t.Errorf("change %+v", ch)
	}
	disk, err := s.Task(tk.ID)
	if err != nil || disk.Status != StatusInProgress || disk.StatusChangedBy != "w1" || disk.Version != tk.Version+1 {
		t.Errorf("on disk %+v %v", disk, err)
	}
	ev := lastEvent(t, s, tk.ID)
	if ev.Actor != "w1" || ev.Via != ViaTool || ev.Change != "status" || ev.From != StatusTodo || ev.To != StatusInProgress ||
		ev.RequesterID != "mgr" || ev.ConversationID != "" || !slices.Equal(ev.Fields, []string{"status"}) {
		t.Errorf("history %+v", ev)
	}
	// Already in progress: the ordinary transition error.
	if _, err := s.StartTaskFromChat(as("w1"), tk.ID, "mgr", ""); code(err) != "invalid_status_transition" {
		t.Errorf("second start: got %q", code(err))
	}
}

func TestStartTaskFromChatKeepsEntryRules(t *testing.T) {
	s := approvalStore(t) // w3 under mgr2 under lead (human); w3 may run 3 tasks, w1 one
	say(t, s, "mgr", "w1", "start them")
	say(t, s, "lead", "w3", "start it")
	startTask(t, s, "w1")
	second := mustTask(t, s, NewTask{Title: "second", Status: StatusTodo, AssigneeID: "w1"})
	backlog := mustTask(t, s, NewTask{Title: "later", AssigneeID: "w1"})
	say(t, s, "w2", "w3", "@@タスク作成")
	pending := mustRequest(t, s, "w3", "w2", "asked by a peer").Task // pending_approval
	writeTaskStatus(t, s, pending.ID, StatusTodo)
	for _, c := range []struct {
		agent, requester, task, want string
	}{
		{"w1", "mgr", second.ID, "max_parallel_tasks_reached"},
		{"w1", "owner", backlog.ID, "invalid_status_transition"}, // the owner never wrote to w1: a warning, not a refusal
		{"w1", "mgr", backlog.ID, "invalid_status_transition"},
		{"w3", "lead", pending.ID, "approval_required"},
	} {
		check := unchanged(t, s, c.task)
		if _, err := s.StartTaskFromChat(as(c.agent), c.task, c.requester, ""); code(err) != c.want {
			t.Errorf("%s starts %s for %s: got %q (%v), want %s", c.agent, c.task, c.requester, code(err), err, c.want)
		}
		check()
	}
	// A grand-ancestor (the human owner) may ask too, once it has.
	say(t, s, "owner", "w2", "please start this")
	tk := mustTask(t, s, NewTask{Title: "owner's", Status: StatusTodo, AssigneeID: "w2"})
	if _, err := s.StartTaskFromChat(as("w2"), tk.ID, "owner", ""); err != nil {
		t.Errorf("owner's request: %v", err)
	}
}

func TestStartTaskFromChatInConversation(t *testing.T) {
	s := newTestStore(t)
	for _, n := range []NewAgent{{ID: "w4", ParentID: "mgr", Passkey: "w4-passkey"}} {
		if _, _, err := s.AddAgent(human, n); err != nil {
			t.Fatal(err)
		}
	}
	withW1 := mustStart(t, s, "mgr", "w1", ConversationRequest{InitialMessage: "please start the dashboard"})
	peers := mustStart(t, s, "w1", "w2", ConversationRequest{InitialMessage: "hello"})
	others := mustStart(t, s, "mgr", "w4", ConversationRequest{InitialMessage: "hello w4"})
	tk := mustTask(t, s, NewTask{Title: "dashboard", Status: StatusTodo, AssigneeID: "w1"})
	for _, c := range []struct {
		conv, want string
	}{
		{"cnv_missing", "conversation_not_found"},
		{others.ID, "not_conversation_participant"},
		{"cnv_../../x", "invalid_id"},
	} {
		check := unchanged(t, s, tk.ID)
		if _, err := s.StartTaskFromChat(as("w1"), tk.ID, "mgr", c.conv); code(err) != c.want {
			t.Errorf("conversation %s: got %q (%v), want %s", c.conv, code(err), err, c.want)
		}
		check()
	}
	if _, err := s.StartTaskFromChat(as("w1"), tk.ID, "mgr", withW1.ID); err != nil {
		t.Fatal(err)
	}
	if ev := lastEvent(t, s, tk.ID); ev.ConversationID != withW1.ID || ev.RequesterID != "mgr" || ev.Warning != "" {
		t.Errorf("history %+v", ev)
	}
	// A conversation the requester is no part of shows no request: the change goes ahead,
	// with a warning.
	if _, err := s.UpdateTaskFromChat(as("w1"), ChatTaskUpdate{TaskID: tk.ID, RequesterID: "mgr", ConversationID: peers.ID, Priority: ptr("high")}); err != nil {
		t.Fatal(err)
	}
	if ev := lastEvent(t, s, tk.ID); !strings.Contains(ev.Warning, "not part of conversation "+peers.ID) {
		t.Errorf("history %+v", ev)
	}
}

// TestUnverifiedRequestIsWarned: seed 000 checks the chat history only to record a
// warning ("ブロックはしない"). A superior whose request the caller's messages do not show
// — silent in the named conversation, or older than the last requesterWindow received
// messages, or never sent — is obeyed, and the history says so: on the task's event, and
// as an event of the caller that `aipm status` shows.
func TestUnverifiedRequestIsWarned(t *testing.T) {
	s := newTestStore(t)
	c := mustStart(t, s, "w1", "mgr", ConversationRequest{InitialMessage: "may I start?"}) // only w1 spoke in it
	say(t, s, "mgr", "w1", "start it")                                                     // outside the conversation
	tk := mustTask(t, s, NewTask{Title: "x", Status: StatusTodo, AssigneeID: "w1"})
	ch, err := s.StartTaskFromChat(as("w1"), tk.ID, "mgr", c.ID)
	if err != nil {
		t.Fatalf("requester silent in the conversation: %v", err)
	}
	if ch.Task.Status != StatusInProgress {
		t.Errorf("status %s", ch.Task.Status)
	}
	ev := lastEvent(t, s, tk.ID)
	if ev.Change != "status" || ev.RequesterID != "mgr" || !strings.Contains(ev.Warning, "no message in conversation "+c.ID) {
		t.Errorf("task history %+v", ev)
	}
	warned := func(want int) []Event {
		t.Helper()
		var out []Event
		evs, err := s.Events("w1")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.Change == ChangeUnverifiedRequester {
				out = append(out, e)
			}
		}
		if len(out) != want {
			t.Fatalf("%d unverified_requester events of w1, want %d: %+v", len(out), want, out)
		}
		return out
	}
	if w := warned(1)[0]; w.Entity != "agent" || w.Actor != "w1" || w.RequesterID != "mgr" || w.To != tk.ID || w.ConversationID != c.ID || w.Warning != ev.Warning {
		t.Errorf("agent event %+v", w)
	}

	for i := range requesterWindow {
		say(t, s, "w2", "w1", fmt.Sprint("chatter ", i))
	}
	if _, err := s.UpdateTaskFromChat(as("w1"), ChatTaskUpdate{TaskID: tk.ID, RequesterID: "mgr", Priority: ptr("high")}); err != nil {
		t.Fatalf("request older than the last %d received messages: %v", requesterWindow, err)
	}
	if ev := lastEvent(t, s, tk.ID); !strings.Contains(ev.Warning, fmt.Sprintf("no message among its last %d", requesterWindow)) {
		t.Errorf("task history %+v", ev)
	}
	warned(2)
	// A request that changes nothing writes nothing, warning included.
	if _, err := s.UpdateTaskFromChat(as("w1"), ChatTaskUpdate{TaskID: tk.ID, RequesterID: "mgr", Priority: ptr("high")}); err != nil {
		t.Fatal(err)
	}
	warned(2)
	say(t, s, "mgr", "w1", "lower it")
	if _, err := s.UpdateTaskFromChat(as("w1"), ChatTaskUpdate{TaskID: tk.ID, RequesterID: "mgr", Priority: ptr("low")}); err != nil {
		t.Fatal(err)
	}
	if ev := lastEvent(t, s, tk.ID); ev.Warning != "" {
		t.Errorf("a fresh request warned: %+v", ev)
	}
	warned(2)
	// Non-superiors are still refused.
	if _, err := s.UpdateTaskFromChat(as("w1"), ChatTaskUpdate{TaskID: tk.ID, RequesterID: "w2", Priority: ptr("high")}); code(err) != "unauthorized" {
		t.Errorf("a sibling's request: got %q (%v)", code(err), err)
	}
}

func TestUpdateTaskFromChat(t *testing.T) {
	s := newTestStore(t)
	say(t, s, "mgr", "w1", "@@タスク調整")
	tk := mustTask(t, s, NewTask{Title: "api", Description: "old", Status: StatusTodo, AssigneeID: "w1"})
	res, err := s.UpdateTaskFromChat(as("w1"), ChatTaskUpdate{TaskID: tk.ID, RequesterID: "mgr",
		Title: ptr("  api  "), Description: ptr("新しい要件"), Priority: ptr("high")})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.UpdatedFields, []string{"description", "priority"}) || res.PreviousStatus != StatusTodo {
		t.Errorf("result %+v (the title only differed in spaces)", res)
	}
	disk, err := s.Task(tk.ID)
	if err != nil || disk.Description != "新しい要件" || disk.Priority != "high" || disk.Version != tk.Version+1 {
		t.Errorf("on disk %+v %v", disk, err)
	}
	ev := lastEvent(t, s, tk.ID)
	if ev.Actor != "w1" || ev.Change != "updated" || ev.RequesterID != "mgr" || !slices.Equal(ev.Fields, []string{"description", "priority"}) {
		t.Errorf("history %+v", ev)
	}
	// The same values again change nothing and write nothing.
	check := unchanged(t, s, tk.ID)
	res, err = s.UpdateTaskFromChat(as("w1"), ChatTaskUpdate{TaskID: tk.ID, RequesterID: "mgr", Description: ptr("新しい要件"), Status: ptr(StatusTodo)})
	if err != nil || len(res.UpdatedFields) != 0 {
		t.Errorf("no-op update: %+v %v", res, err)
	}
	check()
}

func TestUpdateTaskFromChatPermissions(t *testing.T) {
	s := newTestStore(t)
	say(t, s, "mgr", "w1", "fix the title")
	others := mustTask(t, s, NewTask{Title: "created by the owner", AssigneeID: "w2"})
	byW1, err := s.CreateTask(as("w1"), NewTask{Title: "created by w1", AssigneeID: "w2"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateTaskFromChat(as("w1"), ChatTaskUpdate{TaskID: byW1.ID, RequesterID: "mgr", Title: ptr("renamed")}); err != nil {
		t.Errorf("creator's update: %v", err)
	}
	check := unchanged(t, s, others.ID)
	_, err = s.UpdateTaskFromChat(as("w1"), ChatTaskUpdate{TaskID: others.ID, RequesterID: "mgr", Title: ptr("renamed")})
	if code(err) != "unauthorized" || !strings.Contains(err.Error(), "w2") {
		t.Errorf("neither assignee nor creator: %v", err)
	}
	check()
	// Nobody is their own superior: the manager cannot name itself (seed 000, UC2).
	say(t, s, "owner", "mgr", "hi")
	own := mustTask(t, s, NewTask{Title: "mgr's", AssigneeID: "mgr"})
	if _, err := s.UpdateTaskFromChat(as("mgr"), ChatTaskUpdate{TaskID: own.ID, RequesterID: "mgr", Title: ptr("x")}); code(err) != "unauthorized" {
		t.Errorf("self as requester: got %q", code(err))
	}
	if _, err := s.UpdateTaskFromChat(as("mgr"), ChatTaskUpdate{TaskID: own.ID, RequesterID: "owner", Title: ptr("x")}); err != nil {
		t.Errorf("owner's request to mgr: %v", err)
	}
}

func TestUpdateTaskFromChatStatus(t *testing.T) {
	s := newTestStore(t)
	say(t, s, "mgr", "w1", "block it")
	parent := startTask(t, s, "w1")
	child := mustTask(t, s, NewTask{Title: "child", Status: StatusTodo, AssigneeID: "w2", ParentID: parent.ID})
	idea := mustTask(t, s, NewTask{Title: "idea", ParentID: parent.ID}) // backlog: cannot be blocked

	for _, c := range []struct {
		name string
		r    ChatTaskUpdate
		want string
	}{
		{"nothing", ChatTaskUpdate{}, "invalid_argument"},
		{"bad status", ChatTaskUpdate{Status: ptr("paused")}, "invalid_status"},
		{"bad priority", ChatTaskUpdate{Priority: ptr("asap")}, "invalid_argument"},
		{"empty title", ChatTaskUpdate{Title: ptr(" ")}, "invalid_argument"},
		{"empty reason", ChatTaskUpdate{Status: ptr(StatusBlocked), BlockedReason: ptr("")}, "invalid_argument"},
		{"reason without blocked", ChatTaskUpdate{BlockedReason: ptr("waiting"), Title: ptr("new")}, "invalid_argument"},
		{"forbidden transition", ChatTaskUpdate{Status: ptr(StatusTodo), Title: ptr("new")}, "invalid_status_transition"},
		{"done with open sub-tasks", ChatTaskUpdate{Status: ptr(StatusDone)}, "subtasks_not_finished"},
	} {
		c.r.TaskID, c.r.RequesterID = parent.ID, "mgr"
		check := unchanged(t, s, parent.ID, child.ID)
		if _, err := s.UpdateTaskFromChat(as("w1"), c.r); code(err) != c.want {
			t.Errorf("%s: got %q (%v), want %s", c.name, code(err), err, c.want)
		}
		check()
	}

	res, err := s.UpdateTaskFromChat(as("w1"), ChatTaskUpdate{TaskID: parent.ID, RequesterID: "mgr", Status: ptr(StatusBlocked), BlockedReason: ptr("API key missing")})
	if err != nil {
		t.Fatal(err)
	}
	if res.PreviousStatus != StatusInProgress || res.Task.Status != StatusBlocked || res.Task.BlockedReason != "API key missing" ||
		!slices.Equal(res.UpdatedFields, []string{"status", "blocked_reason"}) || len(res.Cascaded) != 1 || res.Cascaded[0].ID != child.ID {
		t.Errorf("result %+v", res)
	}
	ev := lastEvent(t, s, parent.ID)
	if ev.Change != "status" || ev.From != StatusInProgress || ev.To != StatusBlocked || ev.Reason != "API key missing" ||
		ev.RequesterID != "mgr" || !slices.Equal(ev.Fields, []string{"status", "blocked_reason"}) {
		t.Errorf("history %+v", ev)
	}
	cev := lastEvent(t, s, child.ID)
	if cev.To != StatusBlocked || cev.RequesterID != "mgr" || !strings.Contains(cev.Reason, parent.ID) {
		t.Errorf("cascade history %+v", cev)
	}
	if got, _ := s.Task(idea.ID); got.Status != StatusBacklog {
		t.Errorf("backlog sub-task became %s", got.Status)
	}
	// Changing the reason of a blocked task alone.
	res, err = s.UpdateTaskFromChat(as("w1"), ChatTaskUpdate{TaskID: parent.ID, RequesterID: "mgr", BlockedReason: ptr("key requested")})
	if err != nil || !slices.Equal(res.UpdatedFields, []string{"blocked_reason"}) || res.Task.BlockedReason != "key requested" {
		t.Errorf("reason update %+v %v", res, err)
	}
	// Cancelled: final, and then not edited from chat.
	if _, err := s.UpdateTaskFromChat(as("w1"), ChatTaskUpdate{TaskID: parent.ID, RequesterID: "mgr", Status: ptr(StatusCancelled)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateTaskFromChat(as("w1"), ChatTaskUpdate{TaskID: parent.ID, RequesterID: "mgr", Title: ptr("revived")}); code(err) != "task_finished" {
		t.Errorf("editing a cancelled task: got %q", code(err))
	}
	probs, err := s.Check()
	if err != nil || len(probs) != 0 {
		t.Errorf("doctor after chat updates: %v %v", probs, err)
	}
}

func TestNotifyTaskSession(t *testing.T) {
	s := newTestStore(t)
	c := mustStart(t, s, "mgr", "w1", ConversationRequest{InitialMessage: "priorities changed"})
	others := mustStart(t, s, "mgr", "w2", ConversationRequest{InitialMessage: "hi"})
	n, live, err := s.NotifyTaskSession(as("w1"), TaskSessionNotice{ConversationID: c.ID})
	if err != nil {
		t.Fatal(err)
	}
	if live || !n.UntilRead {
		t.Errorf("no task session: live=%v until_read=%v", live, n.UntilRead)
	}
	if n.Type != NotifyChatSession || n.Action != ActionCheckChat || n.TargetAgentID != "w1" || n.TargetPurpose != PurposeTask ||
		n.FromAgentID != "w1" || n.ConversationID != c.ID || n.Priority != NotifyNormal || !strings.Contains(n.Instruction, c.ID) || n.Message == "" {
		t.Errorf("notification %+v", n)
	}
	task, chat := bothSessions(t, s, "w1")
	tk := mustTask(t, s, NewTask{Title: "api", AssigneeID: "w1"})
	n, live, err = s.NotifyTaskSession(as("w1"), TaskSessionNotice{Message: "stop: the API changed", RelatedTaskID: tk.ID, Priority: NotifyHigh})
	if err != nil {
		t.Fatal(err)
	}
	if !live || n.UntilRead || n.Type != NotifyInterrupt || n.TaskID != tk.ID || n.ConversationID != "" || strings.Contains(n.Instruction, "cnv_") {
		t.Errorf("high priority: live=%v %+v", live, n)
	}
	// The task session started after the first notice gets it too (it waited for it).
	if got := counts(t, s, task); got != [2]int{2, 1} {
		t.Errorf("task session counts %v", got)
	}
	if got := counts(t, s, chat); got != [2]int{0, 0} {
		t.Errorf("the chat session sees its own notice: %v", got)
	}
	for _, bad := range []struct {
		r    TaskSessionNotice
		want string
	}{
		{TaskSessionNotice{}, "invalid_argument"},
		{TaskSessionNotice{ConversationID: others.ID}, "not_conversation_participant"},
		{TaskSessionNotice{ConversationID: "cnv_missing"}, "conversation_not_found"},
		{TaskSessionNotice{Message: "x", Priority: "low"}, "invalid_argument"},
		{TaskSessionNotice{Message: "x", RelatedTaskID: "tsk_missing"}, "task_not_found"},
	} {
		if _, _, err := s.NotifyTaskSession(as("w1"), bad.r); code(err) != bad.want {
			t.Errorf("%+v: got %q, want %s", bad.r, code(err), bad.want)
		}
	}
}

// A notice sent while the agent has no live task session waits for the next task session,
// and for the ones after it until one of them reads it; then no later session gets it.
func TestNoticeWaitsForTheNextTaskSession(t *testing.T) {
	s := newTestStore(t)
	startTask(t, s, "w1")
	auth := func() *Session {
		t.Helper()
		res, err := s.Authenticate(AuthRequest{AgentID: "w1", Passkey: "w1-passkey", Purpose: PurposeTask, PID: os.Getpid()})
		if err != nil {
			t.Fatal(err)
		}
		return res.Session
	}
	first := auth()
	if err := s.EndSession(first.ID, "process exited"); err != nil {
		t.Fatal(err)
	}
	n, live, err := s.NotifyTaskSession(as("w1"), TaskSessionNotice{Message: "the spec changed"})
	if err != nil || live || !n.UntilRead {
		t.Fatalf("notice with no task session: %+v live=%v %v", n, live, err)
	}
	if got := counts(t, s, first); got != [2]int{1, 0} {
		t.Errorf("the ended session's own count: %v", got)
	}
	// The next session gets it, does not read it, and ends: the one after gets it again.
	second := auth()
	if got := counts(t, s, second); got != [2]int{1, 0} {
		t.Fatalf("next task session counts %v", got)
	}
	if sum, err := s.NotificationSummary(second); err != nil || sum.ChatNotice == nil || sum.ChatNotice.ID != n.ID {
		t.Fatalf("next task session's chat notice: %+v %v", sum.ChatNotice, err)
	}
	if err := s.EndSession(second.ID, "process exited"); err != nil {
		t.Fatal(err)
	}
	third := auth()
	got, err := s.TakeNotifications(third)
	if err != nil || len(got) != 1 || got[0].ID != n.ID {
		t.Fatalf("third session takes %+v, %v", got, err)
	}
	// Read by the third: it keeps it in its history; a fourth never sees it.
	if hist, _ := s.SessionNotifications(third, false); len(hist) != 1 || hist[0].ReadAt == nil {
		t.Errorf("reader's history %+v", hist)
	}
	if err := s.EndSession(third.ID, "done"); err != nil {
		t.Fatal(err)
	}
	fourth := auth()
	if got := counts(t, s, fourth); got != [2]int{0, 0} {
		t.Errorf("a session after the reader counts %v", got)
	}
	if hist, _ := s.SessionNotifications(fourth, false); len(hist) != 0 {
		t.Errorf("a session after the reader lists %+v", hist)
	}
	// An ordinary notice (a task session was live) never reaches a later session.
	if n, live, err := s.NotifyTaskSession(as("w1"), TaskSessionNotice{Message: "second"}); err != nil || !live || n.UntilRead {
		t.Fatalf("with a live session: %+v live=%v %v", n, live, err)
	}
	if err := s.EndSession(fourth.ID, "done"); err != nil {
		t.Fatal(err)
	}
	if got := counts(t, s, auth()); got != [2]int{0, 0} {
		t.Errorf("a later session inherits an ordinary notice: %v", got)
	}
	if probs, err := s.Check(); err != nil || len(probs) != 0 {
		t.Errorf("doctor: %v %v", probs, err)
	}
}
