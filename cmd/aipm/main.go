// Aipm coordinates a team of AI coding agents and their human owner inside one Git
// repository, with every piece of state kept as JSON and JSONL files under .ai-pm/.
//
// Agents reach it as an MCP stdio server (`aipm mcp`); humans through this command line,
// their editor and Git. Run `aipm help` for the commands.
package main

import (
	"errors"
	"flag"
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
	stderr io.Writer
	getenv func(string) string
	now    func() time.Time
	// worktreeCopy is set by open in a linked worktree: the root of the worktree's own
	// checked-out .ai-pm, which aipm leaves alone for the clone's shared store.
	worktreeCopy string
}

// command is one subcommand: a name, a one-line summary and the function that runs it.
type command struct {
	name    string
	summary string
	run     func(a *app, args []string) error
}

func commands() []command {
	return []command{
		{"init", "create .ai-pm/ in the current directory, or prepare a clone of a project", (*app).cmdInit},
		{"agent", "add, list, show agents; rotate a passkey", (*app).cmdAgent},
		{"task", "add, list, show tasks; change status or assignee; approve or reject requests", (*app).cmdTask},
		{"chat", "send messages to an agent, read or follow a chat, open or close a chat", (*app).cmdChat},
		{"project", "pause or resume the project", (*app).cmdProject},
		{"status", "agents, live sessions, notifications and tasks at a glance", (*app).cmdStatus},
		{"doctor", "check every file under .ai-pm/ and the agent commands", (*app).cmdDoctor},
		{"mcp", "serve MCP on stdin/stdout for one agent process", (*app).cmdMCP},
		{"mcp-config", "print or write the block that declares aipm's MCP server to claude, codex or gemini", (*app).cmdMCPConfig},
		{"trust", "show the agent commands (and what changed) and approve them to run on this machine", (*app).cmdTrust},
		{"resolve", "settle a merge conflict in an .ai-pm entity file by taking one side of each conflicting field", (*app).cmdResolve},
		{"merge-driver", "Git's merge driver for .ai-pm entity files (registered by `aipm init`)", (*app).cmdMergeDriver},
		{"run", "the coordinator: start each AI agent's command when it has work", (*app).cmdRun},
		{"demo", "run a demonstration on a temporary project", (*app).cmdDemo},
		{"sim-agent", "a simulated agent (no LLM) for tests and the demo; reads AIPM_AGENT_ID and friends", (*app).cmdSimAgent},
	}
}

func (a *app) run(args []string) int {
	args = globalFlagsLast(args)
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		a.usage(a.stdout)
		return 0
	}
	for _, c := range commands() {
		if c.name == args[0] {
			if c.name != "mcp" {
				// The MCP server speaks JSON-RPC, which escapes control characters itself.
				a.stdout, a.stderr = cleanWriter{a.stdout}, cleanWriter{a.stderr}
			}
			err := c.run(a, args[1:])
			if err == nil {
				return 0
			}
			var ex exitError
			if errors.As(err, &ex) {
				return int(ex)
			}
			if errors.Is(err, flag.ErrHelp) {
				return 2
			}
			a.printErr(err)
			return 1
		}
	}
	fmt.Fprintf(a.stderr, "aipm: unknown command %q\n", args[0])
	a.usage(a.stderr)
	return 2
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

func (a *app) printErr(err error) {
	var fe *filestore.Error
	if errors.As(err, &fe) {
		fmt.Fprintf(a.stderr, "aipm: %s\n", fe.Message)
		if fe.Hint != "" {
			fmt.Fprintf(a.stderr, "hint: %s\n", fe.Hint)
		}
		return
	}
	fmt.Fprintf(a.stderr, "aipm: %v\n", err)
}

func (a *app) usage(w io.Writer) {
	fmt.Fprintln(w, "usage: aipm <command> [arguments]")
	fmt.Fprintln(w)
	width := 0
	for _, c := range commands() {
		width = max(width, len(c.name))
	}
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-*s %s\n", width, c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Global flags: --json (machine-readable output), --as ID (the acting human; or AIPM_USER; default the owner).")
}

// flags is a subcommand's flag set with the global flags, parsed with flags and
// positional arguments in any order.
type flags struct {
	*flag.FlagSet
	json bool
	as   string
}

func newFlags(a *app, name string) *flags {
	fs := &flags{FlagSet: flag.NewFlagSet("aipm "+name, flag.ContinueOnError)}
	fs.SetOutput(a.stderr)
	fs.BoolVar(&fs.json, "json", false, "print JSON")
	fs.StringVar(&fs.as, "as", "", "the acting human's agent id (default $AIPM_USER, else the project owner)")
	return fs
}

// parse parses args allowing flags after positional arguments, and checks the count of
// positional arguments is within [min, max] (max < 0: unbounded).
func (fs *flags) parse(args []string, min, max int, usage string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	if len(pos) < min || (max >= 0 && len(pos) > max) {
		return nil, fmt.Errorf("usage: %s %s", fs.Name(), usage)
	}
	return pos, nil
}

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

// actor resolves the acting human: --as, else AIPM_USER, else the project owner. It must be
// a human agent of the project, so every CLI change is attributed to a real person.
func (a *app) actor(s *filestore.Store, as string) (filestore.Actor, error) {
	if as == "" {
		as = a.getenv("AIPM_USER")
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
