// Package tools is aipm's MCP surface: the tool handlers, the authorization layer that runs
// before them, and the response envelope every agent sees. Handlers translate between MCP
// arguments and the store's verbs; the rules themselves live in filestore.
package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aipm/aipm/filestore"
	"github.com/aipm/aipm/filestore/msg"
	"github.com/aipm/aipm/watch"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Version is reported in the MCP server info.
const Version = "0.1.0"

// Perm is the caller a tool admits, checked before any handler runs.
type Perm int

// Permission levels (SPEC §5).
const (
	Unauthenticated Perm = iota // anyone, before authenticate (authenticate, help)
	Authenticated               // any session, task or chat
	TaskOnly                    // a task session
	ChatOnly                    // a chat session
	ManagerOnly                 // a manager's (or owner's) session of either purpose
)

func (p Perm) String() string {
	return [...]string{"unauthenticated", "authenticated", "task_only", "chat_only", "manager_only"}[p]
}

// tool is one MCP tool: its schema, who may call it, and its handler.
type tool struct {
	def    mcp.Tool
	perm   Perm
	handle func(ctx context.Context, c *call) (any, error)
}

// Server serves one stdio connection: one agent process. It remembers the session most
// recently authenticated on the connection (so session_token may be omitted) and the
// sessions it opened, which end when the connection does.
type Server struct {
	store *filestore.Store
	mcp   *server.MCPServer
	tools map[string]*tool
	pid   int
	log   func(format string, args ...any)
	hub   *watch.Hub
	// ticket is the spawn ticket from the environment of a coordinator-started process.
	ticket string
	// recheck is how often a long-poll re-evaluates when no watcher feeds the hub.
	recheck time.Duration

	mu      sync.Mutex
	current string                        // token of the connection's current session
	owned   []string                      // session ids opened by this process
	ownedAs map[string]ownedSession       // what does not change of them, for derivations
	seen    map[string]map[string]taskSig // per owned task session: what it last saw of its tasks
	// derivedAt is, per owned task session, the tasks' generation at its last derivation.
	derivedAt map[string]uint64
	// settling holds the owned task sessions whose last derivation left a block cascade
	// in flight (cascadesInFlight): any change of tasks concerns them until it settles.
	settling map[string]bool
	// walkBound is the most changed tasks a derivation compares one by one
	// (changedWalkBound); derivedChanged counts the derivations that did.
	walkBound      int
	derivedChanged int
	waiting        map[string]int // sessions waiting in get_next_action (a message wakes them)
	// polls holds a slot per long-poll in progress: a wait beyond MaxWaits answers at once,
	// so waits never occupy the transport's whole worker pool.
	polls   chan struct{}
	msgSeen map[string]string          // per owned chat session: the newest message it was told of
	usage   map[string]filestore.Usage // per owned session: its calls so far (usage.go)
	// usageDue: the sessions whose counts are not written yet; usageTimer writes them.
	usageDue   map[string]bool
	usageTimer *time.Timer
	// inFlight counts, per owned session, its calls being served now: written with the
	// counts, so the coordinator can tell a session in a long poll from a silent one.
	inFlight map[string]int
	list     listing // the short list of a process with a ticket (listing.go)

	// subtrees holds, by task, its sub-tree as last copied for a session's decisions
	// (subtreeOf); subMu serializes subtreeOf. patchedSubtrees counts the copies brought
	// up to date from the tasks changed alone.
	subMu           sync.Mutex
	subtrees        map[string]*subtreeMemo
	patchedSubtrees int

	deriveMu sync.Mutex // serializes deriveFor
	msgMu    sync.Mutex // serializes deriveMessagesFor
}

// Options configure a Server.
type Options struct {
	// PID is recorded in sessions as their serving process (default os.Getpid()).
	PID int
	// Logf receives diagnostics (default: stderr).
	Logf func(format string, args ...any)
	// Hub wakes long-polls (get_next_action) when files under .ai-pm change. A watcher of
	// the store directory should feed it (see Watch). Without one, long-polls re-check the
	// store every quarter second.
	Hub *watch.Hub
	// SpawnTicket is the one-time ticket the coordinator minted for the agent process this
	// server serves (AIPM_SPAWN_TICKET in its environment): authenticate uses it when the
	// agent passes no passkey, so no secret ever passes through the agent's prompt.
	SpawnTicket string
}

// New builds the MCP server for a store.
func New(store *filestore.Store, o Options) *Server {
	if o.PID == 0 {
		o.PID = os.Getpid()
	}
	if o.Logf == nil {
		o.Logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, "aipm mcp: "+format+"\n", args...) }
	}
	s := &Server{store: store, tools: map[string]*tool{}, pid: o.PID, log: o.Logf, hub: o.Hub, ticket: o.SpawnTicket, seen: map[string]map[string]taskSig{}, derivedAt: map[string]uint64{}, settling: map[string]bool{}, walkBound: changedWalkBound,
		waiting: map[string]int{}, msgSeen: map[string]string{}, ownedAs: map[string]ownedSession{}, usage: map[string]filestore.Usage{}, inFlight: map[string]int{}, polls: make(chan struct{}, MaxWaits),
		list: listing{named: map[string]bool{}, asked: map[string]bool{}, read: make(chan struct{})}}
	if s.hub == nil {
		s.hub, s.recheck = &watch.Hub{}, 250*time.Millisecond
	}
	hooks := &server.Hooks{}
	hooks.AddAfterListTools(func(ctx context.Context, id any, req *mcp.ListToolsRequest, res *mcp.ListToolsResult) {
		res.Tools = s.visibleTools(res.Tools)
		s.noteListed(id, res.Tools)
	})
	lang := ""
	if p, err := store.Project(); err == nil {
		lang = p.Settings.Language
	}
	s.mcp = server.NewMCPServer("aipm", Version,
		server.WithToolCapabilities(true),
		server.WithHooks(hooks),
		server.WithInstructions(msg.Text(lang, "server.instructions")),
	)
	for _, t := range catalog(s) {
		s.tools[t.def.Name] = t
		s.mcp.AddTool(t.def, s.listed(t.def.Name, s.counted(t.def.Name, s.envelope(t))))
	}
	return s
}

// ownedSession is what a session opened by this process is for, fixed at authenticate.
type ownedSession struct{ agent, purpose, taskID string }

// served returns the live sessions of a purpose that this process opened and want
// accepts. want decides from what does not change of a session, before its file is read.
func (s *Server) served(purpose string, want func(id string, o ownedSession) bool) []*filestore.Session {
	s.mu.Lock()
	ids := map[string]ownedSession{}
	for _, id := range s.owned {
		if o, ok := s.ownedAs[id]; ok && o.purpose == purpose {
			ids[id] = o
		}
	}
	s.mu.Unlock()
	var out []*filestore.Session
	now := s.store.Now()
	for id, o := range ids {
		if !want(id, o) {
			continue
		}
		se, err := s.store.SessionByID(id)
		if err != nil {
			s.log("session %s: %v", id, err)
			continue
		}
		if se.Live(now) {
			out = append(out, se)
		}
	}
	return out
}

// MCP returns the mcp-go server to serve over stdio.
func (s *Server) MCP() *server.MCPServer { return s.mcp }

// Close ends every session this connection opened: the agent process is gone (stdin
// closed or the server stopped), so its sessions are no longer live. Sessions of the same
// agent served by other processes are untouched.
func (s *Server) Close(reason string) {
	s.flushUsage()
	s.mu.Lock()
	owned := s.owned
	s.owned = nil
	s.current = ""
	s.mu.Unlock()
	for _, id := range owned {
		if err := s.store.EndSession(id, reason); err != nil {
			s.log("end session %s: %v", id, err)
		}
	}
}

// visibleTools is what tools/list shows. With a session, only the tools its purpose and
// hierarchy allow, which keeps the token cost of the list small (many clients send the
// whole list with every model request). Before authentication in a process aipm run
// started, the same view for the session its spawn ticket opens: the spawn record names
// the agent and the purpose. Otherwise, before authentication, every tool: a client
// configured by hand learns them all.
//
// A process started with a ticket lists its tools brief (see briefTool), and only those
// of its short list (listing.go): the core, what the latest answer named, what help
// described.
func (s *Server) visibleTools(all []mcp.Tool) []mcp.Tool {
	se, agent := s.currentSession()
	s.mu.Lock()
	authenticated := len(s.ownedAs) > 0 // a spawn ticket opens one session: no authenticate after it
	s.mu.Unlock()
	if se == nil {
		se, agent = s.ticketView()
	}
	if se == nil {
		return all
	}
	out := slices.DeleteFunc(all, func(t mcp.Tool) bool {
		ti, ok := s.tools[t.Name]
		return ok && permits(ti.perm, se, agent) != nil
	})
	if s.ticket == "" {
		return out
	}
	standing := s.standingTools(se, agent)
	s.mu.Lock()
	out = slices.DeleteFunc(out, func(t mcp.Tool) bool {
		return !standing[t.Name] && !s.shortListed(t.Name, se.Purpose, authenticated)
	})
	s.mu.Unlock()
	for i, t := range out {
		out[i] = briefTool(t)
	}
	return out
}

// ticketView is the session a spawn ticket will open, as far as the tool list depends on
// it (purpose and agent), or nil when this process has no ticket or its spawn record
// cannot be read.
func (s *Server) ticketView() (*filestore.Session, *filestore.Agent) {
	id, _, ok := strings.Cut(s.ticket, ".")
	if s.ticket == "" || !ok {
		return nil, nil
	}
	sp, err := s.store.Spawn(id)
	if err != nil || sp.EndedAt != nil {
		return nil, nil
	}
	a, err := s.store.Agent(sp.AgentID)
	if err != nil {
		return nil, nil
	}
	return &filestore.Session{AgentID: a.ID, Purpose: sp.Purpose, TaskID: sp.TaskID}, a
}

func (s *Server) currentSession() (*filestore.Session, *filestore.Agent) {
	s.mu.Lock()
	tok := s.current
	s.mu.Unlock()
	if tok == "" {
		return nil, nil
	}
	se, err := s.store.Session(tok)
	if err != nil {
		return nil, nil
	}
	a, err := s.store.Agent(se.AgentID)
	if err != nil {
		return nil, nil
	}
	return se, a
}

// call is one tool invocation: its arguments and, for authenticated tools, the caller.
type call struct {
	srv     *Server
	args    map[string]any
	session *filestore.Session
	agent   *filestore.Agent
	project *filestore.Project // shared (ProjectView): read it, never change it
	tok     string             // the session's bearer token
	sum     *filestore.NotificationSummary
	// failure marks errors with "success": false, the shape seed 000 gives its tools.
	failure bool
}

func (c *call) actor() filestore.Actor {
	return filestore.Actor{ID: c.agent.ID, Via: filestore.ViaTool}
}

// lang is the project's language for agent-facing texts (settings.language). Before a
// session is resolved (authenticate, help, a refused call) it is read from the store; a
// project that cannot be read means English.
func (c *call) lang() string {
	if c.project != nil {
		return c.project.Settings.Language
	}
	return c.srv.store.ProjectLanguage()
}

// text is the catalog's text for key in the project's language.
func (c *call) text(key string, args ...any) string {
	return msg.Text(c.lang(), key, args...)
}

// envelope wraps a handler with everything every tool shares: panic recovery, session
// resolution, the permission check, lease renewal, and the response shape — compact JSON
// in one text block, with the notification field on every response to an authenticated
// agent, errors as isError results, never JSON-RPC errors.
func (s *Server) envelope(t *tool) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (res *mcp.CallToolResult, _ error) {
		c := &call{srv: s, args: req.GetArguments(), failure: successOnError[t.def.Name]}
		defer func() {
			if p := recover(); p != nil {
				s.log("panic in %s: %v\n%s", t.def.Name, p, debug.Stack())
				res = c.errorResult(&toolError{Code: "internal_error", Message: fmt.Sprintf("%s failed unexpectedly: %v", t.def.Name, p),
					Hint: "retry once; if it fails again, report it to the project owner"})
			}
		}()
		if c.args == nil {
			if raw := req.Params.Arguments; raw != nil {
				return c.errorResult(&toolError{Code: "invalid_argument", Message: "arguments must be a JSON object",
					Hint: "pass named arguments, e.g. {\"session_token\": \"...\"}"}), nil
			}
			c.args = map[string]any{}
		}
		if t.perm != Unauthenticated {
			if err := s.resolve(c); err != nil {
				return c.errorResult(err), nil
			}
		}
		// An unread interrupt for this session replaces the tool's result (seed 004: every
		// tool's, so also a refusal the call would have met): the tool does not run, so
		// nothing happens that the agent would not learn of.
		if c.session != nil && !interruptExempt[t.def.Name] {
			if res := c.interrupted(); res != nil {
				return res, nil
			}
		}
		if c.session != nil {
			if err := permits(t.perm, c.session, c.agent); err != nil {
				return c.errorResult(err), nil
			}
		}
		if c.session != nil && c.session.Purpose == filestore.PurposeTask && changesTask[t.def.Name] {
			if err := c.taskStillMine(); err != nil {
				return c.errorResult(err), nil
			}
		}
		if err := unknownArgs(t, c.args); err != nil {
			return c.errorResult(err), nil
		}
		// A busy chat session hears of new messages in this response, whatever the timing of
		// the watcher; the tools that read messages need no notice of them.
		if c.session != nil && c.session.Purpose == filestore.PurposeChat && t.def.Name != "get_next_action" && t.def.Name != "get_pending_messages" {
			if err := s.deriveMessagesFor(c.session); err != nil {
				s.log("message notifications for %s: %v", c.session.ID, err)
			}
			c.sum = nil
		}
		out, err := t.handle(ctx, c)
		if err != nil {
			return c.errorResult(err), nil
		}
		// A long-poll ends when an interrupt arrives; it answers with the notice too.
		if t.def.Name == "get_next_action" {
			if res := c.interrupted(); res != nil {
				return res, nil
			}
		}
		return c.result(out), nil
	}
}

// resolve finds the caller's session: the session_token argument, or the session last
// authenticated on this connection.
func (s *Server) resolve(c *call) error {
	tok, err := c.optString("session_token")
	if err != nil {
		return err
	}
	if tok == "" {
		s.mu.Lock()
		tok = s.current
		s.mu.Unlock()
		if tok == "" {
			return &toolError{Code: "authentication_required", Message: "no session: this tool needs an authenticated agent",
				Hint: "call authenticate with your agent_id and passkey first"}
		}
	}
	se, err := s.store.Session(tok)
	if err != nil {
		return err
	}
	// A token is bound to its holder: the server that opened the session (for a spawned
	// agent, the server the spawn ticket was given to). A token copied to another process
	// is refused there. The pid in the session file alone is no proof (it can be edited,
	// and two servers in separate pid namespaces share one): the session must also be one
	// this server opened, which only its memory knows.
	s.mu.Lock()
	_, mine := s.ownedAs[se.ID]
	s.mu.Unlock()
	if se.PID != s.pid || !mine {
		return &toolError{Code: "invalid_session", Message: "this session_token belongs to another process's session",
			Hint: "omit session_token to use this process's session, or call authenticate here"}
	}
	a, err := s.store.Member(se.AgentID)
	if err != nil {
		return err
	}
	p, err := s.store.ProjectView()
	if err != nil {
		return err
	}
	if err := s.store.Touch(se, p.Settings.Lease()); err != nil {
		s.log("renew lease of %s: %v", se.ID, err)
	}
	c.session, c.agent, c.project, c.tok = se, a, p, tok
	return nil
}

// permits checks a session against a permission level.
func permits(p Perm, se *filestore.Session, a *filestore.Agent) error {
	switch p {
	case TaskOnly:
		if se.Purpose != filestore.PurposeTask {
			return &toolError{Code: "task_session_required", Message: "this tool is only available in a task session (this session's purpose is " + se.Purpose + ")",
				Hint: "ask your task session to do it: from a chat session, use notify_task_session"}
		}
	case ChatOnly:
		if se.Purpose != filestore.PurposeChat {
			return &toolError{Code: "chat_session_required", Message: "this tool is only available in a chat session (this session's purpose is " + se.Purpose + ")",
				Hint: "task sessions do not talk directly: use delegate_to_chat_session to have your chat session do it"}
		}
	case ManagerOnly:
		if !a.IsManager() {
			return &toolError{Code: "unauthorized", Message: "this tool requires a manager; agent " + a.ID + " is a " + a.Hierarchy,
				Hint: "ask your manager to do it"}
		}
	}
	return nil
}

// toolError is an error the agent sees as {"error","message","hint"}.
type toolError struct {
	Code    string
	Message string
	Hint    string
	// Extra fields merged into the error object (e.g. action/instruction for authenticate).
	Extra map[string]any
}

func (e *toolError) Error() string { return e.Message }

// asToolError is the one mapping from store errors to agent-facing errors.
func asToolError(err error) *toolError {
	var te *toolError
	var fe *filestore.Error
	var ce *filestore.CorruptError
	switch {
	case errors.As(err, &te):
		return te
	case errors.As(err, &fe):
		return &toolError{Code: fe.Code, Message: fe.Message, Hint: fe.Hint, Extra: fe.Fields}
	case errors.As(err, &ce):
		return &toolError{Code: "corrupt_file", Message: ce.Error(),
			Hint: "a file under .ai-pm is broken (perhaps a hand edit); ask the owner to run `aipm doctor` and fix it"}
	case errors.Is(err, context.Canceled):
		return &toolError{Code: "cancelled", Message: "the call was cancelled", Hint: "call again if still needed"}
	}
	return &toolError{Code: "internal_error", Message: err.Error(), Hint: "retry once; if it fails again, report it to the project owner"}
}

func (c *call) errorResult(err error) *mcp.CallToolResult {
	te := asToolError(err)
	// Errors are made in English wherever they come from; the agent reads them in the
	// project's language.
	lang := c.lang()
	obj := map[string]any{"error": te.Code, "message": msg.Message(lang, te.Code, te.Message), "hint": msg.Hint(lang, te.Code, te.Hint)}
	for k, v := range te.Extra {
		obj[k] = v
	}
	if c.failure {
		obj["success"] = false
	}
	keys := []string{"error", "message", "hint"}
	if _, ok := obj["success"]; ok {
		keys = append([]string{"success"}, keys...) // seed 000: {"success": false, "error", "message"}
	}
	var rest []string
	for k := range te.Extra {
		if k != "success" {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	body := orderedJSON(obj, append(keys, rest...))
	res := mcp.NewToolResultError(c.withNotification(body))
	return res
}

func (c *call) result(v any) *mcp.CallToolResult {
	b := encodeBufs.Get().(*bytes.Buffer)
	defer func() {
		if b.Cap() <= maxPooledResult { // a rare large answer is not held on to
			encodeBufs.Put(b)
		}
	}()
	b.Reset()
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return c.errorResult(fmt.Errorf("encode result: %w", err))
	}
	return mcp.NewToolResultText(c.withNotification(bytes.TrimSuffix(b.Bytes(), []byte("\n"))))
}

// encodeBufs are the buffers results are encoded in before they become the answer's text:
// an answer of a few kilobytes grew a new buffer several times on every call.
var encodeBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledResult = 64 << 10

// withNotification adds the notification field (seed 004) to a JSON object for an
// authenticated caller, and _chat_notification when the agent's chat session left word
// for this task session (seed 000).
// It returns the answer's text: body is not kept.
func (c *call) withNotification(body []byte) string {
	if c.session == nil || len(body) < 2 || body[len(body)-1] != '}' {
		return string(body)
	}
	sum := c.summary()
	note, _ := marshal(c.notificationSentence(sum.Unread))
	var chat []byte
	if n := sum.ChatNotice; n != nil {
		chat, _ = marshal(chatNotification{ConversationID: n.ConversationID, Message: n.Message, Instruction: n.Instruction,
			From: "self_chat_session", RelatedTaskID: n.TaskID})
	}
	var out strings.Builder
	out.Grow(len(body) + len(note) + len(chat) + 40)
	out.Write(body[:len(body)-1])
	if len(body) > 2 {
		out.WriteByte(',')
	}
	out.WriteString(`"notification":`)
	out.Write(note)
	if chat != nil {
		out.WriteString(`,"_chat_notification":`)
		out.Write(chat)
	}
	out.WriteByte('}')
	return out.String()
}

// chatNotification is the _chat_notification field (seed 000).
type chatNotification struct {
	ConversationID string `json:"conversation_id,omitempty"`
	Message        string `json:"message"`
	Instruction    string `json:"instruction"`
	From           string `json:"from"`
	RelatedTaskID  string `json:"related_task_id,omitempty"`
}

// summary is the session's unread notifications, read once per response. A failure to
// read them must not fail the tool: it is logged and counts as none.
func (c *call) summary() filestore.NotificationSummary {
	if c.sum != nil {
		return *c.sum
	}
	sum, err := c.srv.store.NotificationSummary(c.session)
	if err != nil {
		c.srv.log("notifications of %s: %v", c.session.ID, err)
	}
	c.sum = &sum
	return sum
}

// notificationSentence is the sentence of seed 004 telling the agent whether notifications
// wait (in Japanese word for word as the seed gives it).
func (c *call) notificationSentence(unread int) string {
	if unread == 0 {
		return c.text("notification.none")
	}
	return c.text("notification.unread", unread)
}

// changesTask are the tools by which a task session changes tasks or starts work for its
// task. A session whose task is no longer its agent's may call none of them; it may end
// with report_completed, which then leaves the task alone (seed 004's interrupt flow).
var changesTask = map[string]bool{"get_my_task": true, "create_task": true, "create_tasks_batch": true, "split_task": true,
	"update_task_status": true, "update_task_dependencies": true, "assign_task": true, "select_action": true, "delegate_to_chat_session": true, "dispatch_subtasks": true,
	"approve_task_request": true, "reject_task_request": true}

// taskStillMine refuses a task session whose task was reassigned to someone else or
// cancelled while it ran: whatever it would change now belongs to another session, or to
// nobody. Its only way on is logout.
func (c *call) taskStillMine() error {
	t, err := c.srv.store.Task(c.session.TaskID)
	if err != nil {
		return err
	}
	switch {
	case t.AssigneeID != c.session.AgentID:
		return &toolError{Code: "task_reassigned",
			Message: fmt.Sprintf("task %s is now assigned to %s, not to you: this session may not change it any more", t.ID, orAssignee(c.lang(), t.AssigneeID)),
			Hint:    "call logout and exit; change nothing (its new assignee gets its own session)"}
	case t.Status == filestore.StatusCancelled:
		return &toolError{Code: "task_cancelled",
			Message: fmt.Sprintf("task %s was cancelled by %s: this session may not change it any more", t.ID, t.StatusChangedBy),
			Hint:    "call logout and exit"}
	}
	return nil
}

// successOnError are the tools of seed 000's chat → task operations, whose errors carry
// "success": false beside the error code, as their successes carry "success": true
// (authenticate's errors carry it too).
var successOnError = map[string]bool{"start_task_from_chat": true, "update_task_from_chat": true, "notify_task_session": true}

// interruptExempt are the tools an interrupted agent still needs: reading the
// notifications, and leaving.
var interruptExempt = map[string]bool{"get_notifications": true, "logout": true, "authenticate": true, "help": true}

// interrupted is the notice that replaces a tool's result while an interrupt for this
// session is unread (seed 004), or nil.
func (c *call) interrupted() *mcp.CallToolResult {
	if !c.hasInterrupt() {
		return nil
	}
	notice := c.text("interrupt.notice")
	body, _ := marshal(struct {
		Interrupted bool   `json:"interrupted"`
		Action      string `json:"action"`
		Message     string `json:"message"`
	}{true, "get_notifications", notice})
	return mcp.NewToolResultText(c.withNotification(body))
}

// hasInterrupt reports whether an interrupt for this session is unread, counting changes
// the watcher may not have turned into notifications yet.
func (c *call) hasInterrupt() bool {
	// Changes the watcher has not turned into notifications yet count too: a call made
	// right after the owner blocked the task is interrupted, whatever the timing.
	if c.session.Purpose == filestore.PurposeTask {
		if err := c.srv.deriveFor(c.session); err != nil {
			c.srv.log("notifications for %s: %v", c.session.ID, err)
		}
	}
	c.srv.notePause()
	c.sum = nil // fresh: the interrupt may have arrived during the call
	return c.summary().Interrupts > 0
}

// orderedJSON encodes a flat object with keys in the given order.
func orderedJSON(obj map[string]any, keys []string) []byte {
	buf := []byte{'{'}
	for i, k := range keys {
		if i > 0 {
			buf = append(buf, ',')
		}
		kb, _ := json.Marshal(k)
		vb, err := marshal(obj[k])
		if err != nil {
			vb = []byte(`null`)
		}
		buf = append(append(append(buf, kb...), ':'), vb...)
	}
	return append(buf, '}')
}

// marshal is compact JSON without HTML escaping: agents read "<id>" and "a → b", not
// "\u003cid\u003e".
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
