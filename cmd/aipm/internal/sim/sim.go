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
//
// The files, by what they do: sim.go starts a run (Config, Run, the agent's state, its log
// lines); session.go is the MCP session: authenticate, the loop of rounds, one tool call
// and the interrupts it may bring, logout; next.go is get_next_action's answer as the sim
// reads it; task.go a task session (decompose, dispatch, report, delegate to the chat
// session); chat.go a chat session (the conversations it starts for others and those it
// answers); script.go the script language: its parser and the verbs that carry it out;
// shiritori.go the word list and the game's rules.
package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

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
