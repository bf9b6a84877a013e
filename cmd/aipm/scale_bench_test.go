package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aipm/aipm/filestore"
	"github.com/gofrs/flock"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// noopMCPCommand is the hidden command (argv[0]) under which the test binary
// serves the floor of BenchmarkScale: an mcp-go stdio server with one tool
// that does nothing, served the way `aipm mcp` serves.
const noopMCPCommand = "aipm-noop-mcp"

// noopMCPMain serves the no-op tool on stdin/stdout until stdin closes. With
// the argument "write" true, the tool does what the disk must do for one aipm
// write and nothing else (floorWrite): the floor of the mixed operations.
func noopMCPMain() {
	s := server.NewMCPServer("noop", "0", server.WithToolCapabilities(true))
	var seq int
	s.AddTool(mcp.NewTool("noop", mcp.WithDescription("Does nothing")),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if w, _ := req.GetArguments()["write"].(bool); w {
				seq++
				if err := floorWrite(seq); err != nil {
					return mcp.NewToolResultError(err.Error()), nil
				}
			}
			return mcp.NewToolResultText(`{"ok":true}`), nil
		})
	if err := server.NewStdioServer(s).Listen(context.Background(), os.Stdin, os.Stdout); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
}

// floorWrite is the physical part of one aipm write, in the working
// directory: under an exclusive lock on a shared lock file, a file replaced
// atomically (temp file, fsync, rename, fsync of the directory) and a line
// appended to a shared log and fsync'd. No JSON, no cache, no rule.
func floorWrite(seq int) error {
	lk := flock.New("floor.lock")
	if err := lk.Lock(); err != nil {
		return err
	}
	defer lk.Unlock()
	name := fmt.Sprintf("floor-%d.json", os.Getpid())
	line := fmt.Appendf(nil, `{"pid":%d,"seq":%d}`+"\n", os.Getpid(), seq)
	tmp, err := os.CreateTemp(".", "."+name+".*.tmp")
	if err != nil {
		return err
	}
	err = writeSyncClose(tmp, line)
	if err == nil {
		err = os.Rename(tmp.Name(), name)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return err
	}
	d, err := os.Open(".")
	if err != nil {
		return err
	}
	err = d.Sync()
	d.Close()
	if err != nil {
		return err
	}
	f, err := os.OpenFile("floor.jsonl", os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	return writeSyncClose(f, line)
}

// writeSyncClose writes data to f, makes it durable and closes f, whatever happens.
func writeSyncClose(f *os.File, data []byte) error {
	_, err := f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// scaleEnvInt reads a size override from the environment.
func scaleEnvInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		b.Fatalf("%s=%q: want a whole number ≥ 0", name, v)
	}
	return n
}

// scaleServer is one server process (aipm mcp, or the no-op floor) driven
// by a benchClient, with its process for /proc readings.
type scaleServer struct {
	*wakeServer
	cmd     *exec.Cmd
	startup time.Duration // spawn → initialize response
}

// startScaleServer starts the test binary as argv0 (aipm with args "mcp",
// or the no-op floor) in dir and initializes it, timing both.
func startScaleServer(b *testing.B, exe, dir, name, argv0 string, args ...string) *scaleServer {
	s, err := tryScaleServer(exe, dir, name, argv0, args...)
	if s != nil {
		b.Cleanup(func() { s.c.Close() })
	}
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// tryScaleServer is startScaleServer for any goroutine: the caller closes the
// server (also after an error, when it is not nil).
func tryScaleServer(exe, dir, name, argv0 string, args ...string) (*scaleServer, error) {
	s := &scaleServer{wakeServer: &wakeServer{name: name, stderr: &mcpSyncBuffer{}}}
	cmd := exec.Command(exe, args...)
	cmd.Args[0] = argv0
	cmd.Dir = dir
	cmd.Env = wakeEnv()
	cmd.Stderr = s.stderr
	s.cmd = cmd
	ctx, cancel := context.WithTimeout(context.Background(), scaleCallTimeout)
	defer cancel()
	t0 := time.Now()
	c, err := startBenchClient(ctx, cmd, "aipm-scale-bench")
	if c == nil {
		return nil, fmt.Errorf("start server %s: %v", name, err)
	}
	s.c = c
	if err != nil {
		return s, fmt.Errorf("server %s: %v%s", name, err, s.stderrNote())
	}
	s.startup = time.Since(t0)
	return s, nil
}

// timed calls tool once and returns how long it took and the size of its
// text result; any error fails the benchmark.
func (s *scaleServer) timed(b *testing.B, tool string, args map[string]any) (time.Duration, int) {
	b.Helper()
	d, n, err := s.tryTimed(tool, args)
	if err != nil {
		b.Fatal(err)
	}
	return d, n
}

// scaleCallTimeout bounds one measured call: a process that reads a store of
// 100,000 tasks on a loaded machine may take seconds, and that is a figure.
const scaleCallTimeout = time.Minute

// tryTimed is timed for any goroutine.
func (s *scaleServer) tryTimed(tool string, args map[string]any) (time.Duration, int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), scaleCallTimeout)
	defer cancel()
	t0 := time.Now()
	text, isError, err := s.c.callTool(ctx, tool, args)
	d := time.Since(t0)
	if err != nil {
		return d, 0, fmt.Errorf("server %s: %s: %v%s", s.name, tool, err, s.stderrNote())
	}
	if isError {
		return d, 0, fmt.Errorf("server %s: %s %v: %s", s.name, tool, args, text)
	}
	return d, len(text), nil
}

// latencies calls tool warm times unmeasured, then n times measured, or as
// many as fit in limit.
func (s *scaleServer) latencies(b *testing.B, warm, n int, limit time.Duration, tool string, args map[string]any) []time.Duration {
	for range warm {
		s.timed(b, tool, args)
	}
	out := make([]time.Duration, 0, n)
	end := time.Now().Add(limit)
	for range n {
		d, _ := s.timed(b, tool, args)
		out = append(out, d)
		if time.Now().After(end) {
			break
		}
	}
	return out
}

// scaleProgress tells the person waiting where the run is (stderr, at once).
func scaleProgress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s scale: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// procStatusKB reads a "VmXXX:   123 kB" line of /proc/<pid>/status.
func procStatusKB(b *testing.B, pid int, key string) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			n, _ := strconv.Atoi(strings.Fields(v)[0])
			return n
		}
	}
	b.Fatalf("/proc/%d/status: no %s", pid, key)
	return 0
}

// procCPU is the user+system time of a process so far (/proc/<pid>/stat,
// in clock ticks of 10 ms, the Linux USER_HZ).
func procCPU(b *testing.B, pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The command name may hold spaces; the fields after its ')' are fixed.
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64) // field 14 of stat
	st, _ := strconv.ParseInt(f[12], 10, 64) // field 15
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// scaleTable collects the figures, one row per measurement, one column per
// store (and the floor).
type scaleTable struct {
	cols  []string
	rows  []string
	cells map[string]map[string]string
}

func (t *scaleTable) set(row, col, format string, args ...any) {
	if t.cells == nil {
		t.cells = map[string]map[string]string{}
	}
	if t.cells[row] == nil {
		t.cells[row] = map[string]string{}
		if !slices.Contains(t.rows, row) {
			t.rows = append(t.rows, row)
		}
	}
	t.cells[row][col] = fmt.Sprintf(format, args...)
}

func (t *scaleTable) lines() []string {
	w0 := 0
	for _, r := range t.rows {
		w0 = max(w0, len([]rune(r)))
	}
	widths := make([]int, len(t.cols))
	for i, c := range t.cols {
		widths[i] = len([]rune(c))
		for _, r := range t.rows {
			widths[i] = max(widths[i], len([]rune(t.cells[r][c])))
		}
	}
	pad := func(s string, w int) string { return s + strings.Repeat(" ", w-len([]rune(s))) }
	var out []string
	line := "| " + pad("", w0)
	sep := "|-" + strings.Repeat("-", w0)
	for i, c := range t.cols {
		line += " | " + pad(c, widths[i])
		sep += "-|-" + strings.Repeat("-", widths[i])
	}
	out = append(out, line+" |", sep+"-|")
	for _, r := range t.rows {
		if t.cells[r] == nil {
			continue
		}
		line := "| " + pad(r, w0)
		for i, c := range t.cols {
			v := t.cells[r][c]
			if v == "" {
				v = "—"
			}
			line += " | " + pad(v, widths[i])
		}
		out = append(out, line+" |")
	}
	return out
}

func msf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// pcts formats p50/p99 (and p95 if asked) of ds in milliseconds.
// A count below scaleWant is shown (a time limit cut the series short).
func pcts(ds []time.Duration, p95 bool) string {
	out := fmt.Sprintf("%.2f / %.2f", msf(wakePercentile(ds, 50)), msf(wakePercentile(ds, 99)))
	if p95 {
		out = fmt.Sprintf("%.2f / %.2f / %.2f", msf(wakePercentile(ds, 50)), msf(wakePercentile(ds, 95)), msf(wakePercentile(ds, 99)))
	}
	if len(ds) < scaleWant {
		out += fmt.Sprintf(" (n=%d)", len(ds))
	}
	return out
}

// scaleWant is the number of measured calls asked for (AIPM_BENCH_CALLS).
var scaleWant int

func median(ds []time.Duration) time.Duration { return wakePercentile(ds, 50) }

// BenchmarkScale measures aipm on stores of user scale against a store of
// ten tasks and against the floor of mcp-go itself (a no-op tool served by
// the same stdio machinery), in one run, and prints a table with a column
// per store.
//
// Each store is made by buildScaleStore: the CLI sets the project and 30
// agents up, the rest is generated in the on-disk format. The large stores
// have AIPM_BENCH_TASKS tasks each (default "10000,100000"), ten messages a
// task in ended conversations and with the owner, a quarter of a
// conversation and four history events a task (10,000 tasks: 100,000
// messages, 2,500 conversations, 40,000 events; 100,000 tasks: a million
// messages); the small one the same fixtures and 10 background tasks, 100
// messages, 5 conversations. AIPM_BENCH_STORE_CACHE=DIR generates each store
// once into DIR and copies it from there on later runs.
// Overrides (for quick runs): AIPM_BENCH_MESSAGES, AIPM_BENCH_CONVERSATIONS,
// AIPM_BENCH_EVENTS (the same for every large store), AIPM_BENCH_BIG_SUBTASKS
// (400), AIPM_BENCH_CALLS (200 measured calls per tool, after 20 unmeasured),
// AIPM_BENCH_WAKE (200 wake-ups), AIPM_BENCH_WRITES (20 CLI writes for CPU
// per write), AIPM_BENCH_MIXED_OPS (1,000 operations per process, large
// stores only; 0 skips), AIPM_BENCH_MIXED_SECONDS (90: a mixed run stops
// there and says so), AIPM_BENCH_THIRTY_ROUNDS (3 rounds of the thirty's
// mixed operations, each after a round of the floor), AIPM_BENCH_TOOL_SECONDS (15) and
// AIPM_BENCH_WAKE_SECONDS (45), the time limits of one tool's series and of
// the wake series (a series cut short shows its n); AIPM_BENCH_ONLY_THIRTY=1
// measures only the thirty processes on the large stores. Progress, and the table
// so far after each store, go to stderr.
//
// Per store, real `aipm mcp` processes are driven over stdio by mcp-go
// clients in this process:
//   - authenticate as w1 in a process that finds no index file (the first
//     process on a machine), and its first get_task, which indexes the
//     history for the machine (time, and that process's VmHWM); then in 5
//     fresh processes: spawn → initialize
//     response, and the first call; then logout + authenticate 5 times in
//     one of them (warm).
//   - w1's task session (20 sub-tasks, some done), m1's (20 sub-tasks
//     dispatched to workers) and m3's chat session: p50/p99 of the read
//     tools and of get_next_action with timeout_seconds 0; list_tasks with
//     status done (p95 too), and with status done and an assignee; the size
//     of get_task on the task with 400 sub-tasks; VmHWM and VmRSS of the
//     three servers afterwards.
//   - wake: w20's chat session sends, w21's waits in get_next_action (as in
//     BenchmarkWakeAcrossProcesses).
//   - CPU per write: w10..w19 each hold a task session in its own server;
//     the servers' utime+stime over N `aipm task add` writes (and half a
//     second to settle), minus the same over an idle window of equal
//     length, divided by N. Then the wall time of N one-shot `aipm task
//     status` changes.
//   - mixed: the same 10 servers, each also in a chat session, run their
//     operations concurrently (get_my_task, list_tasks, create_task,
//     update_task_status of their own sub-tasks, send_message to the
//     owner); every acknowledged write is then checked in the files.
//   - thirty: 30 servers started at once (w10..w19 and 20 workers the CLI
//     adds), each authenticating a task session: the wall time until all
//     have answered, each first call, each VmHWM; then the mixed operations
//     in all 30, with the CPU the servers and this process (the client
//     driving them) spent per operation. Then the first call of a server
//     started right after. The phase runs in rounds, each with a new team of
//     thirty on the store the rounds before grew; before each, the same
//     operations run in 30 no-op servers whose writes do only the disk's part
//     of an aipm write (floorTeam): the floor column, and the floor beside
//     each round. The ops/s row is the median round; every round is shown
//     with its floor.
//
// Run it with `make bench`, or alone:
//
//	go test -run='^$' -bench=Scale -benchtime=1x -timeout=60m ./cmd/aipm
func BenchmarkScale(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	calls := scaleEnvInt(b, "AIPM_BENCH_CALLS", 200)
	scaleWant = calls
	small := scaleSize{Name: "small", Background: 10, Messages: 100, Conversations: 5, Events: 0}
	sizes := []scaleSize{small}
	// AIPM_BENCH_ONLY_THIRTY=1 measures the thirty processes alone, on the large stores.
	onlyThirty := os.Getenv("AIPM_BENCH_ONLY_THIRTY") != ""
	if onlyThirty {
		sizes = nil
	}
	// Fixtures: w1 1+20, m1 1+20, w10..w19 10×(1+5), the big task 1+N.
	bigSub := scaleEnvInt(b, "AIPM_BENCH_BIG_SUBTASKS", 400)
	fixtures := 21 + 21 + len(scaleCPUWorkers)*6
	if bigSub > 0 {
		fixtures += 1 + bigSub
	}
	for _, f := range strings.Split(envOr("AIPM_BENCH_TASKS", "10000,100000"), ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			b.Fatalf("AIPM_BENCH_TASKS=%q: want task counts separated by commas", f)
		}
		// Ten messages, a quarter of a conversation and four history events a task
		// (10,000 tasks: 100,000 messages; 100,000 tasks: a million).
		sizes = append(sizes, scaleSize{Name: fmt.Sprintf("%dk", n/1000), BigSubtasks: bigSub, Background: max(n-fixtures, 0),
			Messages: scaleEnvInt(b, "AIPM_BENCH_MESSAGES", n*10), Conversations: scaleEnvInt(b, "AIPM_BENCH_CONVERSATIONS", n/4),
			Events: scaleEnvInt(b, "AIPM_BENCH_EVENTS", n*4)})
	}

	tab := &scaleTable{cols: []string{"no-op floor"}, rows: []string{
		"store: messages / conversations / events",
		"get_my_profile (w1 task) p50/p99 ms",
		"get_my_task (w1 task) p50/p99 ms",
		"get_task 20 sub-tasks (w1) p50/p99 ms",
		"get_next_action t=0 worker p50/p99 ms",
		"get_my_task (m1 task) p50/p99 ms",
		"get_next_action t=0 manager p50/p99 ms",
		"get_next_action t=0 chat p50/p99 ms",
		"get_pending_messages (chat) p50/p99 ms",
		"list_tasks status=done p50/p95/p99 ms",
		"list_tasks status=done + assignee p50/p99 ms",
		"authenticate first call, median of 5 ms",
		"authenticate first call, no index file (rebuilt) ms",
		"first process: get_task, no history index ms; VmHWM MB",
		"authenticate first call 1 s after start, median of 3 ms",
		"authenticate warm (logout+again), median of 5 ms",
		"start → initialized, median of 5 ms",
		"RSS VmHWM / VmRSS MB (max of w1, m1, m3)",
		"30 servers started at once: all authenticated s",
		"30 servers: first authenticate p50/max ms",
		"30 servers: VmHWM MB per aipm mcp, median / max",
		"get_task 20 sub-tasks: result bytes",
		"get_task on 400 sub-tasks: result bytes",
		"wake send → waiting get_next_action p50/p99 ms",
		"CPU per write across 10 task servers ms",
		"aipm task add (CLI) wall p50 ms",
		"aipm task status (CLI) wall p50 ms",
		"aipm status (CLI) wall p50 ms",
		"mixed 10 processes: ops/s, lost",
		"mixed 10: op latency p50/p99 ms",
		"mixed 30 processes: ops/s, lost",
		"mixed 30: each round, aipm / floor ops/s",
		"mixed 30: op latency p50/p99 ms",
		"mixed 30: CPU ms per op (30 servers' user+sys)",
		"mixed 30: the driving client's CPU ms per op",
		"authenticate first call after mixed 30, median of 3 ms",
	}}
	for _, sz := range sizes {
		tab.cols = append(tab.cols, sz.Name)
	}
	tab.cols = append(tab.cols, "target (largest)")
	// A run that fails at the largest store still shows what it measured (stderr).
	defer func() {
		if b.Failed() {
			for _, l := range tab.lines() {
				fmt.Fprintln(os.Stderr, l)
			}
		}
	}()
	if !onlyThirty {
		scaleFloor(b, exe, tab, calls)
	}
	var floor *floorTeam
	if scaleEnvInt(b, "AIPM_BENCH_MIXED_OPS", 1000) > 0 {
		floor = startFloorTeam(b, exe)
		defer floor.close()
	}
	for i, sz := range sizes {
		scaleProgress("%s store: generating", sz.Name)
		st := cachedScaleStore(b, exe, sz)
		col := fmt.Sprintf("%s: %d tasks", sz.Name, st.tasks)
		tab.cols[1+i] = col
		b.Logf("%s store: %d tasks, %d messages, %d conversations, %d history events, 31 agents; generated in %v",
			sz.Name, st.tasks, st.messages, st.conversations, st.events, st.genTime.Round(time.Millisecond))
		tab.set("store: messages / conversations / events", col, "%d / %d / %d", st.messages, st.conversations, st.events)
		mixed := 0
		if sz.Name != "small" {
			mixed = scaleEnvInt(b, "AIPM_BENCH_MIXED_OPS", 1000)
		}
		if onlyThirty {
			if mixed == 0 {
				b.Fatal("AIPM_BENCH_ONLY_THIRTY=1 with AIPM_BENCH_MIXED_OPS=0 measures nothing: give the thirty operations to run")
			}
			scaleWarmIndex(b, exe, st)
			scaleThirty(b, exe, st, tab, col, mixed, floor)
		} else {
			scaleRun(b, exe, st, tab, col, calls, mixed, floor, i == len(sizes)-1)
		}
		// So far, in case a later size fails (stderr, at once).
		for _, l := range tab.lines() {
			fmt.Fprintln(os.Stderr, l)
		}
	}
	targets := map[string]string{
		"get_my_profile (w1 task) p50/p99 ms":                    "≤ 1 p50, ≤ 2× 10k",
		"get_my_task (w1 task) p50/p99 ms":                       "≤ 1 p50, ≤ 2× 10k",
		"get_task 20 sub-tasks (w1) p50/p99 ms":                  "≤ 1 p50, ≤ 2× 10k",
		"get_next_action t=0 worker p50/p99 ms":                  "≤ 1 p50, ≤ 2× 10k",
		"get_next_action t=0 manager p50/p99 ms":                 "≤ 1 p50, ≤ 2× 10k",
		"get_next_action t=0 chat p50/p99 ms":                    "≤ 1 p50, ≤ 2× 10k",
		"get_pending_messages (chat) p50/p99 ms":                 "≤ 1 p50, ≤ 2× 10k",
		"list_tasks status=done p50/p95/p99 ms":                  "p95 ≤ 50",
		"list_tasks status=done + assignee p50/p99 ms":           "≤ 2× 10k",
		"authenticate first call, median of 5 ms":                "≤ 20",
		"authenticate first call after mixed 30, median of 3 ms": "≤ 20",
		"start → initialized, median of 5 ms":                    "≤ 50",
		"RSS VmHWM / VmRSS MB (max of w1, m1, m3)":               "≤ 40",
		"30 servers: VmHWM MB per aipm mcp, median / max":        "≤ 40",
		"get_task on 400 sub-tasks: result bytes":                "≤ 8 KB",
		"wake send → waiting get_next_action p50/p99 ms":         "p50 ≤ 2",
		"CPU per write across 10 task servers ms":                "≤ 30 (goal ≤ 5)",
		"aipm task status (CLI) wall p50 ms":                     "≤ 50",
		"mixed 30 processes: ops/s, lost":                        "≥ 1,000, 0 lost",
		"authenticate first call, no index file (rebuilt) ms":    "(once per machine)",
	}
	for row, t := range targets {
		if tab.cells[row] != nil {
			tab.set(row, tab.cols[len(tab.cols)-1], "%s", t)
		}
	}
	// To stdout: go test keeps only the first lines of a benchmark's log.
	fmt.Println("BenchmarkScale figures (ms unless named otherwise):")
	for _, l := range tab.lines() {
		fmt.Println(l)
	}
	b.ReportMetric(0, "ns/op")
}

// scaleFloor measures the no-op server: start-up, calls and RSS.
func scaleFloor(b *testing.B, exe string, tab *scaleTable, calls int) {
	col := tab.cols[0]
	dir := b.TempDir()
	var starts []time.Duration
	var first []time.Duration
	for i := range 5 {
		s := startScaleServer(b, exe, dir, fmt.Sprintf("noop%d", i), noopMCPCommand)
		starts = append(starts, s.startup)
		d, _ := s.timed(b, "noop", nil)
		first = append(first, d)
		s.c.Close()
	}
	s := startScaleServer(b, exe, dir, "noop", noopMCPCommand)
	lat := s.latencies(b, 20, calls, time.Minute, "noop", nil)
	for _, row := range []string{"get_my_profile (w1 task) p50/p99 ms", "get_my_task (w1 task) p50/p99 ms", "get_task 20 sub-tasks (w1) p50/p99 ms",
		"get_next_action t=0 worker p50/p99 ms", "get_my_task (m1 task) p50/p99 ms", "get_next_action t=0 manager p50/p99 ms",
		"get_next_action t=0 chat p50/p99 ms", "get_pending_messages (chat) p50/p99 ms"} {
		tab.set(row, col, "%s", pcts(lat, false))
	}
	tab.set("list_tasks status=done p50/p95/p99 ms", col, "%s", pcts(lat, true))
	tab.set("list_tasks status=done + assignee p50/p99 ms", col, "%s", pcts(lat, false))
	tab.set("authenticate first call, median of 5 ms", col, "%.2f", msf(median(first)))
	tab.set("start → initialized, median of 5 ms", col, "%.1f", msf(median(starts)))
	tab.set("RSS VmHWM / VmRSS MB (max of w1, m1, m3)", col, "%.1f / %.1f",
		float64(procStatusKB(b, s.cmd.Process.Pid, "VmHWM"))/1024, float64(procStatusKB(b, s.cmd.Process.Pid, "VmRSS"))/1024)
	b.ReportMetric(msf(wakePercentile(lat, 50)), "floor-p50-ms")
	s.c.Close()
}

// floorTeam is the floor of the thirty-process phase: thirty no-op servers,
// started once and kept, each making calls driven the way scaleMixed drives
// aipm, from this one process. A call is a write (floorWrite, under one lock
// shared by all thirty) as often as scaleMixedWorker's operations are: 55 in
// 100. It shows what thirty processes on this machine cost before aipm does
// any work: the client's side, the pipes, the scheduler, and the disk for the
// writes. Its rounds alternate with aipm's (scaleThirty), so that each aipm
// round has a floor measured beside it, on the machine as it was then.
type floorTeam struct {
	servers []*scaleServer
	rounds  []thirtyRound
}

func startFloorTeam(b *testing.B, exe string) *floorTeam {
	dir := b.TempDir()
	ft := &floorTeam{}
	for i := range 30 {
		ft.servers = append(ft.servers, startScaleServer(b, exe, dir, fmt.Sprintf("noop%d", i), noopMCPCommand))
	}
	return ft
}

func (ft *floorTeam) close() {
	for _, s := range ft.servers {
		s.c.Close()
	}
}

// round makes n calls in each of the thirty at once.
func (ft *floorTeam) round(b *testing.B, n int) thirtyRound {
	c0, self0 := serversCPU(b, ft.servers), procCPU(b, os.Getpid())
	lats := make([][]time.Duration, len(ft.servers))
	errs := make([]error, len(ft.servers))
	var wg sync.WaitGroup
	t0 := time.Now()
	for i, s := range ft.servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			for range n {
				d, _, err := s.tryTimed("noop", map[string]any{"write": rng.IntN(100) < 55})
				if err != nil {
					errs[i] = err
					return
				}
				lats[i] = append(lats[i], d)
			}
		}()
	}
	wg.Wait()
	r := thirtyRound{elapsed: time.Since(t0), lat: slices.Concat(lats...)}
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	r.ops = len(r.lat)
	r.cpu, r.self = serversCPU(b, ft.servers)-c0, procCPU(b, os.Getpid())-self0
	ft.rounds = append(ft.rounds, r)
	return r
}

// setColumn fills the floor's column of the thirty's rows from every round
// so far.
func (ft *floorTeam) setColumn(tab *scaleTable) {
	col := tab.cols[0]
	mid, all := roundsSummary(ft.rounds)
	tab.set("mixed 30 processes: ops/s, lost", col, "%.0f ops/s (median of %d rounds; %d ops in %.1fs)", mid.rate(), len(ft.rounds), all.ops, all.elapsed.Seconds())
	tab.set("mixed 30: op latency p50/p99 ms", col, "%s", pcts(all.lat, false))
	tab.set("mixed 30: CPU ms per op (30 servers' user+sys)", col, "%.2f (%.1f s over %d ops)", msf(all.cpu)/float64(all.ops), all.cpu.Seconds(), all.ops)
	tab.set("mixed 30: the driving client's CPU ms per op", col, "%.2f", msf(all.self)/float64(all.ops))
}

// thirtyRound is one round of mixed operations in thirty processes, aipm's
// or the floor's: the operations done and lost, the wall time, every
// operation's latency, and the CPU the servers and this process (the client
// driving them) spent.
type thirtyRound struct {
	ops, lost int
	cut       bool // stopped at the time limit
	elapsed   time.Duration
	lat       []time.Duration
	cpu, self time.Duration
}

func (r thirtyRound) rate() float64 { return float64(r.ops) / r.elapsed.Seconds() }

// roundsSummary returns the round of median rate (the lower middle one of an
// even count) and all rounds added up.
func roundsSummary(rs []thirtyRound) (mid, all thirtyRound) {
	byRate := slices.Clone(rs)
	slices.SortFunc(byRate, func(a, b thirtyRound) int {
		switch {
		case a.rate() < b.rate():
			return -1
		case a.rate() > b.rate():
			return 1
		}
		return 0
	})
	mid = byRate[(len(byRate)-1)/2]
	for _, r := range rs {
		all.ops += r.ops
		all.lost += r.lost
		all.cut = all.cut || r.cut
		all.elapsed += r.elapsed
		all.lat = append(all.lat, r.lat...)
		all.cpu += r.cpu
		all.self += r.self
	}
	return mid, all
}

// serversCPU is the user+system time the servers' processes have used.
func serversCPU(b *testing.B, servers []*scaleServer) time.Duration {
	var t time.Duration
	for _, s := range servers {
		t += procCPU(b, s.cmd.Process.Pid)
	}
	return t
}

// scaleRun measures one store (see BenchmarkScale).
func scaleRun(b *testing.B, exe string, st *scaleStore, tab *scaleTable, col string, calls, mixedOps int, floor *floorTeam, report bool) {
	dir := st.dir
	var servers []*scaleServer
	start := func(name string) *scaleServer {
		s := startScaleServer(b, exe, dir, name, "aipm", "mcp")
		servers = append(servers, s)
		return s
	}
	defer func() {
		for _, s := range servers {
			s.c.Close()
		}
	}()
	auth := func(s *scaleServer, agent, purpose string) map[string]any {
		args := map[string]any{"agent_id": agent, "passkey": scalePasskey(agent)}
		if purpose != "" {
			args["purpose"] = purpose
		}
		return s.call(b, "authenticate", args, "success", true)
	}

	// The first process on this machine finds no index file and reads every file.
	scaleProgress("%s: authenticate with no index file", col)
	if err := os.RemoveAll(filepath.Join(dir, ".ai-pm", filestore.IndexDir)); err != nil {
		b.Fatal(err)
	}
	{
		s := startScaleServer(b, exe, dir, "cold", "aipm", "mcp")
		// It reads every file: seconds at 100,000 tasks on a loaded machine.
		ctx, cancel := context.WithTimeout(context.Background(), scaleCallTimeout)
		t0 := time.Now()
		r, err := s.raw(ctx, "authenticate", map[string]any{"agent_id": "w1", "passkey": scalePasskey("w1")})
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		tab.set("authenticate first call, no index file (rebuilt) ms", col, "%.2f", msf(time.Since(t0)))
		// Its first look at a task's history indexes events.jsonl, for this machine.
		d, _ := s.timed(b, "get_task", map[string]any{"task_id": st.w1Task, "session_token": r["session_token"]})
		tab.set("first process: get_task, no history index ms; VmHWM MB", col, "%.2f; %.1f", msf(d),
			float64(procStatusKB(b, s.cmd.Process.Pid, "VmHWM"))/1024)
		s.c.Close()
	}

	// authenticate in fresh processes.
	scaleProgress("%s: authenticate in fresh processes", col)
	var starts, first, warm []time.Duration
	for i := range 5 {
		s := startScaleServer(b, exe, dir, fmt.Sprintf("fresh%d", i), "aipm", "mcp")
		starts = append(starts, s.startup)
		d, _ := s.timed(b, "authenticate", map[string]any{"agent_id": "w1", "passkey": scalePasskey("w1")})
		first = append(first, d)
		if i == 0 {
			for range 5 {
				s.call(b, "logout", nil, "success", true)
				d, _ := s.timed(b, "authenticate", map[string]any{"agent_id": "w1", "passkey": scalePasskey("w1")})
				warm = append(warm, d)
			}
		}
		s.c.Close()
	}
	// A model's first tool call comes a round trip to the model after initialize: by then
	// the server has read the store into its caches (it starts at launch).
	var later []time.Duration
	for i := range 3 {
		s := startScaleServer(b, exe, dir, fmt.Sprintf("later%d", i), "aipm", "mcp")
		time.Sleep(time.Second)
		d, _ := s.timed(b, "authenticate", map[string]any{"agent_id": "w1", "passkey": scalePasskey("w1")})
		later = append(later, d)
		s.c.Close()
	}
	tab.set("authenticate first call, median of 5 ms", col, "%.2f (first %.2f)", msf(median(first)), msf(first[0]))
	tab.set("authenticate first call 1 s after start, median of 3 ms", col, "%.2f", msf(median(later)))
	tab.set("authenticate warm (logout+again), median of 5 ms", col, "%.2f", msf(median(warm)))
	tab.set("start → initialized, median of 5 ms", col, "%.1f", msf(median(starts)))

	// The three sessions of the per-call figures.
	w := start("w1")
	if r := auth(w, "w1", ""); r["purpose"] != "task" || r["task_id"] != st.w1Task {
		b.Fatalf("w1: authenticate gave %v %v, want a task session on %s", r["purpose"], r["task_id"], st.w1Task)
	}
	m := start("m1")
	if r := auth(m, "m1", ""); r["purpose"] != "task" || r["task_id"] != st.m1Task {
		b.Fatalf("m1: authenticate gave %v %v, want a task session on %s", r["purpose"], r["task_id"], st.m1Task)
	}
	c := start(scaleChatAgent)
	auth(c, scaleChatAgent, "chat")
	limit := time.Duration(scaleEnvInt(b, "AIPM_BENCH_TOOL_SECONDS", 15)) * time.Second
	lat := func(s *scaleServer, tool string, args map[string]any) []time.Duration {
		scaleProgress("%s: %s", s.name, tool)
		return s.latencies(b, 20, calls, limit, tool, args)
	}
	rows := []struct {
		row  string
		s    *scaleServer
		tool string
		args map[string]any
	}{
		{"get_my_profile (w1 task) p50/p99 ms", w, "get_my_profile", nil},
		{"get_my_task (w1 task) p50/p99 ms", w, "get_my_task", nil},
		{"get_task 20 sub-tasks (w1) p50/p99 ms", w, "get_task", map[string]any{"task_id": st.w1Task}},
		{"get_next_action t=0 worker p50/p99 ms", w, "get_next_action", map[string]any{"timeout_seconds": 0}},
		{"get_my_task (m1 task) p50/p99 ms", m, "get_my_task", nil},
		{"get_next_action t=0 manager p50/p99 ms", m, "get_next_action", map[string]any{"timeout_seconds": 0}},
		{"get_next_action t=0 chat p50/p99 ms", c, "get_next_action", map[string]any{"timeout_seconds": 0}},
		{"get_pending_messages (chat) p50/p99 ms", c, "get_pending_messages", nil},
	}
	for _, r := range rows {
		ds := lat(r.s, r.tool, r.args)
		tab.set(r.row, col, "%s", pcts(ds, false))
		if report {
			b.ReportMetric(msf(wakePercentile(ds, 50)), r.tool+"-"+r.s.name+"-p50-ms")
		}
	}
	ds := lat(w, "list_tasks", map[string]any{"status": "done"})
	tab.set("list_tasks status=done p50/p95/p99 ms", col, "%s", pcts(ds, true))
	ds = lat(w, "list_tasks", map[string]any{"status": "done", "assignee_id": "w1"})
	tab.set("list_tasks status=done + assignee p50/p99 ms", col, "%s", pcts(ds, false))
	_, size := w.timed(b, "get_task", map[string]any{"task_id": st.w1Task})
	tab.set("get_task 20 sub-tasks: result bytes", col, "%d", size)
	if st.bigTask != "" {
		_, size := w.timed(b, "get_task", map[string]any{"task_id": st.bigTask})
		tab.set("get_task on 400 sub-tasks: result bytes", col, "%d", size)
		if report {
			b.ReportMetric(float64(size), "get_task-400-bytes")
		}
	}
	var hwm, rss int
	for _, s := range []*scaleServer{w, m, c} {
		hwm = max(hwm, procStatusKB(b, s.cmd.Process.Pid, "VmHWM"))
		rss = max(rss, procStatusKB(b, s.cmd.Process.Pid, "VmRSS"))
	}
	tab.set("RSS VmHWM / VmRSS MB (max of w1, m1, m3)", col, "%.1f / %.1f", float64(hwm)/1024, float64(rss)/1024)
	// Idle servers still react to every write; each phase runs alone.
	for _, s := range []*scaleServer{w, m, c} {
		s.c.Close()
	}
	if report {
		b.ReportMetric(float64(hwm)/1024, "VmHWM-MB")
		b.ReportMetric(msf(median(first)), "authenticate-ms")
		b.ReportMetric(msf(median(starts)), "start-ms")
	}

	// Wake latency between two chat sessions.
	sa, sb := start(scaleWakeSender), start(scaleWakeReciver)
	auth(sa, scaleWakeSender, "chat")
	auth(sb, scaleWakeReciver, "chat")
	pair := newWakePair(b, sa.wakeServer, sb.wakeServer, scaleWakeSender, scaleWakeReciver)
	for i := range wakeWarmup {
		pair.round(b, -1-i)
	}
	scaleProgress("wake")
	var wakes []time.Duration
	wantWakes := scaleEnvInt(b, "AIPM_BENCH_WAKE", wakeMinMessages)
	wakeEnd := time.Now().Add(time.Duration(scaleEnvInt(b, "AIPM_BENCH_WAKE_SECONDS", 45)) * time.Second)
	for i := range wantWakes {
		d, _ := pair.round(b, i)
		wakes = append(wakes, d)
		if time.Now().After(wakeEnd) {
			break
		}
	}
	tab.set("wake send → waiting get_next_action p50/p99 ms", col, "%.2f / %.2f (n=%d, settle %.0f ms)",
		msf(wakePercentile(wakes, 50)), msf(wakePercentile(wakes, 99)), len(wakes), msf(pair.settle))
	if report {
		b.ReportMetric(msf(wakePercentile(wakes, 50)), "wake-p50-ms")
	}
	for _, s := range []*scaleServer{sa, sb} {
		s.c.Close()
	}

	// CPU per write across 10 task-session servers.
	scaleProgress("CPU per write")
	cpu := make([]*scaleServer, len(scaleCPUWorkers))
	taskToks := make([]string, len(scaleCPUWorkers))
	for i, a := range scaleCPUWorkers {
		cpu[i] = start(a)
		r := auth(cpu[i], a, "task")
		if r["task_id"] != st.cpuTasks[a] {
			b.Fatalf("%s: task session on %v, want %s", a, r["task_id"], st.cpuTasks[a])
		}
		taskToks[i], _ = r["session_token"].(string)
	}
	sum := func() time.Duration {
		var t time.Duration
		for _, s := range cpu {
			t += procCPU(b, s.cmd.Process.Pid)
		}
		return t
	}
	time.Sleep(time.Second) // let start-up work settle
	writes := scaleEnvInt(b, "AIPM_BENCH_WRITES", 20)
	t0, c0 := time.Now(), sum()
	var cliLat []time.Duration
	for i := range max(writes, 1) {
		t := time.Now()
		scaleCLI(b, exe, dir, "task", "add", fmt.Sprintf("cpu probe %d", i))
		cliLat = append(cliLat, time.Since(t))
	}
	time.Sleep(500 * time.Millisecond)
	busy, window := sum()-c0, time.Since(t0)
	c1 := sum()
	time.Sleep(window)
	idle := sum() - c1
	per := (busy - idle) / time.Duration(max(writes, 1))
	tab.set("CPU per write across 10 task servers ms", col, "%.1f (busy %.0f, idle %.0f over %.1fs)", msf(per), msf(busy), msf(idle), window.Seconds())
	tab.set("aipm task add (CLI) wall p50 ms", col, "%.1f", msf(median(cliLat)))
	// A one-shot status change from the command line: a todo task to backlog and back.
	probe := strings.TrimSpace(scaleCLI(b, exe, dir, "task", "add", "status probe", "--status", "todo"))
	var statusLat []time.Duration
	for i := range max(writes, 2) {
		to := []string{"backlog", "todo"}[i%2]
		t := time.Now()
		scaleCLI(b, exe, dir, "task", "status", probe, to)
		statusLat = append(statusLat, time.Since(t))
	}
	tab.set("aipm task status (CLI) wall p50 ms", col, "%.1f", msf(median(statusLat)))
	// The project's status: counts, blocks, approvals, what each agent does.
	var overLat []time.Duration
	for range max(writes, 2) {
		t := time.Now()
		scaleCLI(b, exe, dir, "status")
		overLat = append(overLat, time.Since(t))
	}
	tab.set("aipm status (CLI) wall p50 ms", col, "%.1f", msf(median(overLat)))
	if report {
		b.ReportMetric(msf(per), "cpu-per-write-ms")
	}

	if mixedOps > 0 {
		scaleProgress("mixed operations")
		ops, lost, elapsed, opLat := scaleMixed(b, st, cpu, scaleCPUWorkers, taskToks, scaleChatSessions(b, cpu, scaleCPUWorkers), mixedOps)
		cut := ""
		if ops < mixedOps*len(cpu) {
			cut = fmt.Sprintf(", stopped at the time limit: %d of %d", ops, mixedOps*len(cpu))
		}
		tab.set("mixed 10 processes: ops/s, lost", col, "%.0f ops/s, %d lost (%d ops in %.1fs%s)", float64(ops)/elapsed.Seconds(), lost, ops, elapsed.Seconds(), cut)
		tab.set("mixed 10: op latency p50/p99 ms", col, "%s", pcts(opLat, false))
		if report {
			b.ReportMetric(float64(ops)/elapsed.Seconds(), "mixed-ops/s")
			b.ReportMetric(float64(lost), "mixed-lost")
		}
		for _, s := range cpu {
			s.c.Close()
		}
		scaleThirty(b, exe, st, tab, col, mixedOps, floor)
	}
}

// scaleTeam is the thirty agents of a round of the last phase, each with an
// in_progress task and an open chat: in the first round w10..w19 and twenty
// more workers (x1..x20, added by the CLI), in round r+1 thirty workers the
// CLI adds (r+1x1..r+1x30, named with an "r" before).
func scaleTeam(b *testing.B, exe string, st *scaleStore, round int) []string {
	team := slices.Clone(scaleCPUWorkers)
	names := func(i int) string { return fmt.Sprintf("x%d", i+1) }
	if round > 0 {
		team = nil
		names = func(i int) string { return fmt.Sprintf("r%dx%d", round+1, i+1) }
	}
	for i := range 30 - len(team) {
		a := names(i)
		team = append(team, a)
		if _, ok := st.cpuTasks[a]; ok {
			continue
		}
		scaleCLI(b, exe, st.dir, "agent", "add", a, "--parent", scaleManager(1+i%scaleManagers), "--passkey", scalePasskey(a))
		id := strings.TrimSpace(scaleCLI(b, exe, st.dir, "task", "add", a+": maintenance", "--status", "todo", "--assign", a))
		scaleCLI(b, exe, st.dir, "task", "status", id, "in_progress")
		st.cpuTasks[a] = id
	}
	for _, a := range team {
		scaleCLI(b, exe, st.dir, "chat", "open", a)
	}
	return team
}

// scaleWarmIndex has one server read the store as the earlier phases do, so
// that the machine's index files are written before the thirty start: a
// store copied from AIPM_BENCH_STORE_CACHE comes without valid ones (they
// name the directory they were made for), and thirty servers that each read
// every conversation file would measure a new machine's first start, not
// the work of a team.
func scaleWarmIndex(b *testing.B, exe string, st *scaleStore) {
	a := scaleCPUWorkers[0]
	s := startScaleServer(b, exe, st.dir, "warm", "aipm", "mcp")
	defer s.c.Close()
	for _, purpose := range []string{"task", "chat"} {
		r := s.call(b, "authenticate", map[string]any{"agent_id": a, "passkey": scalePasskey(a), "purpose": purpose}, "purpose", purpose)
		tok, _ := r["session_token"].(string)
		ctx, cancel := context.WithTimeout(context.Background(), scaleCallTimeout)
		_, err := s.raw(ctx, "get_next_action", map[string]any{"timeout_seconds": 0, "session_token": tok})
		cancel()
		if err != nil {
			b.Fatal(err)
		}
	}
}

// scaleThirty runs the thirty-process phase in rounds. Each round starts a
// team of thirty servers at once, each authenticating its agent (a task
// session), then runs the mixed operations in all of them, after a round of
// the floor: the first round's team is w10..w19 and twenty workers the CLI
// adds, each later round's thirty agents the CLI adds, so that every round
// repeats the first on the store the rounds before it grew.
func scaleThirty(b *testing.B, exe string, st *scaleStore, tab *scaleTable, col string, mixedOps int, floor *floorTeam) {
	// Rounds, each beside a round of the floor just before it: the disk and the
	// CPU this machine lends move by a sixth between minutes, and a figure with
	// no floor taken at the same time cannot tell aipm's share from the machine's.
	rounds := max(scaleEnvInt(b, "AIPM_BENCH_THIRTY_ROUNDS", 3), 1)
	var mine []thirtyRound
	var pairs []string
	for r := range rounds {
		scaleProgress("%s: round %d of %d: 30 servers at once", col, r+1, rounds)
		team := scaleTeam(b, exe, st, r)
		servers, toks := scaleStartThirty(b, exe, st, tab, col, team, r == 0)
		scaleProgress("%s: round %d of %d: the floor's mixed operations", col, r+1, rounds)
		fl := floor.round(b, mixedOps)
		scaleProgress("%s: round %d of %d: mixed operations in 30 processes", col, r+1, rounds)
		chatToks := scaleChatSessions(b, servers, team)
		c0, self0 := serversCPU(b, servers), procCPU(b, os.Getpid())
		ops, lost, elapsed, opLat := scaleMixed(b, st, servers, team, toks, chatToks, mixedOps)
		mine = append(mine, thirtyRound{ops: ops, lost: lost, cut: ops < mixedOps*len(servers), elapsed: elapsed, lat: opLat,
			cpu: serversCPU(b, servers) - c0, self: procCPU(b, os.Getpid()) - self0})
		for _, s := range servers {
			s.c.Close()
		}
		pairs = append(pairs, fmt.Sprintf("%.0f / %.0f", mine[r].rate(), fl.rate()))
		if r == 0 {
			scaleFirstCallAfter(b, exe, st, tab, col)
		}
	}
	floor.setColumn(tab)
	mid, all := roundsSummary(mine)
	tab.set("mixed 30: CPU ms per op (30 servers' user+sys)", col, "%.2f (%.1f s over %d ops)", msf(all.cpu)/float64(max(all.ops, 1)), all.cpu.Seconds(), all.ops)
	tab.set("mixed 30: the driving client's CPU ms per op", col, "%.2f", msf(all.self)/float64(max(all.ops, 1)))
	cut := ""
	if all.cut {
		cut = ", a round stopped at the time limit"
	}
	tab.set("mixed 30 processes: ops/s, lost", col, "%.0f ops/s, %d lost (median of %d rounds; %d ops in %.1fs%s)", mid.rate(), all.lost, rounds, all.ops, all.elapsed.Seconds(), cut)
	tab.set("mixed 30: each round, aipm / floor ops/s", col, "%s", strings.Join(pairs, ", "))
	tab.set("mixed 30: op latency p50/p99 ms", col, "%s", pcts(all.lat, false))
}

// scaleStartThirty starts a server for each agent of team at once, each
// authenticating a task session, and returns the servers and the sessions'
// tokens. With report set it puts how the start went in the table.
func scaleStartThirty(b *testing.B, exe string, st *scaleStore, tab *scaleTable, col string, team []string, report bool) ([]*scaleServer, []string) {
	servers := make([]*scaleServer, len(team))
	toks := make([]string, len(team))
	auth := make([]time.Duration, len(team))
	errs := make([]error, len(team))
	var wg sync.WaitGroup
	t0 := time.Now()
	for i, a := range team {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := tryScaleServer(exe, st.dir, a, "aipm", "mcp")
			servers[i] = s
			if err != nil {
				errs[i] = err
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), scaleCallTimeout)
			defer cancel()
			t := time.Now()
			r, err := s.raw(ctx, "authenticate", map[string]any{"agent_id": a, "passkey": scalePasskey(a), "purpose": "task"})
			auth[i] = time.Since(t)
			if err != nil {
				errs[i] = fmt.Errorf("%s: authenticate: %v", a, err)
				return
			}
			toks[i], _ = r["session_token"].(string)
		}()
	}
	wg.Wait()
	wall := time.Since(t0)
	b.Cleanup(func() {
		for _, s := range servers {
			if s != nil {
				s.c.Close()
			}
		}
	})
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	if !report {
		return servers, toks
	}
	var hwm []time.Duration // KB, as durations for the percentile helper
	for _, s := range servers {
		hwm = append(hwm, time.Duration(procStatusKB(b, s.cmd.Process.Pid, "VmHWM")))
	}
	tab.set("30 servers started at once: all authenticated s", col, "%.2f", wall.Seconds())
	tab.set("30 servers: first authenticate p50/max ms", col, "%.1f / %.1f", msf(median(auth)), msf(slices.Max(auth)))
	tab.set("30 servers: VmHWM MB per aipm mcp, median / max", col, "%.1f / %.1f", float64(median(hwm))/1024, float64(slices.Max(hwm))/1024)
	return servers, toks
}

// scaleFirstCallAfter times the first call of servers started right after the
// thirty's first round. Such a server begins from an index file that may lag
// the journal by all the thirty wrote since it was last saved: the most a
// start has to catch up on.
func scaleFirstCallAfter(b *testing.B, exe string, st *scaleStore, tab *scaleTable, col string) {
	var first []time.Duration
	for i := range 3 {
		s := startScaleServer(b, exe, st.dir, fmt.Sprintf("after%d", i), "aipm", "mcp")
		d, _ := s.timed(b, "authenticate", map[string]any{"agent_id": "w1", "passkey": scalePasskey("w1")})
		first = append(first, d)
		s.call(b, "logout", nil, "success", true)
		s.c.Close()
	}
	tab.set("authenticate first call after mixed 30, median of 3 ms", col, "%.2f", msf(median(first)))
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// scaleMixed runs n operations in each of the servers at once: each is a
// worker in a task session (its in_progress task, token in taskToks) that
// also opens a chat session; every call names its session by token. It returns the operations done, the acknowledged writes missing
// from the files afterwards, the wall time and every operation's latency.
func scaleMixed(b *testing.B, st *scaleStore, servers []*scaleServer, agents, taskToks, chatToks []string, n int) (int, int, time.Duration, []time.Duration) {
	type acked struct {
		tasks  map[string]string // task id → status last acknowledged
		titles map[string]string
		msgs   []string
		lat    []time.Duration
		err    error
	}
	results := make([]*acked, len(servers))
	var wg sync.WaitGroup
	t0 := time.Now()
	deadline := t0.Add(time.Duration(scaleEnvInt(b, "AIPM_BENCH_MIXED_SECONDS", 90)) * time.Second)
	for i, s := range servers {
		res := &acked{tasks: map[string]string{}, titles: map[string]string{}}
		results[i] = res
		wg.Add(1)
		go func() {
			defer wg.Done()
			res.err = scaleMixedWorker(s, agents[i], taskToks[i], chatToks[i], n, deadline, res.tasks, res.titles, &res.msgs, &res.lat)
		}()
	}
	wg.Wait()
	elapsed := time.Since(t0)
	ops := 0
	var lat []time.Duration
	for i, r := range results {
		if r.err != nil {
			b.Fatalf("mixed, %s: %v%s", agents[i], r.err, servers[i].stderrNote())
		}
		ops += len(r.lat)
		lat = append(lat, r.lat...)
	}
	// Every acknowledged write must be in the files.
	lost := 0
	root := filepath.Join(st.dir, ".ai-pm")
	mailIDs := func(agent string) map[string]bool {
		ids := map[string]bool{}
		f, err := os.Open(filepath.Join(root, "agents", agent, "chat.jsonl"))
		if errors.Is(err, os.ErrNotExist) {
			return ids // no message yet: a run stopped at its time limit before this agent sent one
		}
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var m filestore.Message
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				ids[m.ID] = true
			}
		}
		return ids
	}
	owner := mailIDs("owner")
	for i, r := range results {
		for id, status := range r.tasks {
			var t filestore.Task
			data, err := os.ReadFile(filepath.Join(root, "tasks", id+".json"))
			if err != nil || json.Unmarshal(data, &t) != nil || t.Status != status || t.Title != r.titles[id] {
				b.Logf("mixed: lost task write %s (want %s %q; file: %s %q, %v)", id, status, r.titles[id], t.Status, t.Title, err)
				lost++
			}
		}
		mine := mailIDs(agents[i])
		for _, id := range r.msgs {
			if !owner[id] || !mine[id] {
				b.Logf("mixed: lost message %s (owner's mailbox %v, sender's %v)", id, owner[id], mine[id])
				lost++
			}
		}
	}
	return ops, lost, elapsed, lat
}

// scaleChatSessions opens a chat session for each agent in its server, beside
// its task session, and returns their tokens.
func scaleChatSessions(b *testing.B, servers []*scaleServer, agents []string) []string {
	toks := make([]string, len(servers))
	for i, s := range servers {
		a := agents[i]
		r := s.call(b, "authenticate", map[string]any{"agent_id": a, "passkey": scalePasskey(a), "purpose": "chat"}, "purpose", "chat")
		toks[i], _ = r["session_token"].(string)
	}
	return toks
}

// scaleMixedWorker runs n operations of one worker: reads, sub-tasks created
// and moved todo → in_progress → done, and messages to the owner.
func scaleMixedWorker(s *scaleServer, agent, taskTok, chatTok string, n int, deadline time.Time, tasks, titles map[string]string, msgs *[]string, lat *[]time.Duration) error {
	rng := rand.New(rand.NewPCG(uint64(len(agent)), uint64(agent[len(agent)-1])))
	var todo, started []string
	// What the worker reads of an answer; the rest of it is only checked to be JSON.
	type answer struct {
		Task struct {
			ID string `json:"id"`
		} `json:"task"`
		MessageID string `json:"message_id"`
	}
	call := func(tool string, args map[string]any) (answer, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		t := time.Now()
		var r answer
		err := s.rawInto(ctx, tool, args, &r)
		*lat = append(*lat, time.Since(t))
		return r, err
	}
	for i := range n {
		if time.Now().After(deadline) {
			break
		}
		var err error
		switch r := rng.IntN(100); {
		case r < 25:
			_, err = call("get_my_task", map[string]any{"session_token": taskTok})
		case r < 45:
			_, err = call("list_tasks", map[string]any{"status": "todo", "limit": 20, "session_token": taskTok})
		case r < 65 || (r < 85 && len(todo) == 0 && len(started) == 0):
			title := fmt.Sprintf("%s mixed %d", agent, i)
			var res answer
			if res, err = call("create_task", map[string]any{"title": title, "session_token": taskTok}); err == nil {
				id := res.Task.ID
				if id == "" {
					return fmt.Errorf("create_task answered no task id: %v", res)
				}
				tasks[id], titles[id] = filestore.StatusTodo, title
				todo = append(todo, id)
			}
		case r < 85:
			var id, to string
			if len(started) > 0 && (len(todo) == 0 || rng.IntN(2) == 0) {
				id, started, to = started[0], started[1:], filestore.StatusDone
			} else {
				id, todo, to = todo[0], todo[1:], filestore.StatusInProgress
			}
			if _, err = call("update_task_status", map[string]any{"task_id": id, "status": to, "session_token": taskTok}); err == nil {
				tasks[id] = to
				if to == filestore.StatusInProgress {
					started = append(started, id)
				}
			}
		default:
			var res answer
			if res, err = call("send_message", map[string]any{"target_agent_id": "owner", "content": fmt.Sprintf("%s: progress note %d", agent, i),
				"session_token": chatTok}); err == nil {
				*msgs = append(*msgs, res.MessageID)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}
