package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aipm/aipm/filestore"
)

// memoryBound is the peak resident size (VmHWM) a command or server may reach on the
// hostile store of TestMemoryBounded.
const memoryBound = 200 << 20

// TestMemoryBounded: a pull can bring a mailbox and a history of hundreds of megabytes
// (mostly junk lines) and a journal of a gigabyte. `aipm status`, `aipm doctor`,
// `aipm task show`, `aipm mcp` and `aipm ui` answer — with an error naming the file where a
// file is refused — and their real processes stay under memoryBound.
func TestMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("writes half a gigabyte of store files")
	}
	// The binary as it ships: the test binary may carry the race detector, which
	// multiplies memory and time.
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build aipm with")
	}
	bin := filepath.Join(t.TempDir(), "aipm")
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	repo := t.TempDir()
	aipm := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = repo
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("aipm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	aipm("init", "--owner", "alice")
	aipm("agent", "add", "w1", "--parent", "alice", "--passkey", "w1-passkey")
	task := aipm("task", "add", "Work", "--assign", "w1", "--status", "todo")

	const size = 250 << 20
	// w1's mailbox: messages from alice, unread, each followed by junk lines.
	fill(t, filepath.Join(repo, ".ai-pm", "agents", "w1", "chat.jsonl"), size, func(w *bufio.Writer, i int) {
		fmt.Fprintf(w, `{"id":"msg_%026d","senderId":"alice","content":"message %d","createdAt":"2026-01-02T03:04:05Z"}`+"\n", i, i)
		w.WriteString(strings.Repeat("{}\n", 40))
	})
	// The history: events of the task, then one line of 2 MiB.
	fill(t, filepath.Join(repo, ".ai-pm", "events.jsonl"), size, func(w *bufio.Writer, i int) {
		fmt.Fprintf(w, `{"at":"2026-01-02T03:04:05Z","actor":"alice","via":"cli","entity":"task","id":"%s","change":"edited","fields":["title"]}`+"\n", task)
	})
	f, err := os.OpenFile(filepath.Join(repo, ".ai-pm", "events.jsonl"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"id":"` + strings.Repeat("x", 2<<20) + "\"}\n")
	f.Close()
	// The journal: a gigabyte, sparse.
	if err := os.Truncate(filepath.Join(repo, ".ai-pm", filepath.FromSlash(filestore.JournalPath)), 1<<30); err != nil {
		t.Fatal(err)
	}

	check := func(what string, hwm int64) {
		t.Helper()
		t.Logf("%s: VmHWM %d MB", what, hwm>>20)
		if hwm > memoryBound {
			t.Errorf("%s reached %d MB, over the %d MB bound", what, hwm>>20, memoryBound>>20)
		}
	}
	run := func(args ...string) (string, int64) {
		t.Helper()
		t.Logf("aipm %s", strings.Join(args, " "))
		// Through a small process of its own (maxRSSMain): a process Go starts shares the
		// starter's memory until it executes, and Linux counts the starter's peak — here
		// this test process's, with every scenario beside it — in the child's.
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		rss := filepath.Join(t.TempDir(), "maxrss")
		cmd := exec.Command(self, append([]string{rss, bin}, args...)...)
		cmd.Args[0] = maxRSSCommand
		cmd.Dir = repo
		out, _ := cmd.CombinedOutput()
		data, err := os.ReadFile(rss)
		if err != nil {
			t.Fatalf("no peak memory of aipm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return string(out), kb << 10 // KB on Linux: the process's VmHWM
	}

	out, hwm := run("status")
	check("aipm status", hwm)
	if !strings.Contains(out, "w1") {
		t.Errorf("aipm status:\n%s", out)
	}
	out, hwm = run("doctor")
	check("aipm doctor", hwm)
	for _, want := range []string{"agents/w1/chat.jsonl", "message without id or senderId", "more problem lines", ".ai-pm/events.jsonl", "over the 1048576 a line may have"} {
		if !strings.Contains(out, want) {
			t.Errorf("aipm doctor does not say %q:\n%.3000s", want, out)
		}
	}
	out, hwm = run("task", "show", task)
	check("aipm task show", hwm)
	// The over-long line is passed over (doctor names it): the task's history is shown.
	if !strings.Contains(out, "history:") || !strings.Contains(out, "alice via cli: edited title") || !strings.Contains(out, "(the last 200 of ") {
		t.Errorf("aipm task show does not show the history past the over-long line:\n%.2000s", out)
	}

	// aipm mcp: authenticate, then a page of the pending messages.
	mcpCmd := exec.Command(bin, "mcp")
	mcpCmd.Dir = repo
	stdin, err := mcpCmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := mcpCmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := mcpCmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer mcpCmd.Process.Kill()
	r := bufio.NewReaderSize(stdout, 1<<20)
	id := 0
	rpc := func(method string, params any) map[string]any {
		t.Helper()
		t.Logf("mcp %s", method)
		id++
		req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		stdin.Write(append(req, '\n'))
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				t.Fatalf("%s: %v", method, err)
			}
			var resp map[string]any
			if json.Unmarshal(line, &resp) == nil && resp["id"] == float64(id) {
				return resp
			}
		}
	}
	rpc("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "memtest", "version": "0"}})
	stdin.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"))
	toolText := func(resp map[string]any) string {
		data, _ := json.Marshal(resp["result"])
		return string(data)
	}
	auth := toolText(rpc("tools/call", map[string]any{"name": "authenticate", "arguments": map[string]any{"agent_id": "w1", "passkey": "w1-passkey", "purpose": "chat"}}))
	if !strings.Contains(auth, "session_token") {
		t.Fatalf("authenticate: %.2000s", auth)
	}
	var token string
	if i := strings.Index(auth, `session_token\":\"`); i >= 0 {
		token = auth[i+len(`session_token\":\"`):]
		token = token[:strings.Index(token, `\"`)]
	}
	page := toolText(rpc("tools/call", map[string]any{"name": "get_pending_messages", "arguments": map[string]any{"session_token": token}}))
	if !strings.Contains(page, "message 0") || len(page) > 2<<20 {
		t.Errorf("get_pending_messages: %d bytes: %.500s", len(page), page)
	}
	check("aipm mcp", vmHWM(t, mcpCmd.Process.Pid))
	stdin.Close()
	mcpCmd.Wait()

	// aipm ui: the page's state.
	uiCmd := exec.Command(bin, "ui")
	uiCmd.Dir = repo
	uiOut, err := uiCmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := uiCmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer uiCmd.Process.Kill()
	url, err := bufio.NewReader(uiOut).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	url = strings.TrimSpace(url)
	base, tok, _ := strings.Cut(url, "/?token=")
	client := &http.Client{Timeout: 120 * time.Second}
	for _, path := range []string{"/api/state", "/api/tasks/" + task, "/api/chat/w1"} {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("X-Aipm-Token", tok)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
		resp.Body.Close()
		t.Logf("GET %s: %d, %d bytes", path, resp.StatusCode, len(body))
		if path == "/api/tasks/"+task && (resp.StatusCode != 200 || !strings.Contains(string(body), `"history"`)) {
			t.Errorf("GET %s: %d %.500s", path, resp.StatusCode, body)
		}
	}
	check("aipm ui", vmHWM(t, uiCmd.Process.Pid))
	uiCmd.Process.Signal(os.Interrupt)
	uiCmd.Wait()
}

// fill writes lines by gen until the file holds at least size bytes.
func fill(t *testing.T, path string, size int64, gen func(w *bufio.Writer, i int)) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cw := &countWriter{w: f}
	w := bufio.NewWriterSize(cw, 1<<20)
	for i := 0; cw.n+int64(w.Buffered()) < size; i++ {
		gen(w, i)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// vmHWM reads a live process's peak resident size from /proc/<pid>/status.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

// maxRSSCommand is the hidden command (argv[0]) under which the test binary runs
// "FILE PROGRAM ARGS...": it runs the program and writes the program's own peak resident
// memory (KB, ru_maxrss) to FILE, and exits with its status.
const maxRSSCommand = "aipm-test-maxrss"

func maxRSSMain() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: "+maxRSSCommand+" FILE PROGRAM [ARGS...]")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[2], os.Args[3:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	err := cmd.Run()
	if cmd.ProcessState == nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		os.Exit(2)
	}
	if werr := os.WriteFile(os.Args[1], []byte(strconv.FormatInt(ru.Maxrss, 10)+"\n"), 0o644); werr != nil {
		fmt.Fprintln(os.Stderr, werr)
		os.Exit(2)
	}
	// AIPM_MAXRSS_ALL names a file for the peak of the largest process of the tree: the
	// program's and every process it waited for (git, say), as Linux counts children.
	if all := os.Getenv("AIPM_MAXRSS_ALL"); all != "" {
		var cu syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &cu); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if werr := os.WriteFile(all, []byte(strconv.FormatInt(cu.Maxrss, 10)+"\n"), 0o644); werr != nil {
			fmt.Fprintln(os.Stderr, werr)
			os.Exit(2)
		}
	}
	os.Exit(cmd.ProcessState.ExitCode())
}
