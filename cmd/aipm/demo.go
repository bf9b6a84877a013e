package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// cmdDemo runs the embedded demonstration: a fresh project (in a temporary directory, or
// the one given) with an owner, a manager and two workers, a task tree with a dependency,
// and one real MCP session of the manager against `aipm mcp` in a child process. It prints
// what happens and leaves the files to inspect.
func (a *app) cmdDemo(args []string) error {
	fl := newFlags(a, "demo")
	pos, err := fl.parse(args, 0, 1, "[DIR]")
	if err != nil {
		return err
	}
	dir := ""
	if len(pos) == 1 {
		dir = pos[0]
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	} else if dir, err = os.MkdirTemp("", "aipm-demo-"); err != nil {
		return err
	}
	start := time.Now()
	step := func(format string, args ...any) {
		a.printf("[%6.3fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}

	s, err := filestore.Init(dir, filestore.InitOptions{Name: "demo", Description: "aipm demonstration project", OwnerID: "owner", OwnerName: "Project Owner"},
		filestore.Options{Now: a.now})
	if err != nil {
		return err
	}
	step("initialized project in %s", s.Dir())
	owner := filestore.Actor{ID: "owner", Via: filestore.ViaCLI}
	passkeys := map[string]string{}
	for _, n := range []filestore.NewAgent{
		{ID: "manager", Name: "Manager", Hierarchy: filestore.HierarchyManager, ParentID: "owner", Role: "splits and dispatches work", AIType: "sim"},
		{ID: "worker-gen", Name: "Generator", ParentID: "manager", Role: "generates data files", AIType: "sim"},
		{ID: "worker-calc", Name: "Calculator", ParentID: "manager", Role: "computes results", AIType: "sim"},
	} {
		ag, pk, err := s.AddAgent(owner, n)
		if err != nil {
			return err
		}
		passkeys[ag.ID] = pk
		step("owner added %s %s (parent %s)", ag.Hierarchy, ag.ID, ag.ParentID)
	}
	top, err := s.CreateTask(owner, filestore.NewTask{Title: "Produce the doubled numbers report", Status: filestore.StatusTodo, AssigneeID: "manager",
		Description: "Generate seed numbers, then compute twice each of them into result.txt."})
	if err != nil {
		return err
	}
	gen, err := s.CreateTask(owner, filestore.NewTask{Title: "Generate seed numbers", Status: filestore.StatusTodo, ParentID: top.ID, AssigneeID: "worker-gen"})
	if err != nil {
		return err
	}
	calc, err := s.CreateTask(owner, filestore.NewTask{Title: "Compute doubled numbers", Status: filestore.StatusTodo, ParentID: top.ID,
		AssigneeID: "worker-calc", Dependencies: []string{gen.ID}})
	if err != nil {
		return err
	}
	step("owner created task tree: %s ← {%s, %s (depends on %s)}", top.ID, gen.ID, calc.ID, gen.ID)
	if _, err := s.SetTaskStatus(owner, calc.ID, filestore.StatusInProgress, ""); err != nil {
		step("rule check: starting %s early is refused: %v", calc.ID, err)
	}
	if _, err := s.SetTaskStatus(owner, top.ID, filestore.StatusInProgress, "kick-off"); err != nil {
		return err
	}
	step("owner started %s (in_progress)", top.ID)

	// One real agent session: the manager's `aipm mcp` in a child process.
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	var child *exec.Cmd
	tr := transport.NewStdioWithOptions(exe, nil, []string{"mcp"}, transport.WithCommandFunc(
		func(ctx context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
			child = exec.CommandContext(ctx, command, args...)
			child.Dir = dir
			return child, nil
		}))
	c := client.NewClient(tr)
	if err := c.Start(context.Background()); err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "aipm-demo", Version: "0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	step("manager's agent process connected to `aipm mcp` (pid %d)", child.Process.Pid)
	callTool := func(name string, args map[string]any) (map[string]any, error) {
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
		if err != nil {
			return nil, err
		}
		text := ""
		for _, ct := range res.Content {
			if tc, ok := ct.(mcp.TextContent); ok {
				text += tc.Text
			}
		}
		var out map[string]any
		if err := json.Unmarshal([]byte(text), &out); err != nil {
			return nil, fmt.Errorf("%s: %s", name, text)
		}
		if res.IsError {
			return out, fmt.Errorf("%s: %v: %v", name, out["error"], out["message"])
		}
		return out, nil
	}
	if _, err := callTool("authenticate", map[string]any{"agent_id": "manager", "passkey": "wrong-passkey"}); err != nil {
		step("authenticate with a wrong passkey → %v", err)
	}
	auth, err := callTool("authenticate", map[string]any{"agent_id": "manager", "passkey": passkeys["manager"]})
	if err != nil {
		return err
	}
	step("manager authenticated: %s session for %v; notification: %q", auth["purpose"], auth["task_id"], auth["notification"])
	step("  instruction: %v", auth["instruction"])
	if mt, err := callTool("get_my_task", nil); err == nil {
		task := mt["task"].(map[string]any)
		step("get_my_task → %q with %d sub-tasks, execution record %v", task["title"], len(mt["subtasks"].([]any)), mt["execution_id"])
	} else {
		return err
	}
	if subs, err := callTool("list_subordinates", nil); err == nil {
		var names []string
		for _, x := range subs["subordinates"].([]any) {
			names = append(names, x.(map[string]any)["id"].(string))
		}
		step("list_subordinates → %s", strings.Join(names, ", "))
	} else {
		return err
	}
	if _, err := callTool("get_pending_messages", nil); err != nil {
		step("get_pending_messages in a task session → %v", err)
	}
	if _, err := callTool("logout", nil); err != nil {
		return err
	}
	step("manager logged out; its session ended")
	c.Close()

	a.printf("\nFiles to inspect under %s:\n", s.Dir())
	filepath.WalkDir(s.Dir(), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, ".lock") {
			return nil
		}
		a.printf("  %s\n", s.Rel(path))
		return nil
	})
	a.printf("\nTry: cd %s && aipm status && aipm task show %s && cat .ai-pm/events.jsonl\n", dir, top.ID)
	return nil
}
