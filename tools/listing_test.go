package tools

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// listClient is an MCP client of a Server that counts the list_changed notices it gets
// and, like Claude Code, Gemini CLI and Codex, reads the list again when told (rereads).
type listClient struct {
	t  *testing.T
	c  *client.Client
	mu sync.Mutex
	n  int // list_changed notices received
}

func newListClient(t *testing.T, s *Server, rereads bool) *listClient {
	t.Helper()
	c, err := client.NewInProcessClient(s.MCP())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	lc := &listClient{t: t, c: c}
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method != mcp.MethodNotificationToolsListChanged {
			return
		}
		lc.mu.Lock()
		lc.n++
		lc.mu.Unlock()
		if rereads {
			go c.ListTools(context.Background(), mcp.ListToolsRequest{})
		}
	})
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "list-test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	return lc
}

// names is the tool list as the client reads it now.
func (lc *listClient) names() []string {
	lc.t.Helper()
	res, err := lc.c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		lc.t.Fatal(err)
	}
	return listedNames(res.Tools)
}

func (lc *listClient) notices() int {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	return lc.n
}

// call calls a tool and returns its result's text.
func (lc *listClient) call(name string, args map[string]any) string {
	lc.t.Helper()
	var req mcp.CallToolRequest
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := lc.c.CallTool(context.Background(), req)
	if err != nil {
		lc.t.Fatalf("%s: %v", name, err)
	}
	return res.Content[0].(mcp.TextContent).Text
}

func spawned(t *testing.T, st *filestore.Store, agent, purpose string) *Server {
	t.Helper()
	_, ticket, err := st.CreateSpawn(filestore.NewSpawn{AgentID: agent, Purpose: purpose, AIType: "gemini"})
	if err != nil {
		t.Fatal(err)
	}
	return New(st, Options{Logf: t.Logf, SpawnTicket: ticket})
}

func hasAll(names []string, want ...string) bool {
	for _, w := range want {
		if !slices.Contains(names, w) {
			return false
		}
	}
	return true
}

// A worker's task session started by aipm run lists a short list that follows its flow:
// authenticate and the core before the session opens; then the core and the tools each
// answer names, told to the client before the answer goes out; help adds the tool it
// describes, for good.
func TestShortListFollowsTheFlow(t *testing.T) {
	_, st := newTestServer(t)
	lc := newListClient(t, spawned(t, st, "w1", filestore.PurposeTask), true)

	core := []string{"create_tasks_batch", "get_my_task", "get_next_action", "help", "report_completed", "update_task_status"}
	if got := lc.names(); !slices.Equal(got, append([]string{"authenticate"}, core...)) {
		t.Fatalf("before authenticate the list is %v, want authenticate and %v", got, core)
	}
	lc.call("authenticate", map[string]any{"agent_id": "w1"})
	if lc.notices() != 1 {
		t.Fatalf("authenticate changed the list with %d list_changed notices before its answer, want 1", lc.notices())
	}
	// authenticate's answer carries the first next_action: its action is get_task, a tool
	// not in the core, which is listed before the answer arrives
	if got, want := lc.names(), append([]string{"get_task"}, core...); !hasAll(got, want...) || len(got) != len(want) {
		t.Errorf("after authenticate the list is %v, want %v", got, want)
	}
	// get_next_action's answer names the same: the list stays, and nothing is told
	ans := lc.call("get_next_action", nil)
	if !strings.Contains(ans, `"get_task"`) {
		t.Fatalf("get_next_action does not name get_task: %s", ans)
	}
	if lc.notices() != 1 {
		t.Errorf("%d list_changed notices after an answer naming the tools already listed, want 1", lc.notices())
	}
	got := lc.names()
	if !hasAll(got, append([]string{"get_task"}, core...)...) {
		t.Errorf("after get_next_action named get_task the list is %v", got)
	}
	for _, not := range []string{"assign_task", "dispatch_subtasks", "send_message", "get_my_profile", "list_tasks", "split_task"} {
		if slices.Contains(got, not) {
			t.Errorf("%s is listed to a worker whose answer did not name it: %v", not, got)
		}
	}
	// an answer that names no tool beyond the core leaves the core
	ans = lc.call("get_my_task", nil)
	if got := lc.names(); !strings.Contains(ans, "get_task") && slices.Contains(got, "get_task") {
		t.Errorf("get_task is still listed after an answer that did not name it: %v", got)
	}

	// help lists every tool but adds none; help with a tool adds that tool for good
	n := len(lc.names())
	lc.call("help", nil)
	if got := lc.names(); len(got) != n {
		t.Errorf("help without a tool changed the list to %v", got)
	}
	lc.call("help", map[string]any{"tool_name": "list_tasks"})
	if got := lc.names(); !slices.Contains(got, "list_tasks") {
		t.Errorf("help(list_tasks) did not list it: %v", got)
	}
	lc.call("get_next_action", nil)
	if got := lc.names(); !slices.Contains(got, "list_tasks") {
		t.Errorf("list_tasks, which help described, left the list after the next answer: %v", got)
	}
	// a tool the session may not call is not listed, whatever help said of it
	lc.call("help", map[string]any{"tool_name": "assign_task"})
	if got := lc.names(); slices.Contains(got, "assign_task") {
		t.Errorf("a worker's list has assign_task: %v", got)
	}
	// an unlisted tool stays callable
	if ans := lc.call("get_my_tasks", nil); strings.Contains(ans, `"error"`) {
		t.Errorf("get_my_tasks, unlisted, failed: %s", ans)
	}
	// the ticket opened the process's one session: once it has ended, authenticate is no
	// use and is not listed again
	if ans := lc.call("report_completed", map[string]any{"result": "success", "summary": "done"}); strings.Contains(ans, `"error"`) {
		t.Fatalf("report_completed: %s", ans)
	}
	if got := lc.names(); slices.Contains(got, "authenticate") {
		t.Errorf("after the session ended the list is %v: authenticate again", got)
	}
}

// What the agent is told for the whole session — its task's title and description, its
// role and system prompt — names tools that stay listed at every step, not only right
// after the answer that showed them: a worker whose task says to ask a colleague through
// delegate_to_chat_session finds it listed when it comes to that step.
func TestShortListHasTheToolsTheTaskNames(t *testing.T) {
	_, st := newTestServer(t)
	owner := filestore.Actor{ID: "alice", Via: filestore.ViaCLI}
	if _, _, err := st.AddAgent(owner, filestore.NewAgent{ID: "w2", ParentID: "alice", Role: "reviewer; read old runs with get_my_execution_history"}); err != nil {
		t.Fatal(err)
	}
	tk, err := st.CreateTask(owner, filestore.NewTask{Title: "Word", Status: filestore.StatusTodo, AssigneeID: "w2",
		Description: "Ask w1 for a word (delegate_to_chat_session), then write it to word.txt."})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetTaskStatus(owner, tk.ID, filestore.StatusInProgress, ""); err != nil {
		t.Fatal(err)
	}
	// as aipm run starts it: the spawn names the task
	_, ticket, err := st.CreateSpawn(filestore.NewSpawn{AgentID: "w2", Purpose: filestore.PurposeTask, TaskID: tk.ID, AIType: "gemini"})
	if err != nil {
		t.Fatal(err)
	}
	lc := newListClient(t, New(st, Options{Logf: t.Logf, SpawnTicket: ticket}), true)
	want := []string{"delegate_to_chat_session", "get_my_execution_history"}
	if got := lc.names(); !hasAll(got, want...) {
		t.Errorf("before authenticate the list is %v, want %v in it", got, want)
	}
	lc.call("authenticate", map[string]any{"agent_id": "w2"})
	lc.call("get_my_task", nil)
	lc.call("get_next_action", nil)
	ans := lc.call("get_notifications", nil)
	if strings.Contains(ans, "delegate_to_chat_session") || strings.Contains(ans, "get_my_execution_history") {
		t.Fatalf("the answer names the tools itself: %s", ans)
	}
	if got := lc.names(); !hasAll(got, want...) {
		t.Errorf("after an answer that names neither the list is %v, want %v in it", got, want)
	}
	// w1's task names none: its list keeps to the core until an answer names it — the
	// work step's, which says how to ask another agent
	lc1 := newListClient(t, spawned(t, st, "w1", filestore.PurposeTask), true)
	if got := lc1.names(); slices.Contains(got, "delegate_to_chat_session") {
		t.Errorf("w1's list has delegate_to_chat_session: %v", got)
	}
	lc1.call("authenticate", map[string]any{"agent_id": "w1"})
	lc1.call("get_my_task", nil)
	if ans := lc1.call("get_next_action", nil); !strings.Contains(ans, `"action":"work"`) || !strings.Contains(ans, "delegate_to_chat_session(") {
		t.Errorf("the work step does not say how to ask another agent: %s", ans)
	}
	if got := lc1.names(); !slices.Contains(got, "delegate_to_chat_session") {
		t.Errorf("at the work step w1's list is %v, without the delegate_to_chat_session it names", got)
	}
}

// A chat session lists the core and what its answers name; never the task tools.
func TestShortListOfAChatSession(t *testing.T) {
	_, st := newTestServer(t)
	owner := filestore.Actor{ID: "alice", Via: filestore.ViaCLI}
	if _, _, err := st.AddAgent(owner, filestore.NewAgent{ID: "c1", ParentID: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SendMessage(owner, filestore.SendRequest{To: "c1", Content: "How far along are you?"}); err != nil {
		t.Fatal(err)
	}
	lc := newListClient(t, spawned(t, st, "c1", filestore.PurposeChat), true)
	lc.call("authenticate", map[string]any{"agent_id": "c1"})
	ans := lc.call("get_next_action", nil)
	if !strings.Contains(ans, `"get_pending_messages"`) {
		t.Fatalf("get_next_action does not send the chat to its messages: %s", ans)
	}
	got := lc.names()
	if !hasAll(got, "get_next_action", "help", "get_pending_messages") {
		t.Errorf("the chat session's list is %v, want the core and get_pending_messages", got)
	}
	if !hasAll(got, "respond_chat", "logout") {
		t.Errorf("the chat session's list is %v, want its core: respond_chat, logout", got)
	}
	for _, not := range []string{"report_completed", "get_my_task", "create_tasks_batch", "authenticate", "dispatch_subtasks"} {
		if slices.Contains(got, not) {
			t.Errorf("a chat session lists %s: %v", not, got)
		}
	}
}

// A client that does not read the list again when told holds up one answer at most: the
// process does not wait for it after that.
func TestAClientThatDoesNotRereadIsWaitedForOnce(t *testing.T) {
	defer func(d time.Duration) { listWait = d }(listWait)
	listWait = 100 * time.Millisecond
	_, st := newTestServer(t)
	s := spawned(t, st, "w1", filestore.PurposeTask)
	lc := newListClient(t, s, false)
	lc.names()
	lc.call("authenticate", map[string]any{"agent_id": "w1"})
	if lc.notices() != 1 {
		t.Fatalf("%d list_changed notices, want 1", lc.notices())
	}
	s.mu.Lock()
	late := s.list.late
	s.mu.Unlock()
	if !late {
		t.Error("a client that did not read the list within listWait is still waited for")
	}
}

// A listed tool's brief description may name another tool only if that one is listed
// wherever the first is: in the core of every session that may call both. Otherwise the
// list would show an instruction whose tool it lacks.
func TestBriefsNameListedTools(t *testing.T) {
	s, _ := newTestServer(t)
	kinds := []struct{ purpose, hier string }{
		{filestore.PurposeTask, filestore.HierarchyWorker}, {filestore.PurposeTask, filestore.HierarchyManager},
		{filestore.PurposeChat, filestore.HierarchyWorker}, {filestore.PurposeChat, filestore.HierarchyManager},
	}
	for name, tl := range s.tools {
		b, err := json.Marshal(briefTool(tl.def))
		if err != nil {
			t.Fatal(err)
		}
		for named := range s.namedTools(string(b)) {
			if named == name {
				continue
			}
			for _, k := range kinds {
				se, a := &filestore.Session{Purpose: k.purpose}, &filestore.Agent{Hierarchy: k.hier}
				if permits(tl.perm, se, a) != nil || permits(s.tools[named].perm, se, a) != nil {
					continue
				}
				if !slices.Contains(coreTools[k.purpose], named) {
					t.Errorf("%s's listed description names %s, which a %s %s session does not always list", name, named, k.hier, k.purpose)
				}
			}
		}
	}
}
