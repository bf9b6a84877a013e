// Package sim is the simulated agent: `aipm sim-agent` behaves like an agent CLI with no LLM, so the
// coordinator can run whole multi-agent scenarios in tests and in `aipm demo`.
//
// It starts `aipm mcp` as its child (stdio, mcp-go's client), authenticates, then loops on
// get_next_action and does what each answer's action asks. It decides on the action name
// and the structured fields of the results, never on instruction prose (which may be in
// another language). What the work is comes from a tiny script in task descriptions and
// chat messages:
//
// One directive per line, verb first, case-insensitive, an optional leading "- "; every
// other line is prose and ignored, and so is a line whose arguments do not fit its verb.
//
//	write <path> <text…>            write the text and a newline to <path>
//	write <path> random <lo>-<hi>   write a random integer in [lo, hi]
//	append <path> <text…>           add a line to the end of a file (made if missing)
//	double <in> <out>               read an integer from <in>, write twice it to <out>
//	sleep <duration>                work that takes time (Go duration: 20s, 1m30s)
//	hang <duration>                 a hung model: no tool call at all for that long
//	hang <duration> once <path>     the same, the first time only: hangs unless <path>
//	                                exists, and writes it before it hangs
//	compute <duration>              work that keeps the CPU busy and calls no tool (a
//	                                build, say)
//	ask <agent> <question…>         consult another AI agent
//	shiritori <agent> <rounds> <first-word>
//	                                play shiritori: <rounds> words from each side
//	plan <local-id> [after <id>[,<id>…]] [for <agent>]: <title> | <step>; <step>…
//	                                (managers) one sub-task, its steps as its description
//
// Paths are relative to the repository root (AIPM_ROOT); absolute paths, paths that
// leave the root (.., symlinks) and anything under .ai-pm are refused, which blocks the
// (sub-)task with the reason.
//
// Task sessions. A worker decomposes a task with two or more step lines (write, double,
// sleep, ask, shiritori) into one sub-task per step, each depending on the one before,
// when get_next_action says create_subtasks, and otherwise does it directly. It runs each
// step; a step that fails blocks its sub-task (or reports the task blocked). ask and
// shiritori are conversations, which a task session may not hold: it delegates them to
// its own chat session (delegate_to_chat_session, purpose "ask: <question>" or the
// shiritori line, with timeout_seconds so the call waits for the delegation's result; one
// that outlasts it is waited for with get_next_action). A manager turns its `plan` lines
// into sub-tasks, dispatches each to the plan's `for` agent or else to the least loaded
// subordinate (ties by id) — in the one dispatch_subtasks call the answer spells out, which
// starts those whose dependencies are done and queues the rest — waits, and reports when
// all are finished. A step's result that carries next_action is followed as it stands,
// without a get_next_action to ask.
//
// Chat sessions. A delegation or a human's ask/shiritori line starts a conversation with
// the agent (the first message is the question or the first word). The asked agent
// answers a question "<file> contains <its first line>" when it names a file under the
// root, else "<name> here: I don't know about that."; in a shiritori both sides answer
// from a built-in word list (shiritori.go) and the initiator ends the conversation
// after its <rounds>th word has been answered, then reports the chain, joined by " → ",
// to whoever asked (report_delegation_completed, or a message to the human). Other human
// messages get the agent's tasks and statuses when they ask for status or progress, else
// "<name> here: got “<text>”.".
//
// Interrupts: a result saying "interrupted" makes the sim read its notifications. A pause
// logs out and exits (the task stays in progress); cancellation or reassignment of the
// session's task logs out and exits (the task is no longer the agent's to change); anything
// else, a block too, goes back to get_next_action, which says to report a block that still
// holds.
//
// Environment: AIPM_AGENT_ID (required), AIPM_PURPOSE (task or chat), AIPM_ROOT (default:
// the current directory), AIPM_PASSKEY (without it, `aipm mcp` authenticates with the
// spawn ticket in its own environment). It prints one line per step, prefixed with the
// agent id, and exits 0 once its session is over; it exits non-zero with an error on
// stderr when something unexpected happens, and never runs more than simMaxRounds rounds.
//
// It is an MCP client like any agent CLI: it reaches the project only through the tools of
// the `aipm mcp` server it starts, never through the files. It may import filestore (for
// names such as the purposes) and mcp-go's client; nothing of tools or cmd/aipm.
package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

const (
	// simMaxRounds bounds the get_next_action rounds of one run: a sim never loops forever.
	simMaxRounds = 500
	// simCallTimeout bounds one tool call; get_next_action long-polls for at most 50 s.
	simCallTimeout = 90 * time.Second
	// simPollEvery is how often busy work (sleep) calls a cheap tool, so an interrupt
	// reaches the sim within a fraction of a second.
	simPollEvery = 200 * time.Millisecond
	// simDelegationWait bounds the wait for the own chat session's result.
	simDelegationWait = 15 * time.Minute
	// simMaxReply keeps replies well inside the message length limit.
	simMaxReply = 1000
)

// Config is one run of the simulated agent: who it is and where it works.
type Config struct {
	AgentID string // required (AIPM_AGENT_ID)
	Purpose string // task or chat (AIPM_PURPOSE); empty lets authenticate choose
	Passkey string // AIPM_PASSKEY; empty: the aipm mcp child uses its spawn ticket
	Root    string // the repository root (AIPM_ROOT); empty: the current directory
	Exe     string // the aipm binary to start as `aipm mcp`
	// Out receives the agent's one-line-per-step log; Err the aipm mcp child's diagnostics.
	Out, Err io.Writer
}

// Run runs the simulated agent (see the package comment) until its session is over.
func Run(cfg Config) error {
	id := cfg.AgentID
	if id == "" {
		return errors.New("sim-agent: AIPM_AGENT_ID is not set")
	}
	root := cfg.Root
	if root == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		root = wd
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return err
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	if cfg.Err == nil {
		cfg.Err = io.Discard
	}
	exe := cfg.Exe
	tr := transport.NewStdioWithOptions(exe, nil, []string{"mcp"}, transport.WithCommandFunc(
		func(ctx context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
			cmd := exec.CommandContext(ctx, command, args...)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "AIPM_ROOT="+root)
			cmd.Stderr = cfg.Err // the server's diagnostics belong in the execution log too
			return cmd, nil
		}))
	c := client.NewClient(tr)
	if err := c.Start(context.Background()); err != nil {
		return fmt.Errorf("sim-agent: starting aipm mcp: %w", err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "aipm-sim-agent", Version: "0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		return fmt.Errorf("sim-agent: initialize: %w", err)
	}
	s := &simAgent{id: id, root: root, out: cfg.Out, c: c,
		jobs: map[string]*simJob{}, byHuman: map[string]*simJob{}, partners: map[string]*simPartner{},
		early: map[string][]simMessage{}}
	return s.run(cfg.Purpose, cfg.Passkey)
}

// simAgent is one run of the simulated agent: one MCP connection, one session.
type simAgent struct {
	id, name, hierarchy string
	purpose, taskID     string // of the session
	root                string
	out                 io.Writer
	c                   *client.Client
	did                 []string // what the task session's steps did, for the report
	// next is the next_action a step's result carried: what get_next_action would answer,
	// followed without the call to ask.
	next *simNext

	// Chat session state.
	jobs     map[string]*simJob     // conversations this agent started, by conversation id
	byHuman  map[string]*simJob     // jobs talking to a human by plain messages, by human id
	queued   []*simJob              // jobs waiting for a partner who is busy with us
	partners map[string]*simPartner // conversations others started with us, by id
	// early holds messages of conversations read before their request was taken (a
	// pending conversation cannot be answered yet), by conversation id.
	early map[string][]simMessage
}

// errSimDone ends the run normally: the session is over.
var errSimDone = errors.New("session over")

func (s *simAgent) logf(format string, args ...any) {
	fmt.Fprintf(s.out, "%s: %s\n", s.id, fmt.Sprintf(format, args...))
}

// run authenticates and drives the session to its end.
func (s *simAgent) run(purpose, passkey string) error {
	args := map[string]any{"agent_id": s.id}
	if purpose != "" {
		args["purpose"] = purpose
	}
	if passkey != "" {
		args["passkey"] = passkey
	}
	var auth struct {
		Purpose string `json:"purpose"`
		TaskID  string `json:"task_id"`
		Agent   struct {
			Name      string `json:"name"`
			Hierarchy string `json:"hierarchy"`
		} `json:"agent"`
	}
	if err := s.call("authenticate", args, &auth); err != nil {
		var te *simToolError
		if errors.As(err, &te) && (te.Code == "no_work" || te.Code == "project_paused") {
			s.logf("authenticate → %s: %s", te.Code, te.Message)
			return nil
		}
		return err
	}
	s.purpose, s.taskID, s.name, s.hierarchy = auth.Purpose, auth.TaskID, auth.Agent.Name, auth.Agent.Hierarchy
	if s.name == "" {
		s.name = s.id
	}
	if s.purpose == filestore.PurposeTask {
		s.logf("authenticated: task session for %s (%s)", s.taskID, s.hierarchy)
		return s.loop(s.taskRound, s.taskAction)
	}
	s.logf("authenticated: %s session", s.purpose)
	return s.loop(s.chatRound, nil)
}

// loop runs rounds until the session is over, handling interrupts (and, in task
// sessions, answers a wait gave back that call for another action) between them.
func (s *simAgent) loop(round func() error, act func(*simNext) error) error {
	for range simMaxRounds {
		err := round()
		for range 10 {
			var ie *simInterrupt
			var dv *simDivert
			if errors.As(err, &ie) {
				err = s.onInterrupt(ie)
			} else if errors.As(err, &dv) && act != nil {
				err = act(dv.next)
			} else {
				break
			}
		}
		if errors.Is(err, errSimDone) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return fmt.Errorf("sim-agent %s: gave up after %d rounds of get_next_action", s.id, simMaxRounds)
}

// simToolError is a tool's isError result.
type simToolError struct {
	Tool    string `json:"-"`
	Code    string `json:"error"`
	Message string `json:"message"`
	Hint    string `json:"hint"`
}

func (e *simToolError) Error() string { return fmt.Sprintf("%s: %s: %s", e.Tool, e.Code, e.Message) }

// simInterrupt is a result replaced by the interrupt notice; notes are the interrupts
// read right after, newest first.
type simInterrupt struct {
	tool  string
	notes []simNotification
}

func (e *simInterrupt) Error() string { return "interrupted during " + e.tool }

// simDivert hands the loop a get_next_action answer a wait got instead of what it waited
// for (the task was blocked meanwhile, say).
type simDivert struct{ next *simNext }

func (e *simDivert) Error() string { return "get_next_action answered " + e.next.Action }

// simStepError is a scripted step that cannot be done: it blocks the (sub-)task.
type simStepError struct{ msg string }

func (e *simStepError) Error() string { return e.msg }

func simStepErrorf(format string, args ...any) error {
	return &simStepError{msg: fmt.Sprintf(format, args...)}
}

type simNotification struct {
	Type    string `json:"type"`
	Action  string `json:"action"`
	TaskID  string `json:"task_id"`
	Message string `json:"message"`
}

// call calls a tool and decodes its JSON result into out (if not nil). A JSON-RPC error
// is returned as is (fatal for the run), an isError result as *simToolError, and an
// interrupt notice, once the notifications are read, as *simInterrupt.
func (s *simAgent) call(tool string, args map[string]any, out any) error {
	if args == nil {
		args = map[string]any{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), simCallTimeout)
	defer cancel()
	res, err := s.c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}})
	if err != nil {
		return fmt.Errorf("%s: %w", tool, err)
	}
	var text strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	body := []byte(text.String())
	if res.IsError {
		te := &simToolError{Tool: tool}
		if err := json.Unmarshal(body, te); err != nil || te.Code == "" {
			te.Code, te.Message = "unknown", text.String()
		}
		return te
	}
	var probe struct {
		Interrupted bool `json:"interrupted"`
	}
	if json.Unmarshal(body, &probe) == nil && probe.Interrupted {
		var ns struct {
			Notifications []simNotification `json:"notifications"`
		}
		if err := s.call("get_notifications", nil, &ns); err != nil {
			return err
		}
		ie := &simInterrupt{tool: tool}
		for _, n := range ns.Notifications {
			if n.Type == filestore.NotifyInterrupt {
				ie.notes = append(ie.notes, n)
			}
		}
		return ie
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			return fmt.Errorf("%s: unreadable result %q: %w", tool, simClip(text.String(), 200), err)
		}
	}
	var follow struct {
		Next *simNext `json:"next_action"`
	}
	if tool != "get_next_action" && json.Unmarshal(body, &follow) == nil && follow.Next != nil && follow.Next.Action != "" {
		s.next = follow.Next
	}
	return nil
}

// onInterrupt follows the interrupts read after an interrupted call, the newest first.
func (s *simAgent) onInterrupt(ie *simInterrupt) error {
	s.next = nil // what a result said before the interrupt no longer holds
	for _, n := range ie.notes {
		s.logf("interrupted (%s): %s", n.Action, n.Message)
	}
	for _, n := range ie.notes {
		switch n.Action {
		case filestore.ActionPause:
			// The task stays in progress; the coordinator starts the agent again on resume.
			return s.logout()
		case filestore.ActionBlocked, filestore.ActionCancel:
			if s.purpose != filestore.PurposeTask || (n.TaskID != "" && n.TaskID != s.taskID) {
				continue // a sub-task: get_next_action says how to go on
			}
			if n.Action == filestore.ActionCancel {
				// Cancelled or given to another agent: the task is no longer ours to change.
				return s.logout()
			}
			// Blocked: get_next_action says to report it, unless it was unblocked meanwhile.
			return nil
		}
	}
	return nil
}

func (s *simAgent) didSoFar() string {
	if len(s.did) == 0 {
		return ""
	}
	return "; done so far: " + strings.Join(s.did, "; ")
}

// logout ends the session (if it still exists) and the run.
func (s *simAgent) logout() error {
	if err := s.call("logout", nil, nil); err != nil {
		var te *simToolError
		if !errors.As(err, &te) {
			return err
		}
		s.logf("logout: %s", te.Code)
	} else {
		s.logf("logged out")
	}
	return errSimDone
}

// report calls report_completed, which ends the task session, and ends the run.
func (s *simAgent) report(result, summary string) error {
	summary = simClip(summary, simMaxReply)
	var r struct {
		NewStatus string `json:"new_status"`
	}
	if err := s.call("report_completed", map[string]any{"result": result, "summary": summary}, &r); err != nil {
		var te *simToolError
		if errors.As(err, &te) && result != filestore.ResultSuccess {
			s.logf("report_completed(%s) refused: %s; logging out", result, te.Message)
			return s.logout()
		}
		return err
	}
	s.logf("reported %s (%s): %s", result, r.NewStatus, summary)
	return errSimDone
}

// --- get_next_action answers -----------------------------------------------------------

// simNext is a get_next_action answer, task or chat, with the fields the sim reads.
type simNext struct {
	Action string `json:"action"`
	State  string `json:"state"`
	Reason string `json:"reason"`

	Task                 *simTask        `json:"task"`
	CurrentSubtask       *simTask        `json:"current_subtask"`
	NextSubtask          *simTask        `json:"next_subtask"`
	CompletedSubtasks    []simTask       `json:"completed_subtasks"`
	DispatchableSubtasks []simLine       `json:"dispatchable_subtasks"`
	WaitingSubtasks      []simWaiting    `json:"waiting_subtasks"`
	SelfBlocked          []simBlocked    `json:"self_blocked_subtasks"`
	UserBlocked          []simBlocked    `json:"user_blocked_subtasks"`
	OtherBlocked         []simBlocked    `json:"other_blocked_subtasks"`
	AvailableWorkers     []simWorker     `json:"available_workers"`
	Options              []string        `json:"options"`
	Delegations          []simDelegation `json:"delegations"`
	DeadDependencies     []struct {
		ID              string `json:"id"`
		DependsOn       string `json:"depends_on"`
		DependsOnStatus string `json:"depends_on_status"`
	} `json:"dead_dependencies"`
	Call *simCall `json:"call"`

	ConversationID string `json:"conversation_id"`
	FromAgentID    string `json:"from_agent_id"`
	TargetAgentID  string `json:"target_agent_id"`
	Purpose        string `json:"purpose"`
	DelegationID   string `json:"delegation_id"`
}

// simCall is the call an answer spells out, literal arguments and all.
type simCall struct {
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments"`
}

type simTask struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Status      string `json:"status"`
	Summary     string `json:"completion_summary"`
}

type simLine struct {
	ID         string `json:"id"`
	Title      string `json:"title"`
	Status     string `json:"status"`
	AssigneeID string `json:"assignee_id"`
	DepsMet    bool   `json:"deps_met"`
}

type simWaiting struct {
	ID         string   `json:"id"`
	WaitingFor []string `json:"waiting_for"`
}

type simBlocked struct {
	ID            string `json:"id"`
	BlockedReason string `json:"blocked_reason"`
	BlockedBy     string `json:"blocked_by"`
}

type simWorker struct {
	ID          string `json:"id"`
	ActiveTasks int    `json:"active_tasks"`
}

type simDelegation struct {
	DelegationID string `json:"delegation_id"`
	Status       string `json:"status"`
	Result       string `json:"result"`
}

func (d *simDelegation) finished() bool {
	return d.Status == filestore.DelegationCompleted || d.Status == filestore.DelegationFailed
}

// describe is the answer in a few words, for the log.
func (n *simNext) describe() string {
	out := n.Action
	switch {
	case n.CurrentSubtask != nil:
		out += fmt.Sprintf(" %s (%s)", n.CurrentSubtask.ID, n.CurrentSubtask.Title)
	case n.NextSubtask != nil:
		out += fmt.Sprintf(" %s (%s)", n.NextSubtask.ID, n.NextSubtask.Title)
	case n.Action == "situational_awareness":
		out += " [" + strings.Join(n.Options, ", ") + "]"
	case n.Action == "dispatch_task":
		out += fmt.Sprintf(" (%d dispatchable)", len(n.DispatchableSubtasks))
	case n.ConversationID != "":
		out += " " + n.ConversationID
		if n.FromAgentID != "" {
			out += " from " + n.FromAgentID
		}
		if n.Reason != "" {
			out += " (" + n.Reason + ")"
		}
	case n.DelegationID != "":
		out += fmt.Sprintf(" %s: %s with %s", n.DelegationID, n.Purpose, n.TargetAgentID)
	case n.Task != nil && n.Action != "wait" && n.Action != "wait_for_delegation":
		out += fmt.Sprintf(" %s (%s)", n.Task.ID, n.Task.Title)
	}
	if n.State == "task_blocked" || n.State == "task_cancelled" || n.State == "task_done" {
		out += " [" + n.State + "]"
	}
	return out
}

func (s *simAgent) nextAction() (*simNext, error) {
	var n simNext
	if err := s.call("get_next_action", nil, &n); err != nil {
		return nil, err
	}
	s.logf("get_next_action → %s", n.describe())
	return &n, nil
}

// --- task sessions -----------------------------------------------------------------------

// taskRound does the next step: the one the last result named (next_action), or else
// the one get_next_action names. A wait is get_next_action's to do.
func (s *simAgent) taskRound() error {
	n := s.next
	s.next = nil
	if n != nil && n.Action != "wait" && n.Action != "wait_for_delegation" {
		s.logf("next_action → %s", n.describe())
	} else {
		var err error
		if n, err = s.nextAction(); err != nil {
			return err
		}
	}
	return s.taskAction(n)
}

func (s *simAgent) taskAction(n *simNext) error {
	switch n.Action {
	case "get_task":
		var r struct {
			Task        simTask `json:"task"`
			ExecutionID string  `json:"execution_id"`
		}
		if err := s.call("get_my_task", nil, &r); err != nil {
			return err
		}
		s.logf("task %s (%s), execution %s", r.Task.ID, r.Task.Title, r.ExecutionID)
		return nil
	case "create_subtasks":
		if n.Task == nil {
			return errors.New("create_subtasks without a task")
		}
		if s.hierarchy == filestore.HierarchyManager {
			return s.createPlan(n.Task)
		}
		return s.decompose(n.Task)
	case "start_subtask":
		if n.NextSubtask == nil {
			return errors.New("start_subtask without next_subtask")
		}
		if err := s.start(n.NextSubtask.ID, n.NextSubtask.Status); err != nil {
			return err
		}
		if s.next != nil && s.next.Action == "execute_subtask" {
			return nil // the result says to do it now: the next round does
		}
		return s.runSubtask(n.NextSubtask, false)
	case "execute_subtask":
		if n.CurrentSubtask == nil {
			return errors.New("execute_subtask without current_subtask")
		}
		// The finish the answer spells out, with its start of the next sub-task if it
		// offers one.
		startNext := n.Call != nil && n.Call.Tool == "update_task_status" && n.Call.Arguments["start_next"] == true
		return s.runSubtask(n.CurrentSubtask, startNext)
	case "work":
		if n.Task == nil {
			return errors.New("work without a task")
		}
		summary, err := s.perform(n.Task.Description)
		var se *simStepError
		if errors.As(err, &se) {
			return s.report(filestore.ResultBlocked, se.msg+s.didSoFar())
		}
		if err != nil {
			return err
		}
		return s.report(filestore.ResultSuccess, summary)
	case "report_completion":
		switch n.State {
		case "task_blocked":
			return s.report(filestore.ResultBlocked, "stopped: the task was blocked"+s.didSoFar())
		case "task_cancelled":
			return s.report(filestore.ResultFailed, "cancelled"+s.didSoFar())
		}
		return s.report(filestore.ResultSuccess, s.completionSummary(n))
	case "review_and_resolve_blocks":
		var parts []string
		for _, b := range slices.Concat(n.SelfBlocked, n.UserBlocked, n.OtherBlocked) {
			parts = append(parts, fmt.Sprintf("%s blocked by %s (%s)", b.ID, simOr(b.BlockedBy, "?"), simOr(b.BlockedReason, "no reason")))
		}
		return s.report(filestore.ResultBlocked, "cannot resolve: "+strings.Join(parts, "; "))
	case "dependency_deadlock":
		var parts []string
		for _, w := range n.WaitingSubtasks {
			parts = append(parts, w.ID+" waits for "+strings.Join(w.WaitingFor, ", "))
		}
		return s.report(filestore.ResultBlocked, "dependencies stuck: "+strings.Join(parts, "; "))
	case "no_available_workers":
		return s.report(filestore.ResultBlocked, "no available workers")
	case "resolve_dead_dependencies":
		// The simplest way out: go on without what will never be done.
		for _, d := range n.DeadDependencies {
			if err := s.call("update_task_dependencies", map[string]any{"task_id": d.ID, "remove": []string{d.DependsOn}}, nil); err != nil {
				return err
			}
			s.logf("dropped %s's dependency on %s (%s)", d.ID, d.DependsOn, d.DependsOnStatus)
		}
		return nil
	case "wait", "wait_for_delegation", "adjust":
		return nil // get_next_action again: it long-polls
	case "situational_awareness":
		for _, want := range []string{"dispatch_task", "wait", "complete"} {
			if slices.Contains(n.Options, want) {
				return s.selectAction(want)
			}
		}
		return s.report(filestore.ResultBlocked, "nothing to dispatch and nothing running (options: "+strings.Join(n.Options, ", ")+")")
	case "dispatch_task":
		return s.dispatch(n)
	case "completion_check":
		// The instruction: review, then report_completed.
		return s.report(filestore.ResultSuccess, s.completionSummary(n))
	case "exit":
		return s.logout()
	}
	return fmt.Errorf("sim-agent %s: unexpected action %q (state %s)", s.id, n.Action, n.State)
}

func (s *simAgent) completionSummary(n *simNext) string {
	if len(s.did) > 0 {
		return strings.Join(s.did, "; ")
	}
	var parts []string
	for _, t := range n.CompletedSubtasks {
		p := t.Title + " (" + t.Status + ")"
		if t.Summary != "" {
			p += ": " + t.Summary
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return "done"
	}
	return strings.Join(parts, "; ")
}

func (s *simAgent) selectAction(action string) error {
	var r struct {
		Moot string `json:"moot"`
	}
	if err := s.call("select_action", map[string]any{"action": action}, &r); err != nil {
		return err
	}
	if r.Moot != "" {
		s.logf("%s no longer fits: %s", action, r.Moot)
		return nil
	}
	s.logf("selected %s", action)
	return nil
}

// setStatus moves a task of the session's tree.
func (s *simAgent) setStatus(id, status, reason string) error {
	args := map[string]any{"task_id": id, "status": status}
	if reason != "" {
		args["reason"] = simClip(reason, simMaxReply)
	}
	if err := s.call("update_task_status", args, nil); err != nil {
		return err
	}
	s.logf("%s → %s", id, status)
	return nil
}

// start moves a pending task to in_progress (a backlog one through todo).
func (s *simAgent) start(id, status string) error {
	if status == filestore.StatusBacklog {
		if err := s.setStatus(id, filestore.StatusTodo, ""); err != nil {
			return err
		}
	}
	err := s.setStatus(id, filestore.StatusInProgress, "")
	var te *simToolError
	if errors.As(err, &te) && te.Code == "invalid_status_transition" && status != filestore.StatusBacklog {
		// Dispatch lines show "ready", not the real status: a backlog task needs todo first.
		if err := s.setStatus(id, filestore.StatusTodo, ""); err != nil {
			return err
		}
		err = s.setStatus(id, filestore.StatusInProgress, "")
	}
	return err
}

func (s *simAgent) runSubtask(t *simTask, startNext bool) error {
	summary, err := s.perform(t.Description)
	var se *simStepError
	if errors.As(err, &se) {
		s.logf("%s failed: %s", t.ID, se.msg)
		return s.setStatus(t.ID, filestore.StatusBlocked, se.msg)
	}
	if err != nil {
		return err
	}
	if !startNext {
		return s.setStatus(t.ID, filestore.StatusDone, summary)
	}
	var r struct {
		Started string `json:"started_task_id"`
	}
	if err := s.call("update_task_status", map[string]any{"task_id": t.ID, "status": filestore.StatusDone,
		"reason": simClip(summary, simMaxReply), "start_next": true}, &r); err != nil {
		return err
	}
	s.logf("%s → %s", t.ID, filestore.StatusDone)
	if r.Started != "" {
		s.logf("%s → %s", r.Started, filestore.StatusInProgress)
	}
	return nil
}

// decompose splits a worker's task into one sub-task per step, in a chain, when it has
// at least two steps; otherwise the next get_next_action says to do it directly.
func (s *simAgent) decompose(t *simTask) error {
	steps := simSteps(simParseScript(t.Description))
	if len(steps) < 2 {
		s.logf("%s has %d step(s): doing it directly", t.ID, len(steps))
		return s.taskAction(&simNext{Action: "work", Task: t})
	}
	return s.createBatch(simStepItems(steps))
}

// createPlan turns a manager's plan lines into sub-tasks; without plan lines each step
// becomes a sub-task, and without steps the task itself is handed down whole.
func (s *simAgent) createPlan(t *simTask) error {
	ds := simParseScript(t.Description)
	var items []map[string]any
	for _, d := range ds {
		if d.verb == "plan" {
			items = append(items, map[string]any{"local_id": d.plan.localID, "title": d.plan.title,
				"description": strings.Join(d.plan.steps, "\n"), "dependencies": d.plan.after})
		}
	}
	if len(items) == 0 {
		if steps := simSteps(ds); len(steps) > 0 {
			items = simStepItems(steps)
		} else {
			items = []map[string]any{{"local_id": "all", "title": t.Title, "description": t.Description}}
		}
	}
	return s.createBatch(items)
}

func (s *simAgent) createBatch(items []map[string]any) error {
	var r struct {
		Tasks []simTask `json:"tasks"`
	}
	if err := s.call("create_tasks_batch", map[string]any{"tasks": items}, &r); err != nil {
		return err
	}
	var names []string
	for _, t := range r.Tasks {
		names = append(names, t.ID+" ("+t.Title+")")
	}
	s.logf("created %d sub-tasks: %s", len(r.Tasks), strings.Join(names, ", "))
	return nil
}

// simStepItems are create_tasks_batch items for steps, each depending on the one before.
func simStepItems(steps []simDirective) []map[string]any {
	var items []map[string]any
	seen := map[string]bool{}
	for i, d := range steps {
		title := d.title()
		if seen[title] { // titles are unique under a parent
			title = fmt.Sprintf("%s (step %d)", title, i+1)
		}
		seen[title] = true
		it := map[string]any{"local_id": fmt.Sprintf("s%d", i+1), "title": title, "description": d.line}
		if i > 0 {
			it["dependencies"] = []string{fmt.Sprintf("s%d", i)}
		}
		items = append(items, it)
	}
	return items
}

// dispatch assigns each unassigned dispatchable sub-task (to the plan's `for` agent, else
// the least loaded subordinate, ties by id) and starts those whose dependencies are done.
func (s *simAgent) dispatch(n *simNext) error {
	if n.Call != nil && n.Call.Tool == "dispatch_subtasks" {
		return s.dispatchCall(n)
	}
	forAgent := map[string]string{}
	if n.Task != nil {
		for _, d := range simParseScript(n.Task.Description) {
			if d.verb == "plan" && d.plan.agent != "" {
				forAgent[d.plan.title] = d.plan.agent
			}
		}
	}
	load := map[string]int{}
	var workers []string
	for _, w := range n.AvailableWorkers {
		load[w.ID] = w.ActiveTasks
		workers = append(workers, w.ID)
	}
	slices.Sort(workers)
	leastLoaded := func() string {
		best := ""
		for _, w := range workers {
			if best == "" || load[w] < load[best] {
				best = w
			}
		}
		return best
	}
	for _, t := range n.DispatchableSubtasks {
		if t.AssigneeID == "" || t.AssigneeID == "unassigned" {
			who := forAgent[t.Title]
			if who == "" {
				who = leastLoaded()
			}
			if who == "" {
				return fmt.Errorf("sim-agent %s: nobody to assign %s to", s.id, t.ID)
			}
			err := s.call("assign_task", map[string]any{"task_id": t.ID, "assignee_id": who}, nil)
			var te *simToolError
			if errors.As(err, &te) && forAgent[t.Title] != "" && leastLoaded() != "" {
				s.logf("cannot assign %s to %s (%s): taking the least loaded worker", t.ID, who, te.Code)
				who = leastLoaded()
				err = s.call("assign_task", map[string]any{"task_id": t.ID, "assignee_id": who}, nil)
			}
			if err != nil {
				return err
			}
			load[who]++
			s.logf("assigned %s (%s) to %s", t.ID, t.Title, who)
		}
		if t.DepsMet {
			if err := s.start(t.ID, t.Status); err != nil {
				return err
			}
		}
	}
	return nil
}

// dispatchCall makes the dispatch_subtasks call the answer spells out, choosing as the
// legacy dispatch does where it has a view of its own: the plan's `for` agent, else for
// an unassigned sub-task the least loaded worker counting its own choices (ties by id).
// Refused, it makes the call as offered.
func (s *simAgent) dispatchCall(n *simNext) error {
	forAgent := map[string]string{}
	if n.Task != nil {
		for _, d := range simParseScript(n.Task.Description) {
			if d.verb == "plan" && d.plan.agent != "" {
				forAgent[d.plan.title] = d.plan.agent
			}
		}
	}
	load := map[string]int{}
	var workers []string
	for _, w := range n.AvailableWorkers {
		load[w.ID] = w.ActiveTasks
		workers = append(workers, w.ID)
	}
	slices.Sort(workers)
	unassigned := map[string]string{} // id → title
	for _, l := range n.DispatchableSubtasks {
		if l.AssigneeID == "" {
			unassigned[l.ID] = l.Title
		}
	}
	offered, _ := n.Call.Arguments["assignments"].([]any)
	var mine []any
	changed := false
	for _, it := range offered {
		a, _ := it.(map[string]any)
		id, _ := a["task_id"].(string)
		who, _ := a["assignee_id"].(string)
		if title, ok := unassigned[id]; ok {
			pick := forAgent[title]
			for _, w := range workers {
				if pick == "" || (forAgent[title] == "" && load[w] < load[pick]) {
					pick = w
				}
			}
			if pick != "" && pick != who {
				who, changed = pick, true
			}
			load[who]++
		}
		mine = append(mine, map[string]any{"task_id": id, "assignee_id": who})
	}
	var r struct {
		Dispatched []struct {
			TaskID     string `json:"task_id"`
			AssigneeID string `json:"assignee_id"`
			Status     string `json:"status"`
			Queued     bool   `json:"queued"`
		} `json:"dispatched"`
	}
	err := s.call("dispatch_subtasks", map[string]any{"assignments": mine}, &r)
	var te *simToolError
	if errors.As(err, &te) && changed {
		s.logf("cannot dispatch as planned (%s): taking the offered assignees", te.Code)
		err = s.call("dispatch_subtasks", n.Call.Arguments, &r)
	}
	if err != nil {
		return err
	}
	for _, d := range r.Dispatched {
		how := d.Status
		if d.Queued {
			how = "queued until its dependencies are done"
		}
		s.logf("dispatched %s to %s: %s", d.TaskID, d.AssigneeID, how)
	}
	return nil
}

// perform does the steps of a description, in order, and says what it did.
func (s *simAgent) perform(desc string) (string, error) {
	var did []string
	for _, d := range simSteps(simParseScript(desc)) {
		r, err := s.do(d)
		if err != nil {
			return "", err
		}
		did = append(did, r)
		s.did = append(s.did, r)
	}
	if len(did) == 0 {
		s.logf("nothing scripted to do")
		return "nothing scripted to do", nil
	}
	return strings.Join(did, "; "), nil
}

// do performs one step.
func (s *simAgent) do(d simDirective) (string, error) {
	switch d.verb {
	case "write":
		full, err := simSafePath(s.root, d.path)
		if err != nil {
			return "", &simStepError{msg: err.Error()}
		}
		text := d.text
		if d.random {
			text = strconv.FormatInt(d.lo+rand.Int64N(d.hi-d.lo+1), 10)
		}
		if err := simWriteFile(full, text+"\n"); err != nil {
			return "", simStepErrorf("write %s: %v", d.path, err)
		}
		s.logf("wrote %s (%s)", d.path, simClip(text, 60))
		return "wrote " + d.path, nil
	case "append":
		full, err := simSafePath(s.root, d.path)
		if err != nil {
			return "", &simStepError{msg: err.Error()}
		}
		old, err := os.ReadFile(full)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", simStepErrorf("append %s: %v", d.path, err)
		}
		if len(old) > 0 && old[len(old)-1] != '\n' {
			old = append(old, '\n')
		}
		if err := simWriteFile(full, string(old)+d.text+"\n"); err != nil {
			return "", simStepErrorf("append %s: %v", d.path, err)
		}
		s.logf("appended to %s (%s)", d.path, simClip(d.text, 60))
		return "appended to " + d.path, nil
	case "double":
		in, err := simSafePath(s.root, d.in)
		if err != nil {
			return "", &simStepError{msg: err.Error()}
		}
		out, err := simSafePath(s.root, d.out)
		if err != nil {
			return "", &simStepError{msg: err.Error()}
		}
		b, err := os.ReadFile(in)
		if err != nil {
			return "", simStepErrorf("double: cannot read %s: %v", d.in, errors.Unwrap(err))
		}
		fields := strings.Fields(string(b))
		if len(fields) == 0 {
			return "", simStepErrorf("double: %s is empty", d.in)
		}
		v, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil || v > 1<<62 || v < -(1<<62) {
			return "", simStepErrorf("double: %s does not start with an integer (%q)", d.in, simClip(fields[0], 40))
		}
		if err := simWriteFile(out, strconv.FormatInt(2*v, 10)+"\n"); err != nil {
			return "", simStepErrorf("double: write %s: %v", d.out, err)
		}
		s.logf("doubled %s (%d) into %s (%d)", d.in, v, d.out, 2*v)
		return fmt.Sprintf("doubled %s into %s", d.in, d.out), nil
	case "sleep":
		s.logf("working for %s", d.dur)
		if err := s.busy(d.dur); err != nil {
			return "", err
		}
		return "worked " + d.dur.String(), nil
	case "compute":
		s.logf("computing for %s without a tool call", d.dur)
		n := 0
		for end := time.Now().Add(d.dur); time.Now().Before(end); {
			n++
		}
		return fmt.Sprintf("computed %s (%d rounds)", d.dur, n), nil
	case "hang":
		if d.path != "" {
			full, err := simSafePath(s.root, d.path)
			if err != nil {
				return "", &simStepError{msg: err.Error()}
			}
			if _, err := os.Lstat(full); err == nil {
				s.logf("not hanging again: %s exists", d.path)
				return "did not hang again", nil
			}
			if err := simWriteFile(full, "hung once\n"); err != nil {
				return "", simStepErrorf("hang: write %s: %v", d.path, err)
			}
		}
		s.logf("hanging for %s without a tool call", d.dur)
		time.Sleep(d.dur)
		return "hung " + d.dur.String(), nil
	case "ask":
		r, err := s.delegate(d.agent, "ask: "+d.question)
		if err != nil {
			return "", err
		}
		s.logf("%s answered: %s", d.agent, r)
		return fmt.Sprintf("asked %s: %s", d.agent, r), nil
	case "shiritori":
		r, err := s.delegate(d.agent, d.line)
		if err != nil {
			return "", err
		}
		s.logf("shiritori with %s: %s", d.agent, r)
		return fmt.Sprintf("shiritori with %s: %s", d.agent, r), nil
	}
	return "", simStepErrorf("cannot do %q", d.line)
}

// busy spends d on "work", calling a cheap tool every simPollEvery so that an interrupt
// (returned by the call) stops it at once.
func (s *simAgent) busy(d time.Duration) error {
	end := time.Now().Add(d)
	for {
		left := time.Until(end)
		if left <= 0 {
			return nil
		}
		time.Sleep(min(left, simPollEvery))
		if err := s.call("get_my_profile", nil, nil); err != nil {
			return err
		}
	}
}

// delegate hands a conversation to the agent's own chat session and waits for the result.
func (s *simAgent) delegate(target, purpose string) (string, error) {
	// The step needs the answer: the call waits for it (at most its 50 s; then
	// get_next_action waits on).
	var r simDelegation
	err := s.call("delegate_to_chat_session", map[string]any{"target_agent_id": target, "purpose": purpose, "timeout_seconds": 50}, &r)
	var te *simToolError
	if errors.As(err, &te) {
		return "", simStepErrorf("cannot delegate to the chat session: %s", te.Message)
	}
	if err != nil {
		return "", err
	}
	s.logf("delegated %s to my chat session: %s", r.DelegationID, purpose)
	d := &r
	if !d.finished() {
		if d, err = s.awaitDelegation(r.DelegationID); err != nil {
			return "", err
		}
	}
	if d.Status != filestore.DelegationCompleted {
		return "", simStepErrorf("delegation %s %s: %s", d.DelegationID, d.Status, d.Result)
	}
	return d.Result, nil
}

// awaitDelegation waits for a delegation to finish: get_next_action answers
// wait_for_delegation, long-polling, while the step in progress waits for it, and lists
// the delegation with its result once it is done. Any other answer (an interrupt, a block)
// goes back to the main loop.
func (s *simAgent) awaitDelegation(id string) (*simDelegation, error) {
	deadline := time.Now().Add(simDelegationWait)
	for time.Now().Before(deadline) {
		n, err := s.nextAction()
		if err != nil {
			return nil, err
		}
		for i := range n.Delegations {
			if d := &n.Delegations[i]; d.DelegationID == id && d.finished() {
				return d, nil
			}
		}
		if n.Action != "wait_for_delegation" {
			return nil, &simDivert{next: n}
		}
	}
	return nil, fmt.Errorf("sim-agent %s: delegation %s not finished after %s", s.id, id, simDelegationWait)
}

// --- chat sessions -----------------------------------------------------------------------

// simJob is a conversation this agent holds for someone: its task session (a delegation)
// or a human who asked in a message.
type simJob struct {
	kind     string // "ask" or "shiritori"
	target   string
	question string // ask: the question; shiritori: the first word
	rounds   int
	chain    []string
	used     map[string]bool
	mine     int // shiritori words this agent said
	answer   string
	over     bool // the conversation ended before the job did

	convID       string
	delegationID string
	human        string // who asked, when a human did
	plain        bool   // the target is a human: plain messages, no conversation
}

// simPartner is a conversation another agent started with this one.
type simPartner struct {
	kind string
	used map[string]bool
}

func simKind(purpose string) string {
	p := strings.ToLower(strings.TrimSpace(purpose))
	if strings.HasPrefix(p, "shiritori") || strings.Contains(p, "しりとり") {
		return "shiritori"
	}
	return "ask"
}

func (s *simAgent) chatRound() error {
	n, err := s.nextAction()
	if err != nil {
		return err
	}
	switch n.Action {
	case "conversation_request":
		s.partners[n.ConversationID] = &simPartner{kind: simKind(n.Purpose), used: map[string]bool{}}
		early := s.early[n.ConversationID]
		delete(s.early, n.ConversationID)
		for _, m := range early {
			if err := s.answerPartner(m); err != nil {
				return err
			}
		}
		return s.readMessages()
	case "get_pending_messages":
		return s.readMessages()
	case "process_delegation":
		return s.takeDelegation(n)
	case "conversation_ended", "conversation_expired":
		return s.conversationOver(n.ConversationID, n.Action, n.Reason)
	case "wait_for_messages":
		return nil
	case "logout", "exit":
		if err := s.abandonJobs("the chat session ended (" + simOr(n.Reason, n.Action) + ")"); err != nil {
			return err
		}
		return s.logout()
	}
	return fmt.Errorf("sim-agent %s: unexpected chat action %q (state %s)", s.id, n.Action, n.State)
}

// abandonJobs fails the jobs still open when the chat session leaves: their state lives
// only in this process, and a delegation left processing would hold its task session in
// wait_for_delegation for good.
func (s *simAgent) abandonJobs(why string) error {
	var open []*simJob
	for _, j := range s.jobs {
		open = append(open, j)
	}
	for _, j := range s.byHuman {
		open = append(open, j)
	}
	open = append(open, s.queued...)
	s.queued = nil
	slices.SortFunc(open, func(a, b *simJob) int { return strings.Compare(a.target+a.convID, b.target+b.convID) })
	for _, j := range open {
		if j.convID != "" && !j.over {
			if err := s.endConversation(j.convID); err != nil {
				return err
			}
		}
		if err := s.finishJob(j, false, fmt.Sprintf("no answer from %s: %s", j.target, why)); err != nil {
			return err
		}
	}
	return nil
}

type simMessage struct {
	SenderID       string `json:"senderId"`
	Content        string `json:"content"`
	ConversationID string `json:"conversationId"`
}

func (s *simAgent) readMessages() error {
	var r struct {
		PendingMessages []simMessage `json:"pending_messages"`
	}
	if err := s.call("get_pending_messages", nil, &r); err != nil {
		return err
	}
	for _, m := range r.PendingMessages {
		if err := s.onMessage(m); err != nil {
			return err
		}
	}
	return nil
}

func (s *simAgent) onMessage(m simMessage) error {
	where := ""
	if m.ConversationID != "" {
		where = " in " + m.ConversationID
	}
	s.logf("message from %s%s: %s", m.SenderID, where, simClip(m.Content, 200))
	if m.ConversationID != "" {
		if j := s.jobs[m.ConversationID]; j != nil {
			return s.jobReply(j, m.Content)
		}
		return s.answerPartner(m)
	}
	if j := s.byHuman[m.SenderID]; j != nil {
		return s.jobReply(j, m.Content)
	}
	return s.answerHuman(m)
}

// send sends a message; a refusal (the conversation ended meanwhile, say) is logged, not
// fatal.
func (s *simAgent) send(to, content string) error {
	err := s.call("send_message", map[string]any{"target_agent_id": to, "content": simClip(content, simMaxReply)}, nil)
	var te *simToolError
	if errors.As(err, &te) {
		s.logf("could not send to %s: %s", to, te.Code)
		return nil
	}
	if err == nil {
		s.logf("→ %s: %s", to, simClip(content, 200))
	}
	return err
}

func (s *simAgent) endConversation(id string) error {
	err := s.call("end_conversation", map[string]any{"conversation_id": id}, nil)
	var te *simToolError
	if errors.As(err, &te) {
		s.logf("end_conversation %s: %s", id, te.Code)
		return nil
	}
	if err == nil {
		s.logf("ended %s", id)
	}
	return err
}

// answerPartner answers a message of a conversation another agent started.
func (s *simAgent) answerPartner(m simMessage) error {
	p := s.partners[m.ConversationID]
	fresh := p == nil
	if p == nil {
		kind := "ask"
		if w := simKanaWord(m.Content); w != "" && !strings.ContainsFunc(w, func(r rune) bool { return !simIsKana(r) && r != 'ー' }) {
			kind = "shiritori"
		}
		p = &simPartner{kind: kind, used: map[string]bool{}}
		s.partners[m.ConversationID] = p
	}
	if p.kind != "shiritori" {
		return s.reply(m, s.answer(m.Content), fresh)
	}
	heard := simKanaWord(m.Content)
	p.used[heard] = true
	w, ok := simNextWord(heard, p.used)
	if !ok {
		s.logf("no word after %s: I give up", heard)
		if err := s.endConversation(m.ConversationID); err != nil {
			return err
		}
		// Ended here, so no conversation_ended comes for it: a job queued behind it (one
		// this agent wants to start with the same partner) starts now.
		delete(s.partners, m.ConversationID)
		return s.startQueued()
	}
	p.used[w] = true
	return s.reply(m, w, fresh)
}

// reply answers a partner's message. A conversation this agent has not taken yet may
// still be pending (its first message was read with other mail before get_next_action
// offered the request): the refusal then keeps the message for the conversation_request.
func (s *simAgent) reply(m simMessage, content string, fresh bool) error {
	err := s.call("send_message", map[string]any{"target_agent_id": m.SenderID, "content": simClip(content, simMaxReply)}, nil)
	var te *simToolError
	if errors.As(err, &te) {
		if fresh && te.Code == "conversation_required_for_ai_to_ai" {
			s.logf("%s is not accepted yet: answering once it is", m.ConversationID)
			delete(s.partners, m.ConversationID)
			s.early[m.ConversationID] = append(s.early[m.ConversationID], m)
			return nil
		}
		s.logf("could not send to %s: %s", m.SenderID, te.Code)
		return nil
	}
	if err == nil {
		s.logf("→ %s: %s", m.SenderID, simClip(content, 200))
	}
	return err
}

// answer is the sim's answer to a question: what a file it names starts with.
func (s *simAgent) answer(q string) string {
	for _, tok := range strings.Fields(q) {
		for _, cand := range []string{tok, strings.Trim(tok, "?？!！.,。、:;\"'「」()（）`")} {
			full, err := simSafePath(s.root, cand)
			if err != nil {
				continue
			}
			if fi, err := os.Stat(full); err != nil || !fi.Mode().IsRegular() {
				continue
			}
			b, err := os.ReadFile(full)
			if err != nil {
				continue
			}
			first, _, _ := strings.Cut(string(b), "\n")
			return fmt.Sprintf("%s contains %s", cand, simClip(strings.TrimSuffix(first, "\r"), 200))
		}
	}
	return s.name + " here: I don't know about that."
}

// answerHuman handles a message from a human: an ask or shiritori line is done from here;
// otherwise a status question gets the agent's tasks, anything else an acknowledgement.
func (s *simAgent) answerHuman(m simMessage) error {
	for _, d := range simParseScript(m.Content) {
		if d.verb == "ask" || d.verb == "shiritori" {
			return s.startJob(simJobFor(d, m.SenderID))
		}
	}
	if simAsksStatus(m.Content) {
		reply, err := s.statusReport()
		if err != nil {
			return err
		}
		return s.send(m.SenderID, reply)
	}
	return s.send(m.SenderID, fmt.Sprintf("%s here: got “%s”.", s.name, simClip(m.Content, 200)))
}

func simAsksStatus(text string) bool {
	t := strings.ToLower(text)
	for _, k := range []string{"status", "progress", "how is it going", "how's it going", "進捗"} {
		if strings.Contains(t, k) {
			return true
		}
	}
	return false
}

func (s *simAgent) statusReport() (string, error) {
	var r struct {
		Tasks []struct {
			simTask
			TaskID string `json:"task_id"`
		} `json:"tasks"`
		Total int `json:"total_count"`
	}
	if err := s.call("get_my_tasks", nil, &r); err != nil {
		return "", err
	}
	if len(r.Tasks) == 0 {
		return s.name + " here: I have no tasks.", nil
	}
	var parts []string
	for _, t := range r.Tasks {
		parts = append(parts, fmt.Sprintf("%s %s: %s", t.TaskID, t.Title, t.Status))
	}
	out := fmt.Sprintf("%s here: my tasks: %s", s.name, strings.Join(parts, "; "))
	if r.Total > len(r.Tasks) {
		out += fmt.Sprintf(" (and %d more)", r.Total-len(r.Tasks))
	}
	return out, nil
}

func simJobFor(d simDirective, human string) *simJob {
	j := &simJob{kind: d.verb, target: d.agent, question: d.question, human: human, used: map[string]bool{}}
	if d.verb == "shiritori" {
		j.question, j.rounds = d.first, d.rounds
	}
	return j
}

// takeDelegation starts the conversation a delegation asks for.
func (s *simAgent) takeDelegation(n *simNext) error {
	j := &simJob{kind: "ask", target: n.TargetAgentID, question: n.Purpose, used: map[string]bool{}}
	if d, ok := simParseLine(n.Purpose); ok && d.verb == "shiritori" {
		j = simJobFor(d, "")
		j.target = n.TargetAgentID
	} else if q, ok := strings.CutPrefix(n.Purpose, "ask:"); ok {
		j.question = strings.TrimSpace(q)
	}
	j.delegationID = n.DelegationID
	return s.startJob(j)
}

func (s *simAgent) busyWith(agent string) bool {
	for _, j := range s.jobs {
		if j.target == agent {
			return true
		}
	}
	return s.byHuman[agent] != nil
}

// startJob opens the job's conversation with its first message.
func (s *simAgent) startJob(j *simJob) error {
	if s.busyWith(j.target) {
		s.logf("queued a %s with %s: already talking to it", j.kind, j.target)
		s.queued = append(s.queued, j)
		return nil
	}
	args := map[string]any{"target_agent_id": j.target, "purpose": j.kind, "initial_message": j.question}
	if j.delegationID != "" {
		args["delegation_id"] = j.delegationID
	}
	if j.kind == "shiritori" {
		j.chain, j.used, j.mine = []string{j.question}, map[string]bool{simKanaWord(j.question): true}, 1
		if t := 2*j.rounds + 2; t > 20 { // room for every word; the default is 20
			args["max_turns"] = min(t, 40)
		}
	}
	var r struct {
		ConversationID string `json:"conversation_id"`
	}
	err := s.call("start_conversation", args, &r)
	var te *simToolError
	switch {
	case errors.As(err, &te) && te.Code == "cannot_start_conversation_with_human":
		j.plain = true
		s.byHuman[j.target] = j
		return s.send(j.target, j.question)
	case errors.As(err, &te) && te.Code == "conversation_already_active":
		s.logf("queued a %s with %s: %s", j.kind, j.target, te.Message)
		s.queued = append(s.queued, j)
		return nil
	case errors.As(err, &te):
		return s.finishJob(j, false, fmt.Sprintf("could not talk to %s: %s", j.target, te.Message))
	case err != nil:
		return err
	}
	j.convID = r.ConversationID
	s.jobs[j.convID] = j
	s.logf("started %s with %s (%s): %s", r.ConversationID, j.target, j.kind, simClip(j.question, 80))
	return nil
}

// jobReply takes the partner's answer in a job's conversation.
func (s *simAgent) jobReply(j *simJob, content string) error {
	if j.kind != "shiritori" {
		j.answer = strings.TrimSpace(content)
		if !j.plain && !j.over {
			if err := s.endConversation(j.convID); err != nil {
				return err
			}
		}
		return s.finishJob(j, true, j.answer)
	}
	heard := simKanaWord(content)
	j.chain = append(j.chain, heard)
	j.used[heard] = true
	if j.over || j.mine >= j.rounds {
		return s.endJob(j)
	}
	w, ok := simNextWord(heard, j.used)
	if !ok {
		s.logf("no word after %s: I give up", heard)
		return s.endJob(j)
	}
	j.chain = append(j.chain, w)
	j.used[w] = true
	j.mine++
	return s.send(j.target, w)
}

// endJob ends a finished shiritori's conversation and reports the chain.
func (s *simAgent) endJob(j *simJob) error {
	if !j.plain && !j.over {
		if err := s.endConversation(j.convID); err != nil {
			return err
		}
	}
	return s.finishJob(j, true, strings.Join(j.chain, " → "))
}

// conversationOver handles the end (or expiry) of a conversation.
func (s *simAgent) conversationOver(id, how, reason string) error {
	j := s.jobs[id]
	if j == nil {
		delete(s.partners, id)
		return s.startQueued()
	}
	// The partner ended it, or max_turns or a timeout did: read what it said last.
	j.over = true
	if err := s.readMessages(); err != nil {
		return err
	}
	if s.jobs[id] != j {
		return nil // the last message finished the job
	}
	if reason == filestore.EndDuplicate && (j.kind != "shiritori" || len(j.chain) <= 1) {
		// A merge kept the pair's other conversation: ask again once that one ends.
		delete(s.jobs, id)
		j.convID, j.over, j.chain, j.used, j.mine = "", false, nil, nil, 0
		s.logf("%s ended as a duplicate: the %s with %s starts again", id, j.kind, j.target)
		return s.startJob(j)
	}
	if j.kind == "shiritori" && len(j.chain) > 1 {
		return s.finishJob(j, true, strings.Join(j.chain, " → "))
	}
	return s.finishJob(j, false, fmt.Sprintf("the conversation with %s %s before an answer", j.target, strings.TrimPrefix(how, "conversation_")))
}

// finishJob reports a job's outcome to whoever asked and starts what waited for it.
func (s *simAgent) finishJob(j *simJob, ok bool, result string) error {
	if j.convID != "" {
		delete(s.jobs, j.convID)
	}
	if s.byHuman[j.target] == j {
		delete(s.byHuman, j.target)
	}
	result = simClip(result, simMaxReply)
	switch {
	case j.delegationID != "":
		status := filestore.DelegationCompleted
		if !ok {
			status = filestore.DelegationFailed
		}
		err := s.call("report_delegation_completed", map[string]any{"delegation_id": j.delegationID, "result": result, "status": status}, nil)
		var te *simToolError
		switch {
		case errors.As(err, &te) && te.Code == "delegation_already_finished":
			// Ended without us (its target was made inactive, say): nothing to report.
			s.logf("%s already finished: %s", j.delegationID, te.Message)
		case err != nil:
			return err
		default:
			s.logf("reported %s %s: %s", j.delegationID, status, result)
		}
	case j.human != "":
		if j.kind == "ask" && ok {
			result = j.target + ": " + result
		}
		if err := s.send(j.human, result); err != nil {
			return err
		}
	}
	return s.startQueued()
}

func (s *simAgent) startQueued() error {
	for i := 0; i < len(s.queued); i++ {
		if j := s.queued[i]; !s.busyWith(j.target) {
			s.queued = slices.Delete(s.queued, i, i+1)
			return s.startJob(j)
		}
	}
	return nil
}

// --- the script ------------------------------------------------------------------------

// simDirective is one line of the script.
type simDirective struct {
	verb string
	line string // the line as written, without "- "

	path, text string // write
	random     bool
	lo, hi     int64
	in, out    string // double
	dur        time.Duration
	agent      string // ask, shiritori
	question   string
	rounds     int
	first      string
	plan       simPlan
}

// simPlan is a manager's plan line.
type simPlan struct {
	localID string
	after   []string
	agent   string
	title   string
	steps   []string
}

var (
	simIDRe     = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)
	simRandomRe = regexp.MustCompile(`^(?i:random)\s+(-?\d+)-(-?\d+)$`)
)

// simParseScript reads the directives of a text; other lines are prose.
func simParseScript(text string) []simDirective {
	var out []simDirective
	for _, line := range strings.Split(text, "\n") {
		if d, ok := simParseLine(line); ok {
			out = append(out, d)
		}
	}
	return out
}

// simSteps are the directives a worker performs.
func simSteps(ds []simDirective) []simDirective {
	var out []simDirective
	for _, d := range ds {
		if d.verb != "plan" {
			out = append(out, d)
		}
	}
	return out
}

// simParseLine reads one line; ok is false for prose, including a line whose arguments
// do not fit its verb.
func simParseLine(line string) (simDirective, bool) {
	line = strings.TrimSpace(line)
	line = strings.TrimSpace(strings.TrimPrefix(line, "- "))
	verb, rest, _ := strings.Cut(line, " ")
	d := simDirective{verb: strings.ToLower(verb), line: line}
	rest = strings.TrimSpace(rest)
	f := strings.Fields(rest)
	switch d.verb {
	case "write", "append":
		if len(f) < 2 {
			return d, false
		}
		d.path = f[0]
		d.text = strings.TrimSpace(strings.TrimPrefix(rest, f[0]))
		if m := simRandomRe.FindStringSubmatch(d.text); m != nil {
			lo, err1 := strconv.ParseInt(m[1], 10, 64)
			hi, err2 := strconv.ParseInt(m[2], 10, 64)
			if err1 != nil || err2 != nil || lo > hi || hi-lo < 0 || hi-lo > 1<<62 {
				return d, false
			}
			d.random, d.lo, d.hi = true, lo, hi
		}
		return d, true
	case "double":
		if len(f) != 2 {
			return d, false
		}
		d.in, d.out = f[0], f[1]
		return d, true
	case "sleep", "hang", "compute":
		if d.verb == "hang" && len(f) == 3 && strings.EqualFold(f[1], "once") {
			d.path, f = f[2], f[:1]
		}
		if len(f) != 1 {
			return d, false
		}
		dur, err := time.ParseDuration(f[0])
		if err != nil || dur < 0 {
			return d, false
		}
		d.dur = dur
		return d, true
	case "ask":
		if len(f) < 2 || !simIDRe.MatchString(f[0]) {
			return d, false
		}
		d.agent = f[0]
		d.question = strings.TrimSpace(strings.TrimPrefix(rest, f[0]))
		return d, true
	case "shiritori":
		if len(f) != 3 || !simIDRe.MatchString(f[0]) {
			return d, false
		}
		n, err := strconv.Atoi(f[1])
		if err != nil || n < 1 {
			return d, false
		}
		d.agent, d.rounds, d.first = f[0], n, f[2]
		return d, true
	case "plan":
		p, ok := simParsePlan(rest)
		d.plan = p
		return d, ok
	}
	return d, false
}

// simParsePlan reads `<local-id> [after <id>[,<id>…]] [for <agent>]: <title> | <step>; …`.
func simParsePlan(rest string) (simPlan, bool) {
	var p simPlan
	head, tail, ok := strings.Cut(rest, ":")
	if !ok {
		return p, false
	}
	f := strings.Fields(head)
	if len(f) == 0 || !simIDRe.MatchString(strings.ToLower(f[0])) {
		return p, false
	}
	p.localID = f[0]
	for i := 1; i < len(f); i += 2 {
		if i+1 >= len(f) {
			return p, false
		}
		switch strings.ToLower(f[i]) {
		case "after":
			for _, id := range strings.Split(f[i+1], ",") {
				if id = strings.TrimSpace(id); id != "" {
					p.after = append(p.after, id)
				}
			}
		case "for":
			p.agent = f[i+1]
		default:
			return p, false
		}
	}
	title, steps, _ := strings.Cut(tail, "|")
	p.title = strings.TrimSpace(title)
	if p.title == "" {
		return p, false
	}
	for _, st := range strings.Split(steps, ";") {
		if st = strings.TrimSpace(st); st != "" {
			p.steps = append(p.steps, st)
		}
	}
	return p, true
}

// title is a short sub-task title for a step.
func (d simDirective) title() string {
	switch d.verb {
	case "write":
		return "Write " + d.path
	case "append":
		return "Append to " + d.path
	case "double":
		return "Double " + d.in + " into " + d.out
	case "sleep":
		return "Work for " + d.dur.String()
	case "hang":
		return "Hang for " + d.dur.String()
	case "compute":
		return "Compute for " + d.dur.String()
	case "ask":
		return "Ask " + d.agent
	case "shiritori":
		return "Play shiritori with " + d.agent
	}
	return simClip(d.line, 80)
}

// simSafePath resolves a script path against root, refusing what would leave it or touch
// the store: absolute paths, .. escapes, .ai-pm, and symlinks pointing outside.
func simSafePath(root, p string) (string, error) {
	if p == "" || filepath.IsAbs(p) || !filepath.IsLocal(p) {
		return "", fmt.Errorf("refusing path %q: it must stay inside the repository", p)
	}
	clean := filepath.Clean(p)
	first, _, _ := strings.Cut(filepath.ToSlash(clean), "/")
	if strings.EqualFold(first, filestore.DirName) {
		return "", fmt.Errorf("refusing path %q: %s belongs to aipm", p, filestore.DirName)
	}
	full := filepath.Join(root, clean)
	// A symlink on the way may point anywhere: check where the deepest existing part of
	// the path really is.
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", err
	}
	existing := full
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			break
		}
		existing = parent
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return "", fmt.Errorf("refusing path %q: %v", p, err)
	}
	rel, err := filepath.Rel(realRoot, real)
	if err != nil || (rel != "." && !filepath.IsLocal(rel)) {
		return "", fmt.Errorf("refusing path %q: it leads outside the repository", p)
	}
	if first, _, _ := strings.Cut(filepath.ToSlash(rel), "/"); strings.EqualFold(first, filestore.DirName) {
		return "", fmt.Errorf("refusing path %q: it leads into %s", p, filestore.DirName)
	}
	return full, nil
}

func simWriteFile(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(content), 0o644)
}

// simClip shortens s to at most n runes.
func simClip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func simOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
