// Aipm coordinates a team of AI coding agents and their human owner inside one Git
// repository, with every piece of state kept as JSON and JSONL files under .ai-pm/.
//
// Agents reach it as an MCP stdio server (`aipm mcp`); humans through this command line,
// their editor and Git. Run `aipm help` for the commands.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aipm/aipm/cmd/aipm/internal/clone"
	"github.com/aipm/aipm/filestore"
)

func main() {
	a := &app{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, now: time.Now}
	os.Exit(a.run(os.Args[1:]))
}

// app is one invocation of the command: its streams, environment and clock.
type app struct {
	stdin  io.Reader
	stdout io.Writer
	// term is standard output before control characters are dropped: only aipm's own
	// escape sequences (aipm status --watch clearing the screen) are written to it.
	term   io.Writer
	stderr io.Writer
	getenv func(string) string
	now    func() time.Time
	// worktreeCopy is set by open in a linked worktree: the root of the worktree's own
	// checked-out .ai-pm, which aipm leaves alone for the clone's shared store.
	worktreeCopy string
}

// command is one sub-command (aipm task add) or a group of them (aipm task): its name, a
// one-line summary for its group's list, examples for its help, and either the function
// that runs it or its sub-commands. A sub-command's usage line and flags come from its own
// flag set (newFlags, flags.parse), so its help cannot drift from what it accepts.
type command struct {
	name     string
	summary  string
	examples []string
	run      func(a *app, args []string) error
	subs     []*command
}

func commands() []*command {
	return []*command{
		{name: "init", summary: "create .ai-pm/ in the current directory, or prepare a clone of a project", run: (*app).cmdInit,
			examples: []string{"aipm init", "aipm init --name shop --owner alice", "git clone URL shop && cd shop && aipm init"}},
		{name: "agent", summary: "add, list, show agents; rotate a passkey; see or move the machine that runs one", subs: []*command{
			{name: "add", summary: "add a human or AI agent to the project", run: (*app).agentAdd,
				examples: []string{"aipm agent add lead --hierarchy manager --parent owner --role planning",
					"aipm agent add w1 --parent lead --role backend --ai-type claude"}},
			{name: "list", summary: "list the agents", run: (*app).agentList, examples: []string{"aipm agent list"}},
			{name: "show", summary: "show one agent and its live sessions", run: (*app).agentShow, examples: []string{"aipm agent show w1"}},
			{name: "passkey", summary: "issue a new passkey for an AI agent (the old one stops working)", run: (*app).agentPasskey,
				examples: []string{"aipm agent passkey w1"}},
			{name: "leases", summary: "show which machine runs each agent, and this machine's id", run: (*app).agentLeases,
				examples: []string{"aipm agent leases"}},
			{name: "move", summary: "run an agent on another machine from now on", run: (*app).agentMove,
				examples: []string{"aipm agent move w1 --to laptop-2-x7k3pq"}},
			{name: "release", summary: "free an agent's lease now (its machine stopped), for any machine to take", run: (*app).agentRelease,
				examples: []string{"aipm agent release w1"}},
		}},
		{name: "task", summary: "add, list, show, edit tasks; change status or assignee; approve or reject requests", subs: []*command{
			{name: "add", summary: "create a task (or a sub-task with --parent)", run: (*app).taskAdd,
				examples: []string{`aipm task add "Write the parser" --assign w1 --priority high --status todo`,
					`aipm task add "Parse headers" --parent tsk_8001 --dep tsk_8002`}},
			{name: "list", summary: "list tasks, filtered by status, assignee, parent or text", run: (*app).taskList,
				examples: []string{"aipm task list", "aipm task list --all", "aipm task list --status todo,in_progress --assignee w1",
					"aipm task list --search parser --limit 20"}},
			{name: "show", summary: "show a task: details, links, sub-tasks, history and runs", run: (*app).taskShow,
				examples: []string{"aipm task show tsk_8001"}},
			{name: "tree", summary: "draw the task hierarchy (the open work, finished sub-trees counted; or one task's subtree)", run: (*app).taskTree,
				examples: []string{"aipm task tree", "aipm task tree --all", "aipm task tree tsk_8001"}},
			{name: "edit", summary: "change a task's title, description, priority or dependencies", run: (*app).taskEdit,
				examples: []string{`aipm task edit tsk_8001 --title "Parse HTTP headers" --priority urgent`,
					"aipm task edit tsk_8001 --add-dep tsk_8002 --remove-dep tsk_8003", "aipm task edit tsk_8001 --description - < notes.md"}},
			{name: "status", summary: "change a task's status (the transition rules apply)", run: (*app).taskStatus,
				examples: []string{"aipm task status tsk_8001 in_progress", `aipm task status tsk_8001 blocked --reason "waiting for the API key"`}},
			{name: "assign", summary: "assign a task to an agent, or unassign it with -", run: (*app).taskAssign,
				examples: []string{"aipm task assign tsk_8001 w2", "aipm task assign tsk_8001 -"}},
			{name: "approve", summary: "approve a task an agent requested", run: (*app).taskApprove,
				examples: []string{"aipm task approve tsk_8001"}},
			{name: "reject", summary: "reject a task an agent requested", run: (*app).taskReject,
				examples: []string{`aipm task reject tsk_8001 --reason "out of scope"`}},
		}},
		{name: "chat", summary: "send messages to an agent, read or follow a chat, open or close a chat", subs: []*command{
			{name: "send", summary: "send a message to an agent", run: (*app).chatSend,
				examples: []string{`aipm chat send lead "How far is the parser?"`, "echo done | aipm chat send w1 -"}},
			{name: "log", summary: "show your chat with an agent (or, alone, your unread messages)", run: (*app).chatLog,
				examples: []string{"aipm chat log", "aipm chat log lead --limit 50", "aipm chat log lead --follow"}},
			{name: "open", summary: "open a chat with an AI agent: aipm run starts a chat session for it", run: (*app).chatOpen,
				examples: []string{"aipm chat open lead"}},
			{name: "close", summary: "close a chat: the agent's chat session is told to exit", run: (*app).chatClose,
				examples: []string{"aipm chat close lead"}},
		}},
		{name: "project", summary: "pause or resume the project", subs: []*command{
			{name: "pause", summary: "pause the project: live sessions are interrupted, none starts", run: (*app).projectPause,
				examples: []string{"aipm project pause"}},
			{name: "resume", summary: "resume a paused project", run: (*app).projectResume, examples: []string{"aipm project resume"}},
		}},
		{name: "land", summary: "the merge queue that lands each task's branch on the target: list it, run it, retry or abandon an entry", subs: []*command{
			{name: "list", summary: "the tasks waiting to land on this clone, and those that need you", run: (*app).landList,
				examples: []string{"aipm land list"}},
			{name: "run", summary: "land what the queue holds now, without aipm run", run: (*app).landRun,
				examples: []string{"aipm land run"}},
			{name: "retry", summary: "one more attempt for a task whose code did not land", run: (*app).landRetry,
				examples: []string{"aipm land retry tsk_8001"}},
			{name: "abandon", summary: "give a task's code up: it never lands (its branch stays)", run: (*app).landAbandon,
				examples: []string{"aipm land abandon tsk_8001"}},
		}},
		{name: "status", summary: "agents, live sessions, blocked tasks and notifications at a glance", run: (*app).cmdStatus,
			examples: []string{"aipm status", "aipm status --watch", "aipm status --json"}},
		{name: "ui", summary: "serve a live web view of the project on 127.0.0.1: board, agents, chat, approvals", run: (*app).cmdUI,
			examples: []string{"aipm ui", "aipm ui --addr 127.0.0.1:8080"}},
		{name: "doctor", summary: "check every file under .ai-pm/ and the agent commands", run: (*app).cmdDoctor,
			examples: []string{"aipm doctor", "aipm doctor --repair"}},
		{name: "mcp", summary: "serve MCP on stdin/stdout for one agent process", run: (*app).cmdMCP,
			examples: []string{"claude mcp add aipm -- aipm mcp"}},
		{name: "mcp-config", summary: "print or write the block that declares aipm's MCP server to claude, codex or gemini", run: (*app).cmdMCPConfig,
			examples: []string{"aipm mcp-config claude", "aipm mcp-config gemini --write"}},
		{name: "trust", summary: "show the agent commands (and what changed) and the agents another clone brought, and approve them to run on this machine", run: (*app).cmdTrust,
			examples: []string{"aipm trust", "aipm trust --check", "aipm trust --agent w9"}},
		{name: "resolve", summary: "settle a merge conflict in an .ai-pm entity file by taking one side of each conflicting field", run: (*app).cmdResolve,
			examples: []string{"aipm resolve .ai-pm/tasks/tsk_8001….json --theirs && git add .ai-pm/tasks/tsk_8001….json"}},
		{name: "merge-driver", summary: "Git's merge driver for .ai-pm entity files (registered by `aipm init`)", run: (*app).cmdMergeDriver,
			examples: []string{"git config merge.aipm.driver 'aipm merge-driver %O %A %B %P'"}},
		{name: "sync", summary: "commit, fetch, merge and push the project's state branch (aipm/state), once or every few seconds", run: (*app).cmdSync,
			examples: []string{"aipm sync --once", "aipm sync", "aipm sync --interval 10s"}},
		{name: "migrate", summary: "move a .ai-pm/ tracked on the code branch onto its own branch, aipm/state, keeping its history", run: (*app).cmdMigrate,
			examples: []string{"aipm migrate && git push && aipm sync --once"}},
		{name: "run", summary: "the coordinator: start each AI agent's command when it has work", run: (*app).cmdRun,
			examples: []string{"aipm run", "aipm run --max 2 --timeline", "aipm run --exit-when-idle --timeout 10m"}},
		{name: "demo", summary: "run a demonstration on a temporary project", run: (*app).cmdDemo,
			examples: []string{"aipm demo", "aipm demo /tmp/aipm-demo"}},
		{name: "sim-agent", summary: "a simulated agent (no LLM) for tests and the demo; reads AIPM_AGENT_ID and friends", run: (*app).cmdSimAgent,
			examples: []string{"AIPM_AGENT_ID=w1 AIPM_PURPOSE=task aipm sim-agent"}},
		{name: "whoami", summary: "show (or set) the human the command line acts as in this clone, and this machine", run: (*app).cmdWhoami,
			examples: []string{"aipm whoami", "aipm whoami --set bob"}},
		{name: "version", summary: "print aipm's version", run: (*app).cmdVersion, examples: []string{"aipm version", "aipm --version"}},
	}
}

func (a *app) run(args []string) int {
	args = globalFlagsLast(args)
	switch {
	case len(args) == 0:
		a.usage(a.stderr, nil, commands())
		return 2
	case args[0] == "-h" || args[0] == "--help" || args[0] == "-help":
		a.usage(a.stdout, nil, commands())
		return 0
	case args[0] == "--version" || args[0] == "-version":
		args[0] = "version"
	case args[0] == "help":
		return a.help(args[1:])
	}
	if args[0] != "mcp" {
		// The MCP server speaks JSON-RPC, which escapes control characters itself.
		a.term = a.stdout
		a.stdout, a.stderr = cleanWriter{a.stdout}, cleanWriter{a.stderr}
	}
	err := a.dispatch(nil, commands(), args)
	if err == nil {
		return 0
	}
	var ex exitError
	if errors.As(err, &ex) {
		return int(ex)
	}
	if errors.Is(err, errHelpShown) {
		return 0
	}
	if jsonRequested(args) {
		a.printJSONErr(err)
	} else {
		a.printErr(err)
	}
	var ue *usageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

// dispatch runs the command args name among cmds (the sub-commands of path): a group
// dispatches its next argument, or prints its help.
func (a *app) dispatch(path []string, cmds []*command, args []string) error {
	c, err := findCommand(path, cmds, args)
	if err != nil || c == nil {
		return err
	}
	path = append(path, c.name)
	if c.run != nil {
		return c.run(a, args[1:])
	}
	rest := args[1:]
	if len(rest) == 0 {
		a.usage(a.stderr, path, c.subs)
		return exitError(2)
	}
	if isHelpFlag(rest[0]) {
		a.usage(a.stdout, path, c.subs)
		return errHelpShown
	}
	return a.dispatch(path, c.subs, rest)
}

// globalFlagsLast moves the global flags given before the command (aipm --json task
// show …) behind its arguments, where every command parses them.
func globalFlagsLast(args []string) []string {
	var global []string
	for len(args) > 0 {
		f := args[0]
		switch {
		case f == "--json" || f == "-json" || strings.HasPrefix(f, "--json=") || strings.HasPrefix(f, "-json="),
			strings.HasPrefix(f, "--as=") || strings.HasPrefix(f, "-as="):
			global, args = append(global, f), args[1:]
		case (f == "--as" || f == "-as") && len(args) > 1:
			global, args = append(global, f, args[1]), args[2:]
		default:
			if len(global) == 0 || len(args) == 0 {
				return args
			}
			return append(append([]string{}, args...), global...)
		}
	}
	return args
}

// exitError ends the command with a status code after it has printed what it wanted.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit %d", int(e)) }

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// open finds the store by walking up from the current directory.
func (a *app) open() (*filestore.Store, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	// The coordinator names the store of the agents it starts, whatever their directory.
	if r := a.getenv("AIPM_ROOT"); r != "" {
		cwd = r
	}
	root, err := filestore.Find(cwd)
	if errors.Is(err, filestore.ErrNoStore) {
		// A linked worktree on a branch without .ai-pm still belongs to its clone's store.
		if w, ok := clone.Find(cwd); ok && w.Main != "" {
			if rel, rerr := filepath.Rel(w.Top, cwd); rerr == nil {
				if r, ferr := filestore.Find(filepath.Join(w.Main, rel)); ferr == nil {
					a.worktreeCopy = filepath.Join(w.Top, rel)
					if err := clone.CheckOwner(r); err != nil {
						return nil, err
					}
					return filestore.Open(r, filestore.Options{Now: a.now})
				}
			}
		}
	}
	if err != nil {
		return nil, err
	}
	// One store per clone: a linked worktree's checked-out copy of .ai-pm is never used,
	// so agents served from different worktrees of a clone see one another.
	shared, linked, err := clone.SharedRoot(root)
	if err != nil {
		return nil, err
	}
	if linked {
		a.worktreeCopy = root
	}
	// Another user's store (a world-writable parent, a shared mount) names what runs and
	// what is trusted: refused unless allowed, as git does.
	if err := clone.CheckOwner(shared); err != nil {
		return nil, err
	}
	return filestore.Open(shared, filestore.Options{Now: a.now})
}

// openAs opens the store and resolves the acting human, for commands that change state.
func (a *app) openAs(as string) (*filestore.Store, filestore.Actor, error) {
	s, err := a.open()
	if err != nil {
		return nil, filestore.Actor{}, err
	}
	actor, err := a.actor(s, as)
	return s, actor, err
}

// openOne is how a command about one task or agent begins: its one argument parsed (usage
// as for parse), the store opened, and the argument resolved to a whole id by resolve
// (taskID or agentID).
func (a *app) openOne(fs *flags, args []string, usage string, resolve func(*filestore.Store, string) (string, error)) (*filestore.Store, string, error) {
	pos, err := fs.parse(args, 1, 1, usage)
	if err != nil {
		return nil, "", err
	}
	s, err := a.open()
	if err != nil {
		return nil, "", err
	}
	id, err := resolve(s, pos[0])
	return s, id, err
}

// openOneAs is openOne for a command that changes the task or agent: it also resolves the
// acting human.
func (a *app) openOneAs(fs *flags, args []string, usage string, resolve func(*filestore.Store, string) (string, error)) (*filestore.Store, filestore.Actor, string, error) {
	s, id, err := a.openOne(fs, args, usage, resolve)
	if err != nil {
		return nil, filestore.Actor{}, "", err
	}
	actor, err := a.actor(s, fs.as)
	return s, actor, id, err
}

// actor resolves the acting human: --as, else AIPM_USER, else this clone's human (`aipm
// whoami`), else — in a store from before clones had one — the project owner. It must be
// a human agent of the project, so every CLI change is attributed to a real person.
func (a *app) actor(s *filestore.Store, as string) (filestore.Actor, error) {
	if as == "" {
		as = a.getenv("AIPM_USER")
	}
	if as == "" {
		who, err := s.Identity()
		if err != nil {
			return filestore.Actor{}, err
		}
		if who != nil && who.Human == "" {
			return filestore.Actor{}, &filestore.Error{Code: "no_identity", Kind: filestore.ErrUnauthorized,
				Message: "nobody is set as the human of this clone: " + who.From,
				Hint:    "say who you are once with `aipm whoami --set ID`, or pass --as ID; not a member yet? the owner adds you (`aipm agent add ID --type human --parent OWNER`)"}
		}
		if who != nil {
			as = who.Human
		}
	}
	if as == "" {
		p, err := s.Project()
		if err != nil {
			return filestore.Actor{}, err
		}
		as = p.OwnerID
	}
	ag, err := s.Member(as)
	if err != nil {
		return filestore.Actor{}, err
	}
	if ag.Type != filestore.AgentHuman {
		return filestore.Actor{}, &filestore.Error{Code: "unauthorized", Message: "agent " + as + " is an AI agent; the command line acts for humans",
			Hint: "pass --as with a human agent id, or set AIPM_USER", Kind: filestore.ErrUnauthorized}
	}
	return filestore.Actor{ID: ag.ID, Via: filestore.ViaCLI}, nil
}
