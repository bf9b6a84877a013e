// The model script command: a scripted model on 127.0.0.1 for the real agent CLIs.
//
// Scenarios in testdata/e2e start a real agent CLI (Claude Code,
// Codex, Gemini CLI) through `aipm run` and point it at this server instead of a hosted
// model. The server speaks the API each CLI calls — Anthropic Messages (streaming or
// not), the OpenAI Responses API (streaming), the Gemini API (generateContent and
// streamGenerateContent) — and plays a worker from the tool results it is sent, the
// way a model would: authenticate with no passkey, get_next_action, and on through the
// worker flow; the step's file is written with the CLI's own file-writing tool.
//
//	model start [-file NAME] [-content TEXT]
//		Start the server and set ANTHROPIC_BASE_URL, OPENAI_BASE_URL,
//		GOOGLE_GEMINI_BASE_URL and MODEL_URL for the rest of the script. The
//		worker writes NAME (default hello.txt) under $WORK with TEXT (default
//		"hello from the scripted model").
//	model report
//		Print what the model saw: one line per request that listed tools
//		("request N API AGENT/PURPOSE: T tools, A aipm tools, B bytes of aipm
//		tool schemas -> STEP", the agent and purpose read from aipm's prompt;
//		B is the compact JSON of the aipm tools as the client sent them, with
//		"(L loaded)" when Claude Code deferred some, and "(X without the
//		client's own parameters)" when it added some, as Gemini CLI does),
//		then for each AGENT/PURPOSE and in all the largest B of a request.
//		Every request body is in $WORK/model/requests.jsonl.
//	model stop
//		Stop the server.
//
// A request without tools (a client's side request: a title, Gemini CLI's model router)
// is answered with "OK", or with an object of the schema it asks for. The agent's steps:
// authenticate → get_next_action, then by its action: get_task → get_my_task,
// create_subtasks → create_tasks_batch (one sub-task; a manager's, two), start_subtask →
// update_task_status in_progress, execute_subtask or work → the file (Claude Code's Write,
// Gemini CLI's write_file, Codex's apply_patch or exec_command) and update_task_status done
// or report_completed, dispatch_task → the call it spells out (dispatch_subtasks),
// report_completion or completion_check → report_completed, wait → get_next_action; a chat
// session's get_pending_messages → get_pending_messages, then respond_chat. After
// an aipm step whose result carries next_action, that is the next action; otherwise
// get_next_action again. A tool error, an unknown action or a stuck flow (60 requests of one agent and purpose) ends the turn
// with text saying so. Claude Code's deferred tools are loaded first with its ToolSearch.
//
// The server answers only on the loopback interface and stops with the script.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"
)

// scriptedModel is one server and what it has seen.
type scriptedModel struct {
	srv     *http.Server
	ln      net.Listener
	dir     string
	file    string // the file the worker writes, absolute
	content string
	// inWorkdir: the worker writes file's name in the directory its prompt names.
	inWorkdir bool

	mu    sync.Mutex
	n     int
	lines []string
	max   int
	maxBy map[string]int // by agent/purpose
	nBy   map[string]int // requests by agent/purpose
	reqs  *os.File
}

func cmdModel(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: model start|report|stop")
	}
	st, _ := ts.Value(modelHolderKey{}).(*modelHolder)
	if st == nil {
		ts.Fatalf("model: no state for this script: Params.Setup must call setupModel")
	}
	m := st.m
	switch args[0] {
	case "start":
		if m != nil {
			ts.Fatalf("model: already started")
		}
		file, content, inWorkdir := "hello.txt", "hello from the scripted model", false
		for i := 1; i < len(args); i++ {
			switch {
			case args[i] == "-file" && i+1 < len(args):
				file = args[i+1]
				i++
			case args[i] == "-content" && i+1 < len(args):
				content = args[i+1]
				i++
			case args[i] == "-in-workdir":
				inWorkdir = true
			default:
				ts.Fatalf("model start: unknown argument %q", args[i])
			}
		}
		dir := ts.MkAbs("model")
		ts.Check(os.MkdirAll(dir, 0o755))
		reqs, err := os.Create(filepath.Join(dir, "requests.jsonl"))
		ts.Check(err)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		ts.Check(err)
		m = &scriptedModel{ln: ln, dir: dir, file: ts.MkAbs(file), content: content, inWorkdir: inWorkdir, reqs: reqs}
		m.srv = &http.Server{Handler: m}
		go m.srv.Serve(ln)
		ts.Defer(m.close)
		st.m = m
		url := "http://" + ln.Addr().String()
		ts.Setenv("MODEL_URL", url)
		ts.Setenv("ANTHROPIC_BASE_URL", url)
		ts.Setenv("OPENAI_BASE_URL", url+"/v1")
		ts.Setenv("GOOGLE_GEMINI_BASE_URL", url)
		ts.Logf("scripted model on %s", url)
	case "report":
		if m == nil {
			ts.Fatalf("model report: not started")
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, l := range m.lines {
			fmt.Fprintln(ts.Stdout(), l)
		}
		whos := make([]string, 0, len(m.maxBy))
		for w := range m.maxBy {
			whos = append(whos, w)
		}
		sort.Strings(whos)
		for _, w := range whos {
			fmt.Fprintf(ts.Stdout(), "%s: at most %d bytes of aipm tool schemas in one request\n", w, m.maxBy[w])
		}
		fmt.Fprintf(ts.Stdout(), "requests %d; at most %d bytes of aipm tool schemas in one request\n", m.n, m.max)
	case "stop":
		if m != nil {
			m.close()
		}
	default:
		ts.Fatalf("model: unknown verb %q", args[0])
	}
}

type modelHolderKey struct{}

type modelHolder struct{ m *scriptedModel }

func setupModel(env *testscript.Env) {
	env.Values[modelHolderKey{}] = &modelHolder{}
}

func (m *scriptedModel) close() {
	if m.srv != nil {
		m.srv.Close()
	}
	m.mu.Lock()
	if m.reqs != nil {
		m.reqs.Close()
		m.reqs = nil
	}
	m.mu.Unlock()
}

// smTool is one tool a request lists: its name and its definition as sent.
type smTool struct {
	Name string
	Raw  json.RawMessage
	// Namespace and Short: Codex groups an MCP server's tools in one namespace tool
	// (mcp__aipm); Name is then Namespace__Short, and a call names both.
	Namespace, Short string
}

// smCall is one tool call of the conversation so far, with its result.
type smCall struct {
	ID     string
	Name   string
	Args   map[string]any
	Result string // the result as text (JSON of whatever the client sent)
}

// smConv is a request reduced to what the worker policy reads.
type smConv struct {
	Tools []smTool
	Calls []smCall
	Text  string // every text of the request (system, user), for the agent id
	// Loaded are the deferred tools the client has loaded (Claude Code's ToolSearch
	// answers with tool_reference blocks; until then a deferred tool is a name only).
	Loaded map[string]bool
}

// visible reports whether the model sees the tool's schema: it is not deferred, or it
// was loaded.
func (c smConv) visible(t smTool) bool {
	return !strings.Contains(string(t.Raw), `"defer_loading":true`) || c.Loaded[t.Name]
}

// smStep is the model's answer: one tool call, or text that ends the turn.
type smStep struct {
	Tool string
	Args map[string]any
	Text string
}

func (s smStep) String() string {
	if s.Tool == "" {
		return "text " + strings.ReplaceAll(s.Text, "\n", " ")
	}
	a, _ := json.Marshal(s.Args)
	if len(a) > 120 {
		a = append(a[:117], "..."...)
	}
	return s.Tool + " " + string(a)
}

func (m *scriptedModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	m.mu.Lock()
	if m.reqs != nil {
		line, _ := json.Marshal(map[string]any{"method": r.Method, "path": r.URL.Path, "query": r.URL.RawQuery, "body": string(body)})
		m.reqs.Write(append(line, '\n'))
	}
	m.mu.Unlock()
	p := r.URL.Path
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/messages") && !strings.Contains(p, "count_tokens"):
		m.anthropic(w, body)
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/count_tokens"):
		writeJSON(w, map[string]any{"input_tokens": 100})
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/responses"):
		m.openai(w, body)
	case r.Method == http.MethodPost && strings.Contains(p, ":streamGenerateContent"):
		m.gemini(w, body, true)
	case r.Method == http.MethodPost && strings.Contains(p, ":generateContent"):
		m.gemini(w, body, false)
	case r.Method == http.MethodPost && strings.Contains(p, ":countTokens"):
		writeJSON(w, map[string]any{"totalTokens": 100})
	case strings.HasSuffix(p, "/models"):
		writeJSON(w, map[string]any{"data": []any{}, "models": []any{}})
	default:
		http.Error(w, "the scripted model does not serve "+r.Method+" "+p, http.StatusNotFound)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// decide runs the worker policy on a request and notes what it saw.
func (m *scriptedModel) decide(api string, c smConv) smStep {
	var step smStep
	who := "?"
	if ma := smAgentRe.FindStringSubmatch(c.Text); ma != nil {
		who = ma[1]
	}
	if ma := smPurposeRe.FindStringSubmatch(c.Text); ma != nil {
		who += "/" + ma[1]
	}
	m.mu.Lock()
	runaway := m.nBy[who] >= smMaxRequests
	if m.nBy == nil {
		m.nBy = map[string]int{}
	}
	m.nBy[who]++
	m.mu.Unlock()
	switch {
	case len(c.Tools) == 0:
		step = smStep{Text: "OK"} // a side request (a title, a summary): no tools to call
	case runaway:
		step = smStep{Text: fmt.Sprintf("stopping: %d requests, the flow is stuck", smMaxRequests)}
	default:
		step = m.policy(c)
	}
	if len(c.Tools) > 0 {
		n, sent, seen, own := 0, 0, 0, 0
		for _, t := range c.Tools {
			if smIsAipm(t.Name) {
				n++
				var buf bytes.Buffer
				if json.Compact(&buf, t.Raw) != nil {
					buf.Write(t.Raw)
				}
				sent += buf.Len()
				if c.visible(t) {
					seen += buf.Len()
				}
				own += smClientParams(t.Raw)
			}
		}
		m.mu.Lock()
		m.n++
		m.max = max(m.max, sent)
		if m.maxBy == nil {
			m.maxBy = map[string]int{}
		}
		m.maxBy[who] = max(m.maxBy[who], sent)
		extra := ""
		if seen != sent {
			extra = fmt.Sprintf(" (%d loaded)", seen)
		}
		if own > 0 {
			extra += fmt.Sprintf(" (%d without the client's own parameters)", sent-own)
		}
		m.lines = append(m.lines, fmt.Sprintf("request %d %s %s: %d tools, %d aipm tools, %d bytes of aipm tool schemas%s -> %s",
			m.n, api, who, len(c.Tools), n, sent, extra, step))
		m.mu.Unlock()
	}
	return step
}

// smIsAipm tells an aipm tool by its name as the client exposes it.
func smIsAipm(name string) bool {
	return strings.Contains(name, "aipm")
}

// smBase is the aipm tool name inside a client's tool name (mcp__aipm__get_task →
// get_task), or "" for the client's own tools.
func smBase(name string) string {
	if !smIsAipm(name) {
		return ""
	}
	i := strings.LastIndex(name, "aipm")
	return strings.TrimLeft(name[i+len("aipm"):], "_-.")
}

// smMaxRequests bounds the requests of one agent and purpose: a flow that loops ends with
// text.
const smMaxRequests = 60

var (
	smAgentRe   = regexp.MustCompile(`You are agent (\S+) \(`)
	smPurposeRe = regexp.MustCompile(`started for a (\w+) session`)
)

// smClientParams is the size of the parameters a client adds to every tool of its own
// (Gemini CLI's wait_for_previous), as they appear in the tool's JSON.
func smClientParams(raw json.RawMessage) int {
	var t map[string]any
	if json.Unmarshal(raw, &t) != nil {
		return 0
	}
	for _, k := range []string{"parametersJsonSchema", "parameters", "input_schema"} {
		if sch, ok := t[k].(map[string]any); ok {
			if props, ok := sch["properties"].(map[string]any); ok {
				if p, ok := props["wait_for_previous"]; ok {
					b, _ := json.Marshal(map[string]any{"wait_for_previous": p})
					return len(b) - 1 // the property and its comma
				}
			}
		}
	}
	return 0
}

// policy is the worker: the next step from the calls made and the results seen.
func (m *scriptedModel) policy(c smConv) smStep {
	tool := func(base string, args map[string]any) smStep {
		for _, t := range c.Tools {
			if smBase(t.Name) == base && c.visible(t) {
				return smStep{Tool: t.Name, Args: args}
			}
		}
		// Claude Code defers MCP tools behind its ToolSearch tool: load the one needed.
		for _, t := range c.Tools {
			if t.Name == "ToolSearch" && strings.Contains(c.Text, "mcp__aipm__"+base) {
				return smStep{Tool: t.Name, Args: map[string]any{"query": "select:mcp__aipm__" + base, "max_results": 5}}
			}
		}
		return smStep{Text: "the aipm tool " + base + " is not listed"}
	}
	// Loading tools is no step of the worker's flow.
	c.Calls = slices.DeleteFunc(slices.Clone(c.Calls), func(k smCall) bool { return k.Name == "ToolSearch" })
	if len(c.Calls) == 0 {
		ma := smAgentRe.FindStringSubmatch(c.Text)
		if ma == nil {
			return smStep{Text: "the prompt names no agent"}
		}
		return tool("authenticate", map[string]any{"agent_id": ma[1]})
	}
	last := c.Calls[len(c.Calls)-1]
	base := smBase(last.Name)
	res := smFind(last.Result, "")
	if e, ok := res["error"].(string); ok && base != "" {
		return smStep{Text: "stopping: " + base + " failed with " + e + ": " + fmt.Sprint(res["message"])}
	}
	// the last instruction: get_next_action's answer, or the next_action a step's result
	// carried (what get_next_action would answer then)
	var next map[string]any
	followed := false
	for i := len(c.Calls) - 1; i >= 0; i-- {
		if smBase(c.Calls[i].Name) == "get_next_action" {
			next = smFind(c.Calls[i].Result, "action")
			break
		}
		if o := smFind(c.Calls[i].Result, "next_action"); o != nil {
			if n, ok := o["next_action"].(map[string]any); ok {
				next, followed = n, i == len(c.Calls)-1
				break
			}
		}
	}
	id := func(key string) string {
		if o, ok := next[key].(map[string]any); ok {
			s, _ := o["id"].(string)
			return s
		}
		return ""
	}
	if followed {
		base = "get_next_action" // the step's result said what comes next: no call to ask
	}
	switch base {
	case "get_next_action":
		switch action, _ := next["action"].(string); action {
		case "get_task":
			return tool("get_my_task", map[string]any{})
		case "create_subtasks":
			tasks := []any{map[string]any{"local_id": "a", "title": "Write " + filepath.Base(m.file)}}
			if ins, _ := next["instruction"].(string); strings.HasPrefix(ins, "You manage this task") {
				// a manager: a piece for each of two workers
				tasks = []any{map[string]any{"local_id": "a", "title": "Write " + filepath.Base(m.file) + " (first)"},
					map[string]any{"local_id": "b", "title": "Write " + filepath.Base(m.file) + " (second)"}}
			}
			return tool("create_tasks_batch", map[string]any{"tasks": tasks})
		case "start_subtask":
			return tool("update_task_status", map[string]any{"task_id": id("next_subtask"), "status": "in_progress"})
		case "execute_subtask", "work":
			return m.writeFile(c)
		case "dispatch_task":
			// the call the answer spells out, as it stands
			call, _ := next["call"].(map[string]any)
			name, _ := call["tool"].(string)
			args, _ := call["arguments"].(map[string]any)
			if name == "" {
				return smStep{Text: "stopping: dispatch_task without a call"}
			}
			return tool(name, args)
		case "report_completion", "completion_check":
			return tool("report_completed", map[string]any{"result": "success", "summary": "wrote " + filepath.Base(m.file)})
		case "wait", "wait_for_delegation":
			return tool("get_next_action", map[string]any{})
		case "get_pending_messages": // a chat session
			return tool("get_pending_messages", map[string]any{})
		case "exit":
			return smStep{Text: "Done: get_next_action says exit."}
		default:
			return smStep{Text: fmt.Sprintf("stopping: unexpected action %q", action)}
		}
	case "report_completed":
		return smStep{Text: "Done: the task is reported."}
	case "get_pending_messages":
		return tool("respond_chat", map[string]any{"content": "Working on it."})
	case "respond_chat":
		return smStep{Text: "Done: the message is answered."}
	case "":
		// the client's own tool: the file is written
		if next["action"] == "execute_subtask" {
			return tool("update_task_status", map[string]any{"task_id": id("current_subtask"), "status": "done"})
		}
		return tool("report_completed", map[string]any{"result": "success", "summary": "wrote " + filepath.Base(m.file)})
	default:
		return tool("get_next_action", map[string]any{})
	}
}

// workRe finds the directory aipm's prompt tells an agent to work in.
var workRe = regexp.MustCompile(`Work in (\S+) using absolute paths`)

// target is the file the model writes: -file as given, or, with -in-workdir, that name
// in the directory the agent's prompt names (a task's own worktree), as a model that
// follows the prompt would.
func (m *scriptedModel) target(c smConv) string {
	if !m.inWorkdir {
		return m.file
	}
	if sub := workRe.FindStringSubmatch(c.Text); sub != nil {
		return filepath.Join(sub[1], filepath.Base(m.file))
	}
	return m.file
}

// writeFile is the call of the client's own file-writing tool.
func (m *scriptedModel) writeFile(c smConv) smStep {
	file := m.target(c)
	names := map[string]bool{}
	for _, t := range c.Tools {
		names[t.Name] = true
	}
	switch {
	case names["Write"]: // Claude Code
		return smStep{Tool: "Write", Args: map[string]any{"file_path": file, "content": m.content + "\n"}}
	case names["write_file"]: // Gemini CLI
		return smStep{Tool: "write_file", Args: map[string]any{"file_path": file, "content": m.content + "\n"}}
	case names["apply_patch"]: // Codex
		patch := "*** Begin Patch\n*** Add File: " + m.file + "\n+" + m.content + "\n*** End Patch\n"
		return smStep{Tool: "apply_patch", Args: map[string]any{"input": patch}}
	case names["shell"], names["exec_command"]:
		name := "shell"
		if names["exec_command"] {
			name = "exec_command"
		}
		cmd := fmt.Sprintf("printf '%%s\\n' '%s' > '%s'", m.content, file)
		if name == "shell" {
			return smStep{Tool: name, Args: map[string]any{"command": []any{"bash", "-lc", cmd}}}
		}
		return smStep{Tool: name, Args: map[string]any{"cmd": cmd}}
	}
	all := make([]string, 0, len(names))
	for n := range names {
		all = append(all, n)
	}
	sort.Strings(all)
	return smStep{Text: "no file-writing tool among " + strings.Join(all, ", ")}
}

// smFind is the first JSON object in a result that has key (any object when key is ""),
// looking through nested objects, arrays, and strings that hold JSON.
func smFind(text, key string) map[string]any {
	var v any
	if json.Unmarshal([]byte(text), &v) != nil {
		return nil
	}
	return smFindIn(v, key, 0)
}

func smFindIn(v any, key string, depth int) map[string]any {
	if depth > 8 {
		return nil
	}
	switch v := v.(type) {
	case map[string]any:
		if _, ok := v[key]; ok || key == "" && (v["error"] != nil || v["action"] != nil || v["session_token"] != nil) {
			return v
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if o := smFindIn(v[k], key, depth+1); o != nil {
				return o
			}
		}
	case []any:
		for _, e := range v {
			if o := smFindIn(e, key, depth+1); o != nil {
				return o
			}
		}
	case string:
		// JSON in a string, possibly wrapped (Gemini CLI: <untrusted_context>…</untrusted_context>)
		i, j := strings.IndexByte(v, '{'), strings.LastIndexByte(v, '}')
		if i >= 0 && j > i {
			return smFind(v[i:j+1], key)
		}
	}
	return nil
}

// --- Anthropic Messages ----------------------------------------------------------------

func (m *scriptedModel) anthropic(w http.ResponseWriter, body []byte) {
	var req struct {
		Model    string            `json:"model"`
		Stream   bool              `json:"stream"`
		System   json.RawMessage   `json:"system"`
		Tools    []json.RawMessage `json:"tools"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c := smConv{Text: string(req.System), Loaded: map[string]bool{}}
	for _, raw := range req.Tools {
		var t struct {
			Name string `json:"name"`
		}
		json.Unmarshal(raw, &t)
		c.Tools = append(c.Tools, smTool{Name: t.Name, Raw: raw})
	}
	byID := map[string]int{}
	for _, msg := range req.Messages {
		var s string
		if json.Unmarshal(msg.Content, &s) == nil {
			c.Text += "\n" + s
			continue
		}
		var blocks []struct {
			Type      string          `json:"type"`
			Text      string          `json:"text"`
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Input     map[string]any  `json:"input"`
			ToolUseID string          `json:"tool_use_id"`
			Content   json.RawMessage `json:"content"`
		}
		json.Unmarshal(msg.Content, &blocks)
		for _, b := range blocks {
			switch b.Type {
			case "text":
				c.Text += "\n" + b.Text
			case "tool_use":
				byID[b.ID] = len(c.Calls)
				c.Calls = append(c.Calls, smCall{ID: b.ID, Name: b.Name, Args: b.Input})
			case "tool_result":
				if i, ok := byID[b.ToolUseID]; ok {
					c.Calls[i].Result = smText(b.Content)
				}
				var refs []struct {
					Type     string `json:"type"`
					ToolName string `json:"tool_name"`
				}
				json.Unmarshal(b.Content, &refs)
				for _, r := range refs {
					if r.Type == "tool_reference" {
						c.Loaded[r.ToolName] = true
					}
				}
			}
		}
	}
	step := m.decide("anthropic", c)
	m.mu.Lock()
	id := fmt.Sprintf("%d", m.n)
	m.mu.Unlock()
	var block map[string]any
	stop := "end_turn"
	if step.Tool != "" {
		block = map[string]any{"type": "tool_use", "id": "toolu_" + id, "name": step.Tool, "input": step.Args}
		stop = "tool_use"
	} else {
		block = map[string]any{"type": "text", "text": step.Text}
	}
	model := req.Model
	usage := map[string]any{"input_tokens": 100, "output_tokens": 10}
	if !req.Stream {
		writeJSON(w, map[string]any{"id": "msg_" + id, "type": "message", "role": "assistant", "model": model,
			"content": []any{block}, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
		return
	}
	sse := newSSE(w)
	sse.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_" + id, "type": "message",
		"role": "assistant", "model": model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 100, "output_tokens": 1}}})
	if step.Tool != "" {
		args, _ := json.Marshal(step.Args)
		sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": "toolu_" + id, "name": step.Tool, "input": map[string]any{}}})
		sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": string(args)}})
	} else {
		sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": step.Text}})
	}
	sse.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	sse.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 10}})
	sse.event("message_stop", map[string]any{"type": "message_stop"})
}

// smText is a tool result's content as text: a string as is, anything else as its JSON.
func smText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

type sseWriter struct {
	w *bufio.Writer
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sseWriter {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sseWriter{w: bufio.NewWriter(w), f: f}
}

// event writes one server-sent event; name "" writes a data-only event.
func (s *sseWriter) event(name string, v any) {
	data, _ := json.Marshal(v)
	if name != "" {
		fmt.Fprintf(s.w, "event: %s\n", name)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", data)
	s.w.Flush()
	if s.f != nil {
		s.f.Flush()
	}
}

// --- OpenAI Responses ------------------------------------------------------------------

func (m *scriptedModel) openai(w http.ResponseWriter, body []byte) {
	var req struct {
		Model        string            `json:"model"`
		Instructions string            `json:"instructions"`
		Tools        []json.RawMessage `json:"tools"`
		Input        []json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c := smConv{Text: req.Instructions}
	for _, raw := range req.Tools {
		var t struct {
			Type  string            `json:"type"`
			Name  string            `json:"name"`
			Tools []json.RawMessage `json:"tools"`
		}
		json.Unmarshal(raw, &t)
		if t.Type == "namespace" {
			for _, sub := range t.Tools {
				var st struct {
					Name string `json:"name"`
				}
				json.Unmarshal(sub, &st)
				c.Tools = append(c.Tools, smTool{Name: t.Name + "__" + st.Name, Raw: sub, Namespace: t.Name, Short: st.Name})
			}
			continue
		}
		name := t.Name
		if name == "" {
			name = t.Type
		}
		c.Tools = append(c.Tools, smTool{Name: name, Raw: raw})
	}
	byID := map[string]int{}
	for _, raw := range req.Input {
		var it struct {
			Type      string          `json:"type"`
			Role      string          `json:"role"`
			Content   json.RawMessage `json:"content"`
			Name      string          `json:"name"`
			Namespace string          `json:"namespace"`
			Arguments string          `json:"arguments"`
			Input     string          `json:"input"`
			CallID    string          `json:"call_id"`
			Output    json.RawMessage `json:"output"`
		}
		json.Unmarshal(raw, &it)
		switch it.Type {
		case "message", "":
			c.Text += "\n" + string(it.Content)
		case "function_call", "custom_tool_call":
			var args map[string]any
			json.Unmarshal([]byte(it.Arguments), &args)
			name := it.Name
			if it.Namespace != "" {
				name = it.Namespace + "__" + it.Name
			}
			byID[it.CallID] = len(c.Calls)
			c.Calls = append(c.Calls, smCall{ID: it.CallID, Name: name, Args: args})
		case "function_call_output", "custom_tool_call_output":
			if i, ok := byID[it.CallID]; ok {
				c.Calls[i].Result = smText(it.Output)
			}
		}
	}
	step := m.decide("openai", c)
	m.mu.Lock()
	id := fmt.Sprintf("%d", m.n)
	m.mu.Unlock()
	var item map[string]any
	if step.Tool != "" {
		custom, ns, name := false, "", step.Tool
		for _, t := range c.Tools {
			if t.Name == step.Tool {
				custom = strings.Contains(string(t.Raw), `"type":"custom"`)
				if t.Namespace != "" {
					ns, name = t.Namespace, t.Short
				}
			}
		}
		if custom {
			item = map[string]any{"type": "custom_tool_call", "id": "ctc_" + id, "call_id": "call_" + id, "name": step.Tool,
				"input": fmt.Sprint(step.Args["input"]), "status": "completed"}
		} else {
			args, _ := json.Marshal(step.Args)
			item = map[string]any{"type": "function_call", "id": "fc_" + id, "call_id": "call_" + id, "name": name,
				"arguments": string(args), "status": "completed"}
			if ns != "" {
				item["namespace"] = ns
			}
		}
	} else {
		item = map[string]any{"type": "message", "id": "msg_" + id, "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": step.Text, "annotations": []any{}}}}
	}
	resp := map[string]any{"id": "resp_" + id, "object": "response", "status": "completed", "model": req.Model,
		"output": []any{item}, "usage": map[string]any{"input_tokens": 100, "output_tokens": 10, "total_tokens": 110,
			"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}}
	sse := newSSE(w)
	sse.event("response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": "resp_" + id, "status": "in_progress"}})
	sse.event("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": 0, "item": item})
	sse.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	sse.event("response.completed", map[string]any{"type": "response.completed", "response": resp})
}

// --- Gemini ------------------------------------------------------------------------------

func (m *scriptedModel) gemini(w http.ResponseWriter, body []byte, stream bool) {
	var req struct {
		Contents []struct {
			Role  string `json:"role"`
			Parts []struct {
				Text         string `json:"text"`
				FunctionCall *struct {
					ID   string         `json:"id"`
					Name string         `json:"name"`
					Args map[string]any `json:"args"`
				} `json:"functionCall"`
				FunctionResponse *struct {
					ID       string          `json:"id"`
					Name     string          `json:"name"`
					Response json.RawMessage `json:"response"`
				} `json:"functionResponse"`
			} `json:"parts"`
		} `json:"contents"`
		SystemInstruction json.RawMessage `json:"systemInstruction"`
		GenerationConfig  struct {
			ResponseJSONSchema map[string]any `json:"responseJsonSchema"`
			ResponseSchema     map[string]any `json:"responseSchema"`
		} `json:"generationConfig"`
		Tools []struct {
			FunctionDeclarations []json.RawMessage `json:"functionDeclarations"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c := smConv{Text: string(req.SystemInstruction)}
	for _, t := range req.Tools {
		for _, raw := range t.FunctionDeclarations {
			var d struct {
				Name string `json:"name"`
			}
			json.Unmarshal(raw, &d)
			c.Tools = append(c.Tools, smTool{Name: d.Name, Raw: raw})
		}
	}
	for _, ct := range req.Contents {
		for _, p := range ct.Parts {
			switch {
			case p.FunctionCall != nil:
				c.Calls = append(c.Calls, smCall{ID: p.FunctionCall.ID, Name: p.FunctionCall.Name, Args: p.FunctionCall.Args})
			case p.FunctionResponse != nil:
				// responses answer the calls in order; match the last open call of that name
				for i := len(c.Calls) - 1; i >= 0; i-- {
					if c.Calls[i].Name == p.FunctionResponse.Name && c.Calls[i].Result == "" {
						c.Calls[i].Result = string(p.FunctionResponse.Response)
						break
					}
				}
			default:
				c.Text += "\n" + p.Text
			}
		}
	}
	step := m.decide("gemini", c)
	// A side request that wants JSON (Gemini CLI's model router, its next-speaker check)
	// gets an object of the schema's shape.
	schema := req.GenerationConfig.ResponseJSONSchema
	if schema == nil {
		schema = req.GenerationConfig.ResponseSchema
	}
	if schema != nil && len(c.Tools) == 0 {
		out, _ := json.Marshal(smExample(schema))
		step = smStep{Text: string(out)}
	}
	var part map[string]any
	if step.Tool != "" {
		part = map[string]any{"functionCall": map[string]any{"name": step.Tool, "args": step.Args}}
	} else {
		part = map[string]any{"text": step.Text}
	}
	resp := map[string]any{
		"candidates":    []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{part}}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110},
		"modelVersion":  "scripted",
	}
	if !stream {
		writeJSON(w, resp)
		return
	}
	newSSE(w).event("", resp)
}

// agentCLIDir is where the pinned agent CLIs are installed (`make agentclis`):
// $AIPM_AGENT_CLIS, or testdata/agentclis/node_modules/.bin; "" when neither exists.
func agentCLIDir() string {
	dir := os.Getenv("AIPM_AGENT_CLIS")
	if dir == "" {
		dir = filepath.Join("..", "..", "testdata", "agentclis", "node_modules", ".bin")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return ""
	}
	return abs
}

// agentCLICondition is the script condition [agentcli:NAME]: the agent CLI NAME is
// installed. Under CI (CI set) a missing CLI is an error, not a skip: CI installs them.
func agentCLICondition(cond string) (bool, error) {
	name, ok := strings.CutPrefix(cond, "agentcli:")
	if !ok {
		return false, fmt.Errorf("unknown condition %q", cond)
	}
	dir := agentCLIDir()
	if dir != "" {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return true, nil
		}
	}
	if os.Getenv("CI") != "" {
		return false, fmt.Errorf("agent CLI %s is not installed under testdata/agentclis (CI must run `make agentclis` first)", name)
	}
	return false, nil
}

// smExample is a value of a JSON schema's shape: the first enum value, 10 for numbers,
// "ok" for strings, every property of an object.
func smExample(schema map[string]any) any {
	if e, ok := schema["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	switch t, _ := schema["type"].(string); strings.ToLower(t) {
	case "object":
		out := map[string]any{}
		props, _ := schema["properties"].(map[string]any)
		for k, v := range props {
			if ps, ok := v.(map[string]any); ok {
				out[k] = smExample(ps)
			}
		}
		return out
	case "array":
		return []any{}
	case "integer", "number":
		return 10
	case "boolean":
		return false
	}
	return "ok"
}
