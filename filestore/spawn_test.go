package filestore

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestSpawnTicketIsOneTimeAndBound(t *testing.T) {
	s := newTestStore(t)
	tk := startTask(t, s, "w1")
	sp, ticket, err := s.CreateSpawn(NewSpawn{AgentID: "w1", Purpose: PurposeTask, TaskID: tk.ID})
	if err != nil {
		t.Fatal(err)
	}
	if !IsSpawnTicket(ticket) || IsSpawnTicket("w1-passkey") {
		t.Fatalf("IsSpawnTicket(%q) = false, or a passkey looks like a ticket", ticket)
	}
	raw, err := os.ReadFile(s.spawnPath(sp.ID))
	if err != nil {
		t.Fatal(err)
	}
	_, secret, _ := strings.Cut(ticket, ".")
	if strings.Contains(string(raw), secret) {
		t.Fatalf("the spawn record holds the ticket in plain text: %s", raw)
	}

	// Bound to the agent and the purpose.
	if _, err := s.Authenticate(AuthRequest{AgentID: "w2", Passkey: ticket, PID: os.Getpid()}); code(err) != "invalid_ticket" {
		t.Errorf("another agent's ticket: got %q, want invalid_ticket", code(err))
	}
	if _, err := s.Authenticate(AuthRequest{AgentID: "w1", Passkey: ticket, Purpose: PurposeChat, PID: os.Getpid()}); code(err) != "invalid_argument" {
		t.Errorf("ticket for task used for chat: got %q, want invalid_argument", code(err))
	}
	if _, err := s.Authenticate(AuthRequest{AgentID: "w1", Passkey: sp.ID + ".wrong", PID: os.Getpid()}); code(err) != "invalid_ticket" {
		t.Errorf("forged ticket: got %q, want invalid_ticket", code(err))
	}
	r, err := s.Authenticate(AuthRequest{AgentID: "w1", Passkey: ticket, PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	if r.Session.Purpose != PurposeTask || r.Session.SpawnID != sp.ID || r.Session.TaskID != tk.ID {
		t.Errorf("session %+v", r.Session)
	}
	got, _ := s.Spawn(sp.ID)
	if got.TicketUsedAt == nil || len(got.SessionIDs) != 1 || got.SessionIDs[0] != r.Session.ID {
		t.Errorf("spawn after use: %+v", got)
	}
	// One time: the same ticket again is refused, even after the session ends.
	if err := s.EndSession(r.Session.ID, "logout"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(AuthRequest{AgentID: "w1", Passkey: ticket, PID: os.Getpid()}); code(err) != "invalid_ticket" {
		t.Errorf("reused ticket: got %q, want invalid_ticket", code(err))
	}
}

func TestSpawnTicketExpires(t *testing.T) {
	s := newTestStore(t)
	startTask(t, s, "w1")
	_, ticket, err := s.CreateSpawn(NewSpawn{AgentID: "w1", Purpose: PurposeTask, TicketTTL: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// The test clock ticks a millisecond per read, so the ticket is stale by now.
	s.Now()
	if _, err := s.Authenticate(AuthRequest{AgentID: "w1", Passkey: ticket, PID: os.Getpid()}); code(err) != "invalid_ticket" {
		t.Errorf("expired ticket: got %q, want invalid_ticket", code(err))
	}
}

// The coordinator ends a dead process's sessions by its spawn id: exactly those, never the
// sibling session of the other purpose, and the captured output becomes the run's log.
func TestEndSpawnEndsOnlyItsSessions(t *testing.T) {
	s := newTestStore(t)
	tk := startTask(t, s, "w1")
	if _, err := s.SendMessage(human, SendRequest{To: "w1", Content: "how is it going?"}); err != nil {
		t.Fatal(err)
	}
	taskSp, taskTicket, err := s.CreateSpawn(NewSpawn{AgentID: "w1", Purpose: PurposeTask, TaskID: tk.ID})
	if err != nil {
		t.Fatal(err)
	}
	chatSp, chatTicket, err := s.CreateSpawn(NewSpawn{AgentID: "w1", Purpose: PurposeChat})
	if err != nil {
		t.Fatal(err)
	}
	taskR, err := s.Authenticate(AuthRequest{AgentID: "w1", Passkey: taskTicket, PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	chatR, err := s.Authenticate(AuthRequest{AgentID: "w1", Passkey: chatTicket, PID: os.Getpid()})
	if err != nil || chatR.Session.Purpose != PurposeChat {
		t.Fatalf("chat: %v %+v", err, chatR)
	}
	ex, err := s.StartExecution(taskR.Session.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(s.path("runtime", "spawns"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.SpawnLogPath(taskSp.ID), []byte("w1: working\nkilled\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	ended, err := s.EndSpawn(taskSp.ID, -1, "killed")
	if err != nil {
		t.Fatal(err)
	}
	if len(ended) != 1 || ended[0] != taskR.Session.ID {
		t.Fatalf("ended %v, want only the task session %s", ended, taskR.Session.ID)
	}
	if _, err := s.Session(chatR.Token); err != nil {
		t.Errorf("the chat sibling was touched: %v", err)
	}
	if se, _ := s.Session(taskR.Token); se == nil || se.State != SessionEnded || se.EndReason != "process_exit" {
		t.Errorf("task session after exit: %+v", se)
	}
	got, err := s.Execution(ex.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != ExecFailed || got.ExitCode == nil || *got.ExitCode != -1 || got.LogPath != ".ai-pm/executions/"+ex.ID+".log" {
		t.Errorf("execution after exit: %+v", got)
	}
	page, err := s.ExecutionLog(ex.ID, 100, -1, 0)
	if err != nil || len(page.Lines) != 2 || page.Lines[1] != "killed" {
		t.Errorf("log: %+v %v", page, err)
	}
	sp, _ := s.Spawn(taskSp.ID)
	if sp.ExitCode == nil || *sp.ExitCode != -1 || sp.Outcome != "killed" || sp.EndedAt == nil {
		t.Errorf("spawn record: %+v", sp)
	}
	// The chat spawn exiting cleanly ends the chat session and nothing else.
	if ended, err := s.EndSpawn(chatSp.ID, 0, "exited"); err != nil || len(ended) != 1 || ended[0] != chatR.Session.ID {
		t.Errorf("chat spawn exit ended %v, %v", ended, err)
	}
}

// A process started for one task works that task, even when the agent has an older task
// in progress by then: its directory may be that task's own worktree.
func TestSpawnTicketKeepsItsTask(t *testing.T) {
	s := newTestStore(t)
	parent := startTask(t, s, "mgr")
	sub := mustTask(t, s, NewTask{Title: "sub", Status: StatusTodo, AssigneeID: "w1", ParentID: parent.ID})
	if _, err := s.SetTaskStatus(human, sub.ID, StatusInProgress, ""); err != nil {
		t.Fatal(err)
	}
	_, ticket, err := s.CreateSpawn(NewSpawn{AgentID: "w1", Purpose: PurposeTask, TaskID: sub.ID})
	if err != nil {
		t.Fatal(err)
	}
	// Meanwhile a top-level task starts for w1, which work detection would pick first.
	top := startTask(t, s, "w1")
	if w, err := s.DetectWork("w1"); err != nil || w.TaskID != top.ID {
		t.Fatalf("DetectWork: %q, %v; want the top-level task %s first", w.TaskID, err, top.ID)
	}
	r, err := s.Authenticate(AuthRequest{AgentID: "w1", Passkey: ticket, PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	if r.Session.TaskID != sub.ID {
		t.Errorf("the spawned process's session works %s, want %s, the task it was started for", r.Session.TaskID, sub.ID)
	}
}

// A silent spawn is asked once per round, by a notification to the session its process
// opened, in the project's language; asking the same round again adds nothing.
func TestAskSilent(t *testing.T) {
	s := newTestStore(t)
	tk := startTask(t, s, "w1")
	sp, ticket, err := s.CreateSpawn(NewSpawn{AgentID: "w1", Purpose: PurposeTask, TaskID: tk.ID})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Authenticate(AuthRequest{AgentID: "w1", Passkey: ticket, PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.AskSilent(sp.ID, 3*time.Minute, 2*time.Minute, 1)
	if err != nil {
		t.Fatal(err)
	}
	if n.TargetSessionID != r.Session.ID || n.TaskID != tk.ID || n.Action != "report_progress" ||
		!strings.Contains(n.Message, "no tool call and no output from you for 3m0s") || !strings.Contains(n.Instruction, "within 2m0s") {
		t.Errorf("question: %+v", n)
	}
	again, err := s.AskSilent(sp.ID, 4*time.Minute, 2*time.Minute, 1)
	if err != nil || again.ID != n.ID {
		t.Errorf("the same round asked twice: %+v, %v", again, err)
	}
	setSettings(t, s, func(st *Settings) { st.Language = "ja" })
	ja, err := s.AskSilent(sp.ID, 3*time.Minute, 2*time.Minute, 2)
	if err != nil || ja.ID == n.ID || !strings.Contains(ja.Message, "停止しているようです") {
		t.Errorf("second round, in Japanese: %+v, %v", ja, err)
	}
	got, err := s.SessionNotifications(r.Session, true)
	if err != nil || len(got) != 2 {
		t.Errorf("the session sees %d question(s), %v; want 2", len(got), err)
	}
}
