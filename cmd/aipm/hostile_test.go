package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestHostileToolArguments feeds every tool hostile arguments through a real `aipm mcp`
// process: traversal paths, NUL bytes, a 2 MB string, wrong types, deep nesting. No call
// may crash the server or become a protocol error, and nothing outside .ai-pm may change.
func TestHostileToolArguments(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real server and makes thousands of calls")
	}
	if _, err := exec.LookPath("aipm"); err != nil {
		t.Skip("aipm is not on PATH (TestMain puts it there)")
	}
	top := t.TempDir()
	repo := filepath.Join(top, "repo")
	os.MkdirAll(repo, 0o755)
	os.WriteFile(filepath.Join(repo, "README"), []byte("the user's file\n"), 0o644)
	aipm := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("aipm", args...)
		cmd.Dir = repo
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("aipm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	aipm("init", "--owner", "alice")
	aipm("agent", "add", "w1", "--parent", "alice", "--passkey", "w1-passkey")
	aipm("agent", "add", "w2", "--parent", "alice", "--passkey", "w2-passkey")
	task := aipm("task", "add", "Work", "--assign", "w1", "--status", "todo")
	aipm("task", "status", task, "in_progress")
	before := snapshotOutside(t, top, repo)

	c, err := client.NewStdioMCPClient("aipm", append(os.Environ(), "AIPM_ROOT="+repo), "mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "hostile", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	call := func(name string, args map[string]any) (*mcp.CallToolResult, error) {
		req := mcp.CallToolRequest{}
		req.Params.Name = name
		req.Params.Arguments = args
		cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		return c.CallTool(cctx, req)
	}
	auth := func() {
		call("authenticate", map[string]any{"agent_id": "w1", "passkey": "w1-passkey"})
	}
	// Listed before authenticating: every tool, not only those a worker's list shows.
	list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	auth()

	deep := any("x")
	for range 2000 {
		deep = []any{deep}
	}
	values := []any{
		"../../../../../../etc/passwd", "/etc/passwd", "../README", "tsk_../../README",
		"ses_x/../../README", "a\x00b", "\x1b[31mred", "", "9999999999999999999999",
		strings.Repeat("é", 5000), -1, 1e308, 3.5, true, nil,
		[]any{"a", 1}, map[string]any{"../x": "y"}, deep, task, "alice",
	}
	huge, long := strings.Repeat("A", 2<<20), strings.Repeat("B", 64<<10)
	calls, failures := 0, 0
	for _, tool := range list.Tools {
		props := slices.Sorted(func(yield func(string) bool) {
			for k := range tool.InputSchema.Properties {
				if !yield(k) {
					return
				}
			}
		})
		props = append(props, "unknown_argument")
		// Each value for every parameter at once, and the sharpest ones for each alone.
		sets := []map[string]any{{}}
		for _, v := range values {
			set := map[string]any{}
			for _, p := range props {
				if p == "timeout_seconds" {
					continue
				}
				set[p] = v
			}
			sets = append(sets, set)
		}
		for _, p := range props {
			for _, v := range []any{"../../../../../../etc/passwd", "a\x00b", 1e308, map[string]any{"../x": "y"}, deep, nil} {
				if p == "timeout_seconds" {
					if f, ok := v.(float64); ok && f > 0 {
						continue // a real wait: the long-poll itself is not under test here
					}
				}
				sets = append(sets, map[string]any{p: v})
			}
		}
		// Every parameter at once with a 64 KB string; a 2 MB one for the first parameter of
		// the tools that take text, so the race detector's run stays short.
		all := map[string]any{}
		for _, p := range props {
			all[p] = long
		}
		sets = append(sets, all)
		if slices.Contains([]string{"authenticate", "create_task", "send_message", "request_task"}, tool.Name) {
			sets = append(sets, map[string]any{props[0]: huge})
		}
		for _, args := range sets {
			if _, ok := args["timeout_seconds"]; !ok && tool.Name == "get_next_action" {
				args["timeout_seconds"] = 0
			}
			calls++
			start := time.Now()
			res, err := call(tool.Name, args)
			if d := time.Since(start); d > 5*time.Second {
				t.Logf("slow: %s %s took %v", tool.Name, clipArgs(args), d)
			}
			if err != nil {
				failures++
				if failures <= 5 {
					t.Errorf("%s %s: protocol error: %v", tool.Name, clipArgs(args), err)
				}
				continue
			}
			if res == nil {
				t.Errorf("%s: no result", tool.Name)
			}
			if tool.Name == "logout" || tool.Name == "authenticate" {
				auth() // keep an authenticated session for the tools after it
			}
		}
	}
	if res, err := call("get_my_profile", nil); err != nil || res.IsError {
		t.Errorf("server after %d hostile calls: %v %+v", calls, err, res)
	}
	t.Logf("%d hostile calls over %d tools, %d protocol errors", calls, len(list.Tools), failures)
	if after := snapshotOutside(t, top, repo); !slices.Equal(before, after) {
		t.Errorf("files outside .ai-pm changed:\nbefore %v\nafter  %v", before, after)
	}
}

// snapshotOutside lists every path under top except the store, with size, mode and
// modification time.
func snapshotOutside(t *testing.T, top, repo string) []string {
	t.Helper()
	store := filepath.Join(repo, ".ai-pm")
	var out []string
	err := filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == store {
			return filepath.SkipDir
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		size := info.Size()
		if d.IsDir() {
			size = 0
		}
		out = append(out, fmt.Sprintf("%s %v %d %d", p, info.Mode(), size, info.ModTime().UnixNano()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func clipArgs(args map[string]any) string {
	s := fmt.Sprint(args)
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return s
}
