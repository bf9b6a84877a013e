package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// A process started by aipm run serves one agent whose model pays for the tool list with
// every request, and Gemini CLI adds a ~260-byte parameter of its own to each tool. So it
// lists a short list instead of every tool the session may call (visibleTools):
//
//   - the core of its purpose (coreTools): the tools of the flow get_next_action leads,
//     those of them its hierarchy may call, and authenticate until a session is open (the
//     ticket opens one: after it has, even once it ended, authenticate is no use);
//   - every tool the latest answer names: an answer that says "call split_task" or
//     spells out {"tool":"assign_task",...} lists that tool for the next request;
//   - every tool help described to the session (help with tool_name), for as long as
//     the connection lasts: the way to any other tool;
//   - every tool the agent's standing instructions name (standingTools): its role and
//     system prompt, and in a task session its task's title and description. A task that
//     says "ask w2 with delegate_to_chat_session" is read once, with get_my_task, and
//     acted on steps later, when that answer's names have made way for the next one's.
//
// Every tool stays callable whether listed or not; help lists and describes them all.
//
// When an answer changes the list, the server sends notifications/tools/list_changed and
// holds the answer until the new list has gone out to the client (written before the
// answer, when Output wraps the transport's writer), at most listWait. Claude Code and
// Gemini CLI read the list again at once; Codex, with its mcp_tool_list_changed feature
// (aipm's template turns it on), only once the answer is in, before its next model
// request: a client that let listWait pass once is not waited for again. A client that
// never reads it again keeps the list it read first: authenticate and the core.
//
// The core does not depend on the answers because Gemini CLI applies a new list late: it
// reads it at once but puts it into its requests only after refreshing its memory files,
// often after the model's next request has gone. The tools a flow needs at every step
// are therefore always listed; an answer's extra tools reach a Gemini CLI model a step
// late at worst, and get_next_action names them again.
//
// A client configured by hand, without a spawn ticket, lists every tool its session may
// call, in full.

// listWait bounds how long an answer that changed the list waits for the client to read
// it again.
var listWait = time.Second

// listing is what a process with a spawn ticket remembers of its short list.
type listing struct {
	named map[string]bool // tools the latest answer named
	asked map[string]bool // tools help described on this connection
	shown string          // the names of the list the client read last, sorted, comma-joined
	read  chan struct{}   // closed (and replaced) when the client reads the list
	// output is set when the transport's writer is wrapped (Output): the list counts as
	// read once the response to tools/list request pending has been written.
	output  bool
	pending []byte // the JSON id of that request
	late    bool   // the client read the list only after the answer, once: no more waits
}

// coreTools are listed to every session of a purpose in a spawned process (a worker's
// task session leaves out dispatch_subtasks, which only a manager may call).
var coreTools = map[string][]string{
	filestore.PurposeTask: {"get_next_action", "help", "get_my_task", "create_tasks_batch", "update_task_status", "dispatch_subtasks", "report_completed"},
	filestore.PurposeChat: {"get_next_action", "help", "get_pending_messages", "respond_chat", "logout"},
}

// toolWord is a word that may be a tool's name.
var toolWord = regexp.MustCompile(`[a-z][a-z_]*[a-z]`)

// namedTools are the tools an answer's text names, among those known.
func (s *Server) namedTools(text string) map[string]bool {
	out := map[string]bool{}
	for _, w := range toolWord.FindAllString(text, -1) {
		if _, ok := s.tools[w]; ok {
			out[w] = true
		}
	}
	return out
}

// standingTools are the tools named by what the agent is told for the whole session,
// rather than by one answer: its role and system prompt (the prompt aipm run starts it
// with states its role), and its task's title and description.
func (s *Server) standingTools(se *filestore.Session, a *filestore.Agent) map[string]bool {
	text := a.Role + "\n" + a.SystemPrompt
	if se.TaskID != "" {
		if t, err := s.store.Task(se.TaskID); err == nil {
			text += "\n" + t.Title + "\n" + t.Description
		}
	}
	return s.namedTools(text)
}

// shortListed reports whether tool name is in the short list of a spawned process now, for
// a session of purpose. authenticated says whether the connection has opened a session.
// s.mu is held.
func (s *Server) shortListed(name, purpose string, authenticated bool) bool {
	if name == "authenticate" {
		return !authenticated // whatever an answer says of it
	}
	if slices.Contains(coreTools[purpose], name) {
		return true
	}
	return s.list.named[name] || s.list.asked[name]
}

// listed wraps a handler, in a process with a spawn ticket, with the short list's upkeep:
// the answer's named tools (or the tool help described) become the list, and a changed
// list is told to the client and read by it before the answer goes out.
func (s *Server) listed(name string, h server.ToolHandlerFunc) server.ToolHandlerFunc {
	if s.ticket == "" {
		return h
	}
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := h(ctx, req)
		if res == nil {
			return res, err
		}
		var named map[string]bool
		if name == "help" {
			// help lists every tool: only the one it described is asked for
			if tn, _ := req.GetArguments()["tool_name"].(string); tn != "" {
				if _, ok := s.tools[tn]; ok {
					s.mu.Lock()
					s.list.asked[tn] = true
					s.mu.Unlock()
				}
			}
		} else {
			var text strings.Builder
			for _, c := range res.Content {
				if tc, ok := c.(mcp.TextContent); ok {
					text.WriteString(tc.Text)
				}
			}
			named = s.namedTools(text.String())
		}
		s.mu.Lock()
		if name != "help" {
			s.list.named = named
		}
		read, late, shown := s.list.read, s.list.late, s.list.shown
		s.mu.Unlock()
		if shown == "" {
			return res, err
		}
		now := s.visibleTools(s.listable())
		if toolNames(now) == shown {
			return res, err
		}
		if nerr := s.mcp.SendNotificationToClient(ctx, mcp.MethodNotificationToolsListChanged, nil); nerr != nil {
			s.log("tell the client its tool list changed: %v", nerr)
			return res, err
		}
		if late {
			return res, err
		}
		select {
		case <-read:
		case <-time.After(listWait):
			s.mu.Lock()
			s.list.late = true
			s.mu.Unlock()
		case <-ctx.Done():
		}
		return res, err
	}
}

// listable is every tool's definition, as tools/list starts from.
func (s *Server) listable() []mcp.Tool {
	out := make([]mcp.Tool, 0, len(s.tools))
	for _, t := range s.tools {
		out = append(out, t.def)
	}
	return out
}

// noteListed records the list a client was given (in answer to request id) and wakes an
// answer waiting for it, now or, with Output, once the list is written.
func (s *Server) noteListed(id any, tools []mcp.Tool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.list.shown = toolNames(tools)
	if s.list.output {
		if b, err := json.Marshal(id); err == nil {
			s.list.pending = b
			return
		}
	}
	s.listRead()
}

// listRead wakes the answers waiting for the client to read its list. s.mu is held.
func (s *Server) listRead() {
	s.list.pending = nil
	close(s.list.read)
	s.list.read = make(chan struct{})
}

// Output wraps the writer the stdio transport writes its messages on, one Write a
// message: an answer waiting for a changed list to reach the client goes out only
// after the list.
func (s *Server) Output(w io.Writer) io.Writer {
	s.mu.Lock()
	s.list.output = true
	s.mu.Unlock()
	return listWriter{s, w}
}

type listWriter struct {
	s *Server
	w io.Writer
}

func (lw listWriter) Write(p []byte) (int, error) {
	n, err := lw.w.Write(p)
	s := lw.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.list.pending == nil {
		return n, err
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(p, &m) == nil && m.Method == "" && bytes.Equal(bytes.TrimSpace(m.ID), s.list.pending) {
		s.listRead()
	}
	return n, err
}

// toolNames is the sorted, comma-joined names of tools.
func toolNames(tools []mcp.Tool) string {
	names := make([]string, 0, len(tools))
	for _, t := range tools {
		names = append(names, t.Name)
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}
