// The mcp script command: a persistent MCP client per simulated agent.
//
// Scenarios in testdata/scripts drive the real `aipm mcp` server over stdio
// through this command. One script may hold several named clients at once,
// each its own server subprocess, so "agent A acts while agent B waits" is
// written as it happens. Every verb writes to the script's stdout, so the
// usual stdout, ! stdout and cmp stdout assertions apply to what it printed.
//
//	mcp start NAME [-proto VERSION] [-env K=V]... [-timeout D] [--] [PROG ARGS...]
//		Start PROG ARGS (default: aipm mcp), found on the script's $PATH, in
//		the script's current directory (so cd works) with the script's
//		environment plus PWD and the -env pairs, then connect and initialize.
//		-proto pins the protocol version (e.g. 2025-06-18); the default is
//		whatever mcp-go negotiates (2026-07-28 for v1.2.1). -timeout bounds
//		the handshake (default 30s). Prints "started NAME". NAME may be
//		reused once its previous server was stopped or killed.
//		The log records the pid and the negotiated protocol.
//		! mcp start expects the server to die or the handshake to fail,
//		and prints the error; a PROG not on $PATH fails even with !.
//	mcp call NAME TOOL [JSON-ARGS] [-save VAR=PATH]... [-timeout D]
//		Call TOOL with a JSON object of arguments (default {}), waiting at
//		most -timeout (default 60s). Prints every text block of the result
//		exactly as sent, each followed by a newline unless it ends in one;
//		a non-text block is printed as its JSON. A JSON-RPC error (unknown
//		tool, Go error from a handler) prints "rpc error: MESSAGE".
//		An isError result or a JSON-RPC error fails the script unless the
//		line is negated; ! mcp call fails the script if the call succeeded.
//		A timeout or a dead connection always fails the script.
//		-save VAR=PATH parses the first text block as JSON and sets the
//		script variable VAR to the value at the dotted PATH (session_token,
//		agent.id, items.0.id): strings unquoted, anything else as compact
//		JSON. A missing PATH fails the script. -save also reads an isError
//		result, so ! mcp call can capture the error's fields.
//	mcp go NAME TOOL [JSON-ARGS] [-save VAR=PATH]... [-timeout D]
//		Start the same call in the background and print nothing, so the
//		script can go on to act through another client (a long poll).
//		Several may be pending on one client.
//	mcp wait NAME [-save VAR=PATH]...
//		Wait for the oldest background call of NAME and report it exactly like
//		mcp call, including ! and -save (both the go and the wait -save
//		pairs apply). After mcp kill or mcp stop of NAME, the call fails
//		with "transport error: ..." and only ! mcp wait accepts that.
//	mcp list NAME
//		Print the tool names from tools/list, sorted, one per line.
//	mcp tools NAME
//		Print the tools array of tools/list exactly as the server sent it,
//		indented by two spaces (for cmp stdout against a golden file).
//	mcp stderr NAME
//		Print what the server has written to stderr so far.
//	mcp pid NAME
//		Print the server's process id.
//	mcp stop NAME [-timeout D]
//		Close the connection (the server reads EOF on stdin) and wait up to
//		-timeout (default 10s) for it to exit, then SIGKILL it. Prints
//		"stopped NAME exit=CODE" (-1 when killed by a signal). A non-zero
//		exit fails the script unless the line is negated.
//	mcp kill NAME
//		SIGKILL the server, reap it and close the connection. Prints
//		"killed NAME".
//
// Flags take their value as the next argument or after "=". Every server
// a script started is shut down when the script ends, pass or fail: first
// by closing its stdin, then by SIGKILL after 5s. Whatever a server wrote
// to stderr is added to the script's log, which go test shows on failure
// or with -v. Under -race every server needs about a second to exit (the
// race runtime's atexit_sleep_ms); GORACE=atexit_sleep_ms=0 in the go test
// environment, which testscript passes on, removes that wait.
//
// Environment. A server sees exactly what an exec line at the same point
// of the script would see: the variables testscript set up, those added by
// Params.Setup, and every `env K=V` line run before `mcp start`. testscript
// v1.16.0 offers only Getenv, which cannot list the variables a script
// added, so mcpScriptEnviron reads TestScript's unexported env slice with
// reflect (read only) and checks it against Getenv; if go-internal ever
// renames that field every mcp start fails loudly instead of dropping
// variables. -env adds or overrides variables for one server only, which
// is how two agents in one script get different identities.
//
// Setup: Params.Setup must call setupMCP, and Params.Cmds must map "mcp"
// to cmdMCP.

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/rogpeppe/go-internal/testscript"
)

const (
	mcpUsage = "usage: mcp start|call|go|wait|list|tools|stderr|pid|stop|kill NAME [args...] (see mcpclient_test.go)"

	// mcpCallTimeout bounds one tool call; long polls in scenarios stay
	// well below it, and a hung server fails the script instead of the
	// whole go test run.
	mcpCallTimeout = 60 * time.Second
	// mcpStartTimeout bounds the handshake of mcp start.
	mcpStartTimeout = 30 * time.Second
	// mcpStopTimeout is how long mcp stop waits for an exit after EOF.
	mcpStopTimeout = 10 * time.Second
	// mcpCleanupTimeout is the same grace at script end, shorter because a
	// failing script should not also be slow.
	mcpCleanupTimeout = 5 * time.Second
	// mcpListTimeout bounds tools/list.
	mcpListTimeout = 30 * time.Second
	// mcpWaitDelay bounds how long exec waits for the stderr copy after the
	// server exits, in case a grandchild inherited the pipe.
	mcpWaitDelay = 2 * time.Second
	// mcpLogTail is how much of each server's stderr goes into the log.
	mcpLogTail = 8 << 10
)

// mcpVerbs maps each verb to whether it may be negated with !.
var mcpVerbs = map[string]bool{
	"start": true, "call": true, "go": false, "wait": true,
	"list": false, "tools": false, "stderr": false, "pid": false,
	"stop": true, "kill": false,
}

// mcpStateKey is the env.Values key of the per-script *mcpState.
type mcpStateKey struct{}

// mcpState holds the clients of one script. Only the script's goroutine
// touches it: commands run there and so do the deferred cleanups.
type mcpState struct {
	clients map[string]*mcpClient  // by name; a restart replaces the entry
	all     []*mcpClient           // every client ever started, for cleanup
	ts      *testscript.TestScript // set by the first mcp line; for the log
}

// mcpClient is one named connection and the server process behind it.
type mcpClient struct {
	name   string
	cmd    *exec.Cmd
	c      *client.Client
	tap    *mcpTap
	stdout *os.File         // read end of the server's stdout; ours to close
	stderr mcpSyncBuffer    // everything the server wrote to stderr
	exited chan struct{}    // closed once cmd.Wait has returned
	closed bool             // the connection was closed (stop, kill, cleanup)
	bg     []*mcpBackground // the calls started by mcp go, oldest first
}

// mcpBackground is a call started by mcp go and collected by mcp wait.
type mcpBackground struct {
	tool     string
	saves    []string
	deadline time.Time
	done     chan struct{} // closed after res and err are set
	res      *mcp.CallToolResult
	err      error
}

// setupMCP prepares the per-script state of the mcp command. It is meant
// to be called from Params.Setup. The deferred cleanup shuts down every
// server the script started, also when the script fails, so no process
// outlives its script and go test cannot hang on one.
func setupMCP(env *testscript.Env) error {
	st := &mcpState{clients: map[string]*mcpClient{}}
	env.Values[mcpStateKey{}] = st
	env.Defer(st.cleanup)
	return nil
}

// cleanup stops every server still running, in parallel so a script with
// several hung servers waits for one grace period, not one per server, and
// then copies each server's stderr into the script log.
func (st *mcpState) cleanup() {
	var wg sync.WaitGroup
	for _, cl := range st.all {
		if !cl.closed {
			wg.Go(func() { cl.stop(mcpCleanupTimeout) })
		}
	}
	wg.Wait()
	for _, cl := range st.all {
		for _, bg := range cl.bg {
			// The connection is closed, so the call has already
			// returned or is about to.
			<-bg.done
		}
		if s := cl.stderr.String(); s != "" {
			if len(s) > mcpLogTail {
				s = "..." + s[len(s)-mcpLogTail:]
			}
			st.ts.Logf("mcp %s: stderr of pid %d:\n%s", cl.name, cl.cmd.Process.Pid, s)
		}
	}
}

// cmdMCP implements the mcp script command; the verbs are documented at
// the top of this file.
func cmdMCP(ts *testscript.TestScript, neg bool, args []string) {
	st, _ := ts.Value(mcpStateKey{}).(*mcpState)
	if st == nil {
		ts.Fatalf("mcp: no state for this script: Params.Setup must call setupMCP")
	}
	st.ts = ts
	// Taking the writer up front also empties stdout, so a verb that
	// prints nothing (mcp go) does not leave the previous command's
	// output to be matched by the next stdout assertion.
	out := ts.Stdout()
	if len(args) < 2 {
		ts.Fatalf("%s", mcpUsage)
	}
	verb, name, rest := args[0], args[1], args[2:]
	negatable, known := mcpVerbs[verb]
	switch {
	case !known:
		ts.Fatalf("mcp: unknown verb %q\n%s", verb, mcpUsage)
	case neg && !negatable:
		ts.Fatalf("mcp %s does not support !", verb)
	}
	if verb == "start" {
		st.start(ts, neg, out, name, rest)
		return
	}
	cl := st.clients[name]
	if cl == nil {
		ts.Fatalf("mcp %s: no client named %q (known: %s)\n%s", verb, name, strings.Join(slices.Sorted(maps.Keys(st.clients)), ", "), mcpUsage)
	}
	switch verb {
	case "call", "go":
		pos, fl := mcpFlags(ts, verb, rest, true, "save", "timeout")
		if len(pos) < 1 || len(pos) > 2 {
			ts.Fatalf("usage: mcp %s NAME TOOL [JSON-ARGS] [-save VAR=PATH]... [-timeout D]", verb)
		}
		argsJSON := "{}"
		if len(pos) == 2 {
			argsJSON = pos[1]
		}
		timeout := mcpDuration(ts, fl, mcpCallTimeout)
		cl.mustBeOpen(ts, verb)
		if verb == "call" {
			res, err := cl.callTool(ts, pos[0], argsJSON, timeout)
			cl.report(ts, neg, out, "mcp call "+name+" "+pos[0], res, err, fl["save"])
			return
		}
		cl.startBackground(ts, pos[0], argsJSON, timeout, fl["save"])
	case "wait":
		pos, fl := mcpFlags(ts, verb, rest, true, "save")
		if len(pos) != 0 {
			ts.Fatalf("usage: mcp wait NAME [-save VAR=PATH]...")
		}
		if len(cl.bg) == 0 {
			ts.Fatalf("mcp wait %s: no background call; start one with mcp go", name)
		}
		// The call's own context ends at the deadline; the margin only
		// matters if mcp-go ever failed to honour it. On that failure bg
		// stays in place for the cleanup to wait for.
		bg := cl.bg[0]
		select {
		case <-bg.done:
		case <-time.After(time.Until(bg.deadline) + 5*time.Second):
			ts.Fatalf("mcp wait %s: background call %s did not return", name, bg.tool)
		}
		cl.bg = cl.bg[1:]
		cl.report(ts, neg, out, "mcp wait "+name+" ("+bg.tool+")", bg.res, bg.err, append(bg.saves, fl["save"]...))
	case "list", "tools":
		mcpNoArgs(ts, verb, rest)
		cl.mustBeOpen(ts, verb)
		cl.listTools(ts, out, verb == "tools")
	case "stderr":
		mcpNoArgs(ts, verb, rest)
		io.WriteString(out, cl.stderr.String())
	case "pid":
		mcpNoArgs(ts, verb, rest)
		fmt.Fprintf(out, "%d\n", cl.cmd.Process.Pid)
	case "stop":
		pos, fl := mcpFlags(ts, verb, rest, true, "timeout")
		if len(pos) != 0 {
			ts.Fatalf("usage: mcp stop NAME [-timeout D]")
		}
		cl.mustBeOpen(ts, verb)
		code, desc := cl.stop(mcpDuration(ts, fl, mcpStopTimeout))
		fmt.Fprintf(out, "stopped %s exit=%d\n", name, code)
		switch {
		case code != 0 && !neg:
			ts.Fatalf("mcp stop %s: server %s", name, desc)
		case code == 0 && neg:
			ts.Fatalf("mcp stop %s: server exited 0, want a failure", name)
		}
	case "kill":
		mcpNoArgs(ts, verb, rest)
		cl.mustBeOpen(ts, verb)
		cl.kill()
		fmt.Fprintf(out, "killed %s\n", name)
	}
}

// start implements mcp start.
func (st *mcpState) start(ts *testscript.TestScript, neg bool, out io.Writer, name string, args []string) {
	if name == "" || strings.HasPrefix(name, "-") {
		ts.Fatalf("usage: mcp start NAME [-proto VERSION] [-env K=V]... [-timeout D] [--] [PROG ARGS...]")
	}
	if old := st.clients[name]; old != nil && !old.closed {
		ts.Fatalf("mcp start %s: already running (pid %d); mcp stop %s first", name, old.cmd.Process.Pid, name)
	}
	// Flags end at the program so that its own flags pass through.
	prog, fl := mcpFlags(ts, "start", args, false, "proto", "env", "timeout")
	if len(prog) == 0 {
		prog = []string{"aipm", "mcp"}
	}
	for _, kv := range fl["env"] {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			ts.Fatalf("mcp start %s: -env %q: want K=V", name, kv)
		}
	}
	var opts []client.ClientOption
	if p := mcpLast(fl["proto"]); p != "" {
		opts = append(opts, client.WithProtocolVersion(p))
	}
	timeout := mcpDuration(ts, fl, mcpStartTimeout)
	// Mistakes on our side fail even a negated start: only the server
	// failing to start or to shake hands is the failure ! expects.
	path, err := mcpLookPath(ts, prog[0])
	if err != nil {
		ts.Fatalf("mcp start %s: %v", name, err)
	}
	environ, err := mcpScriptEnviron(ts)
	if err != nil {
		ts.Fatalf("mcp start %s: %v", name, err)
	}
	dir := ts.MkAbs(".")
	// exec keeps the last value of a duplicated key, so -env overrides.
	environ = append(append(environ, "PWD="+dir), fl["env"]...)

	cl, err := st.spawn(name, path, prog[1:], dir, environ, opts)
	if err == nil {
		err = cl.initialize(ts, timeout)
	}
	if neg {
		if err == nil {
			cl.stop(mcpCleanupTimeout)
			ts.Fatalf("mcp start %s: started, want a failure", name)
		}
		fmt.Fprintf(out, "%v\n", err)
		return
	}
	ts.Check(err)
	fmt.Fprintf(out, "started %s\n", name)
}

// spawn starts the server process of a new client and registers it, so
// that the script's cleanup owns the process from the moment it exists.
//
// The process is started here rather than by mcp-go's stdio transport
// (WithCommandFunc) because the transport also owns cmd.Wait and a fixed
// 2s-then-SIGTERM shutdown; the test needs its own wait (exit code for
// stop, SIGKILL for kill) and must read stderr after the process is gone.
// transport.NewIO then speaks JSON-RPC over our pipes.
func (st *mcpState) spawn(name, path string, args []string, dir string, environ []string, opts []client.ClientOption) (*mcpClient, error) {
	cl := &mcpClient{name: name, exited: make(chan struct{})}
	cmd := exec.Command(path, args...)
	cmd.Dir = dir
	cmd.Env = environ
	cmd.Stderr = &cl.stderr
	cmd.WaitDelay = mcpWaitDelay
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("mcp start %s: %w", name, err)
	}
	// An os.Pipe rather than cmd.StdoutPipe: Wait closes the latter as soon
	// as the process exits, which could drop replies not yet read.
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("mcp start %s: %w", name, err)
	}
	cmd.Stdout = stdoutW
	err = cmd.Start()
	stdoutW.Close()
	if err != nil {
		stdin.Close()
		stdoutR.Close()
		return nil, fmt.Errorf("mcp start %s: %w", name, err)
	}
	cl.cmd, cl.stdout = cmd, stdoutR
	go func() {
		cmd.Wait() // the result is read from cmd.ProcessState
		close(cl.exited)
	}()
	st.clients[name] = cl
	st.all = append(st.all, cl)

	cl.tap = &mcpTap{r: bufio.NewReader(stdoutR)}
	cl.c = client.NewClient(transport.NewIO(cl.tap, stdin, nil), opts...)
	// The connection must outlive this command, so no deadline here
	// (libs.md §1.10); stop, kill and cleanup end it.
	if err := cl.c.Start(context.Background()); err != nil {
		cl.kill()
		return nil, fmt.Errorf("mcp start %s: %w", name, err)
	}
	return cl, nil
}

// initialize performs the MCP handshake and logs what was negotiated.
func (cl *mcpClient) initialize(ts *testscript.TestScript, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var req mcp.InitializeRequest
	req.Params.ClientInfo = mcp.Implementation{Name: "aipm-testscript", Version: "0"}
	res, err := cl.c.Initialize(ctx, req)
	if err != nil {
		note := cl.exitNote() // before kill, which would mask a crash
		cl.kill()
		return fmt.Errorf("mcp start %s: initialize: %v%s", cl.name, err, note)
	}
	ts.Logf("mcp %s: pid %d, protocol %s, server %s %s", cl.name, cl.cmd.Process.Pid, res.ProtocolVersion, res.ServerInfo.Name, res.ServerInfo.Version)
	return nil
}

// mustBeOpen fails the script when the connection was already closed.
func (cl *mcpClient) mustBeOpen(ts *testscript.TestScript, verb string) {
	if cl.closed {
		ts.Fatalf("mcp %s %s: the client was stopped or killed", verb, cl.name)
	}
}

// callTool sends one tools/call; the error is the client's, untouched, so
// report can tell JSON-RPC errors from transport failures.
func (cl *mcpClient) callTool(ts *testscript.TestScript, tool, argsJSON string, timeout time.Duration) (*mcp.CallToolResult, error) {
	req := mcpRequest(ts, tool, argsJSON)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return cl.c.CallTool(ctx, req)
}

// startBackground starts the call of mcp go.
func (cl *mcpClient) startBackground(ts *testscript.TestScript, tool, argsJSON string, timeout time.Duration, saves []string) {
	req := mcpRequest(ts, tool, argsJSON)
	bg := &mcpBackground{tool: tool, saves: saves, deadline: time.Now().Add(timeout), done: make(chan struct{})}
	cl.bg = append(cl.bg, bg)
	c := cl.c
	go func() {
		// Bounded by the deadline, and sooner by closing the connection.
		defer close(bg.done)
		ctx, cancel := context.WithDeadline(context.Background(), bg.deadline)
		defer cancel()
		bg.res, bg.err = c.CallTool(ctx, req)
	}()
}

// mcpRequest builds a tools/call request, failing the script on arguments
// that are not a JSON object. Numbers stay json.Number so that large ids
// reach the server digit for digit.
func mcpRequest(ts *testscript.TestScript, tool, argsJSON string) mcp.CallToolRequest {
	dec := json.NewDecoder(strings.NewReader(argsJSON))
	dec.UseNumber()
	var args map[string]any
	if err := dec.Decode(&args); err != nil || args == nil || dec.More() {
		ts.Fatalf("mcp: arguments for %s must be one JSON object, got %q", tool, argsJSON)
	}
	var req mcp.CallToolRequest
	req.Params.Name = tool
	req.Params.Arguments = args
	return req
}

// report prints the outcome of a call and applies the ! and -save rules
// documented at the top of the file.
func (cl *mcpClient) report(ts *testscript.TestScript, neg bool, out io.Writer, what string, res *mcp.CallToolResult, err error, saves []string) {
	if err != nil {
		// Everything that is not a JSON-RPC error reply (timeout, server
		// gone, broken pipe) reaches us wrapped in *transport.Error. That
		// is never the failure a scenario expects, except for a
		// background call whose connection the script itself closed.
		if te := (*transport.Error)(nil); errors.As(err, &te) {
			if neg && cl.closed && len(saves) == 0 {
				fmt.Fprintf(out, "%v\n", err)
				return
			}
			ts.Fatalf("%s: %v%s", what, err, cl.exitNote())
		}
		fmt.Fprintf(out, "rpc error: %v\n", err)
		if len(saves) > 0 {
			ts.Fatalf("%s: cannot -save from an rpc error", what)
		}
		if !neg {
			ts.Fatalf("%s: rpc error (see stdout)", what)
		}
		return
	}
	var first *string
	for _, c := range res.Content {
		text := ""
		if tc, ok := mcpText(c); ok {
			text = tc
			if first == nil {
				first = &tc
			}
		} else {
			b, err := json.Marshal(c)
			ts.Check(err)
			text = string(b)
		}
		io.WriteString(out, text)
		if !strings.HasSuffix(text, "\n") {
			io.WriteString(out, "\n")
		}
	}
	switch {
	case res.IsError && !neg:
		ts.Fatalf("%s: tool returned isError (see stdout)", what)
	case !res.IsError && neg:
		ts.Fatalf("%s: succeeded, want an error", what)
	}
	for _, s := range saves {
		if first == nil {
			ts.Fatalf("%s: -save %s: the result has no text block", what, s)
		}
		mcpSave(ts, what, s, *first)
	}
}

// mcpText returns the text of a text block; mcp-go parses blocks into
// values, but a pointer is accepted too so a change there cannot turn text
// into JSON silently.
func mcpText(c mcp.Content) (string, bool) {
	switch tc := c.(type) {
	case mcp.TextContent:
		return tc.Text, true
	case *mcp.TextContent:
		return tc.Text, true
	}
	return "", false
}

// mcpSave implements one -save VAR=PATH.
func mcpSave(ts *testscript.TestScript, what, spec, text string) {
	name, path, ok := strings.Cut(spec, "=")
	if !ok || name == "" || path == "" {
		ts.Fatalf("%s: -save %q: want VAR=PATH", what, spec)
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		ts.Fatalf("%s: -save %s: result text is not JSON: %v", what, spec, err)
	}
	for _, step := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			next, ok := x[step]
			if !ok {
				ts.Fatalf("%s: -save %s: no field %q in %s", what, spec, step, mcpCompact(x))
			}
			v = next
		case []any:
			i, err := strconv.Atoi(step)
			if err != nil || i < 0 || i >= len(x) {
				ts.Fatalf("%s: -save %s: no element %q in an array of %d", what, spec, step, len(x))
			}
			v = x[i]
		default:
			ts.Fatalf("%s: -save %s: cannot take %q of %s", what, spec, step, mcpCompact(v))
		}
	}
	value, ok := v.(string)
	if !ok {
		value = mcpCompact(v)
	}
	ts.Setenv(name, value)
	ts.Logf("%s=%s", name, value)
}

// mcpCompact renders a decoded JSON value compactly for messages and -save.
func mcpCompact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// listTools implements mcp list and mcp tools.
func (cl *mcpClient) listTools(ts *testscript.TestScript, out io.Writer, raw bool) {
	ctx, cancel := context.WithTimeout(context.Background(), mcpListTimeout)
	defer cancel()
	cl.tap.capture(true)
	res, err := cl.c.ListTools(ctx, mcp.ListToolsRequest{})
	pages := cl.tap.capture(false)
	if err != nil {
		ts.Fatalf("mcp tools/list %s: %v%s", cl.name, err, cl.exitNote())
	}
	if !raw {
		var names []string
		for _, t := range res.Tools {
			names = append(names, t.Name)
		}
		slices.Sort(names)
		for _, n := range names {
			fmt.Fprintln(out, n)
		}
		return
	}
	// The golden snapshot must show the schemas as the server sent them;
	// mcp.Tool drops schema keywords it does not model, so the raw pages
	// recorded by the tap are printed instead of res.
	var tools []json.RawMessage
	for _, p := range pages {
		var page []json.RawMessage
		if err := json.Unmarshal(p, &page); err != nil {
			ts.Fatalf("mcp tools %s: tools is not an array: %v", cl.name, err)
		}
		tools = append(tools, page...)
	}
	if len(tools) != len(res.Tools) {
		ts.Fatalf("mcp tools %s: recorded %d tools, the client parsed %d", cl.name, len(tools), len(res.Tools))
	}
	compact, err := json.Marshal(tools) // also compacts each element
	ts.Check(err)
	var buf bytes.Buffer
	ts.Check(json.Indent(&buf, compact, "", "  "))
	buf.WriteByte('\n')
	out.Write(buf.Bytes())
}

// stop closes the connection, waits up to grace for the server to exit and
// kills it after that. It returns the exit code (-1 for a signal) and a
// description of how the process ended.
func (cl *mcpClient) stop(grace time.Duration) (int, string) {
	cl.closeConn()
	select {
	case <-cl.exited:
	case <-time.After(grace):
		cl.cmd.Process.Kill()
		<-cl.exited
	}
	cl.stdout.Close()
	ps := cl.cmd.ProcessState
	return ps.ExitCode(), ps.String()
}

// kill ends the server with SIGKILL, reaps it and closes the connection.
// The process is reaped first so that the connection sees EOF and any
// in-flight call fails at once instead of at its deadline.
func (cl *mcpClient) kill() {
	cl.cmd.Process.Kill()
	<-cl.exited
	cl.closeConn()
	cl.stdout.Close()
}

// closeConn closes the client once. Its error is only the stdin pipe's and
// says nothing the exit status does not.
func (cl *mcpClient) closeConn() {
	if cl.closed {
		return
	}
	cl.closed = true
	if cl.c != nil {
		cl.c.Close()
	}
}

// exitNote explains a failed request: whether the server is gone, and the
// end of its stderr, which usually holds the real error.
func (cl *mcpClient) exitNote() string {
	status := "still running"
	select {
	case <-cl.exited:
		status = "exited: " + cl.cmd.ProcessState.String()
	case <-time.After(100 * time.Millisecond):
	}
	s := cl.stderr.String()
	if len(s) > 2000 {
		s = "..." + s[len(s)-2000:]
	}
	return fmt.Sprintf(" (server %s; stderr:\n%s)", status, s)
}

// mcpFlags splits args into positional arguments and the values of the
// named flags, each of which takes a value ("-f v" or "-f=v") and may
// repeat. With interspersed, flags may follow positional arguments;
// without it, the first positional argument or "--" ends the flags, so a
// program's own flags pass through mcp start.
func mcpFlags(ts *testscript.TestScript, verb string, args []string, interspersed bool, names ...string) (pos []string, flags map[string][]string) {
	flags = map[string][]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" && !interspersed {
			return append(pos, args[i+1:]...), flags
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			if !interspersed {
				return append(pos, args[i:]...), flags
			}
			pos = append(pos, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !slices.Contains(names, name) {
			ts.Fatalf("mcp %s: unknown flag %s\n%s", verb, a, mcpUsage)
		}
		if !hasValue {
			if i+1 == len(args) {
				ts.Fatalf("mcp %s: flag %s needs a value", verb, a)
			}
			i++
			value = args[i]
		}
		flags[name] = append(flags[name], value)
	}
	return pos, flags
}

// mcpNoArgs fails the script if a verb that takes only NAME got more.
func mcpNoArgs(ts *testscript.TestScript, verb string, rest []string) {
	if len(rest) != 0 {
		ts.Fatalf("usage: mcp %s NAME (unexpected %q)", verb, rest)
	}
}

// mcpDuration returns the -timeout flag or def.
func mcpDuration(ts *testscript.TestScript, flags map[string][]string, def time.Duration) time.Duration {
	s := mcpLast(flags["timeout"])
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		ts.Fatalf("mcp: -timeout %q: want a positive duration such as 5s", s)
	}
	return d
}

// mcpLast returns the last of repeated flag values, or "".
func mcpLast(values []string) string {
	if len(values) == 0 {
		return ""
	}
	return values[len(values)-1]
}

// mcpLookPath finds prog the way an exec line of the script would: on the
// script's $PATH (where testscript.Main put the test binary as aipm), not
// the test process's, and relative to the script's directory.
func mcpLookPath(ts *testscript.TestScript, prog string) (string, error) {
	if strings.ContainsRune(prog, filepath.Separator) || strings.ContainsRune(prog, '/') {
		return ts.MkAbs(prog), nil
	}
	for _, dir := range filepath.SplitList(ts.Getenv("PATH")) {
		if dir == "" {
			continue
		}
		path := filepath.Join(ts.MkAbs(dir), prog)
		if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return path, nil
		}
	}
	return "", fmt.Errorf("%s: not found on the script's $PATH", prog)
}

// mcpScriptEnviron returns the script's current environment, as an exec
// line at this point would get it.
//
// testscript keeps it in the unexported TestScript.env and exposes only
// Getenv, which cannot enumerate variables set by `env K=V` lines; the
// Env seen by Params.Setup is a snapshot from before the script ran. So the
// slice is read through reflect, which permits reading (never writing) an
// unexported field, and cross-checked against Getenv, so that a change in
// go-internal fails every mcp start with this message rather than
// silently starting servers with a partial environment.
func mcpScriptEnviron(ts *testscript.TestScript) ([]string, error) {
	f := reflect.ValueOf(ts).Elem().FieldByName("env")
	if !f.IsValid() || f.Kind() != reflect.Slice || f.Type().Elem().Kind() != reflect.String {
		return nil, errors.New("cannot read the script environment: testscript.TestScript has no env []string field any more; update mcpScriptEnviron")
	}
	env := make([]string, f.Len())
	effective := map[string]string{}
	for i := range env {
		env[i] = f.Index(i).String()
		if k, v, ok := strings.Cut(env[i], "="); ok {
			effective[k] = v
		}
	}
	if effective["WORK"] == "" {
		return nil, errors.New("cannot read the script environment: TestScript.env has no WORK; update mcpScriptEnviron")
	}
	for k, v := range effective {
		if got := ts.Getenv(k); got != v {
			return nil, fmt.Errorf("cannot read the script environment: TestScript.env says %s=%q, Getenv says %q; update mcpScriptEnviron", k, v, got)
		}
	}
	return env, nil
}

// mcpSyncBuffer is a bytes.Buffer safe for exec's stderr copier and the
// script goroutine at once.
type mcpSyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *mcpSyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *mcpSyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// mcpTap sits between the server's stdout and the transport and, while
// capturing, records the raw tools array of every tools/list reply. It
// hands the transport whole lines, which is all its line reader needs.
type mcpTap struct {
	r    *bufio.Reader
	rest []byte // the part of the current line not yet returned

	mu        sync.Mutex
	capturing bool
	pages     []json.RawMessage
}

// Read returns the next bytes of the current line, reading a new line
// from the server when the previous one is used up.
func (t *mcpTap) Read(p []byte) (int, error) {
	if len(t.rest) == 0 {
		line, err := t.r.ReadBytes('\n')
		if len(line) == 0 {
			return 0, err
		}
		t.observe(line)
		t.rest = line
	}
	n := copy(p, t.rest)
	t.rest = t.rest[n:]
	return n, nil
}

// observe records line if it is a tools/list reply and capturing is on.
// A reply is recognised by result.tools; no other reply has that key.
func (t *mcpTap) observe(line []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.capturing {
		return
	}
	var msg struct {
		Result struct {
			Tools json.RawMessage `json:"tools"`
		} `json:"result"`
	}
	if json.Unmarshal(line, &msg) == nil && msg.Result.Tools != nil {
		t.pages = append(t.pages, msg.Result.Tools)
	}
}

// capture turns recording on or off; turning it off returns what was
// recorded since it was turned on. The reply is recorded before the
// transport hands it to the waiting ListTools, so after ListTools returns
// every page is here.
func (t *mcpTap) capture(on bool) []json.RawMessage {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.capturing = on
	pages := t.pages
	t.pages = nil
	return pages
}
