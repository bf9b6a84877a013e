package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/aipm/aipm/tools"
	"github.com/aipm/aipm/watch"
	"github.com/mark3labs/mcp-go/server"
)

// cmdMCP serves MCP over stdin/stdout for one agent process. When stdin closes (the agent
// exited) or a signal arrives, the sessions this process opened end at once.
func (a *app) cmdMCP(args []string) error {
	fs := newFlags(a, "mcp")
	if _, err := fs.parse(args, 0, 0, ""); err != nil {
		return err
	}
	// Before anything is read: the requests on stdin speak for the session they open.
	if err := guardStdin(a.stdin); err != nil {
		return err
	}
	s, err := a.open()
	if err != nil {
		return err
	}
	// AIPM_CPUPROFILE=dir writes a CPU profile of this server to dir/mcp-<pid>.pprof when
	// it exits, for looking into the figures of `make bench`.
	if dir := a.getenv("AIPM_CPUPROFILE"); dir != "" {
		if f, err := os.Create(filepath.Join(dir, fmt.Sprintf("mcp-%d.pprof", os.Getpid()))); err == nil {
			if pprof.StartCPUProfile(f) == nil {
				defer func() { pprof.StopCPUProfile(); f.Close() }()
			}
		}
	}
	// AIPM_MEMPROFILE=dir writes a heap profile of this server to dir/mcp-<pid>.heap when it
	// exits.
	if dir := a.getenv("AIPM_MEMPROFILE"); dir != "" {
		defer func() {
			if f, err := os.Create(filepath.Join(dir, fmt.Sprintf("mcp-%d.heap", os.Getpid()))); err == nil {
				pprof.Lookup("heap").WriteTo(f, 0)
				f.Close()
			}
		}()
	}
	logf := func(format string, args ...any) { fmt.Fprintf(a.stderr, "aipm mcp: "+format+"\n", args...) }
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The watcher turns any process's write under .ai-pm into an immediate wake-up of this
	// server's long-polls.
	hub := &watch.Hub{}
	if err := tools.Watch(ctx, s, hub, logf); err != nil {
		return err
	}
	tuneMemory(a.getenv)
	go func() {
		s.Warm() // read the store into the caches while the client initializes, on every core
		// Then one core is enough for one agent's calls. A team runs a server per agent, each
		// woken by every other's writes: with a scheduler thread per core in each of them,
		// idle threads spin looking for work that one thread would have done (a tenth of the
		// CPU of thirty busy servers on two cores). GOMAXPROCS in the environment wins.
		if a.getenv("GOMAXPROCS") == "" {
			runtime.GOMAXPROCS(1)
		}
		// The limit follows the caches: a store much larger than it was made for, or a
		// live heap that grows over hours of calls, must not keep the collector running.
		if a.getenv("GOMEMLIMIT") == "" {
			followMemoryLimit(ctx, memoryLimitEvery)
		}
	}()
	srv := tools.New(s, tools.Options{Logf: logf, Hub: hub, SpawnTicket: a.getenv("AIPM_SPAWN_TICKET")})
	go srv.Run(ctx) // notifications derived from others' changes to this agent's tasks
	go tools.KeepConversations(ctx, s, hub, logf)
	ss := server.NewStdioServer(srv.MCP())
	ss.SetErrorLogger(newStderrLogger(a))
	server.WithWorkerPoolSize(tools.WorkerPool)(ss)
	err = ss.Listen(ctx, a.stdin, srv.Output(a.stdout))
	reason := "stdin_closed"
	if ctx.Err() != nil {
		reason = "signal"
	}
	srv.Close(reason)
	if err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

func newStderrLogger(a *app) *log.Logger {
	return log.New(a.stderr, "aipm mcp: ", 0)
}

// mcpMemoryLimit is the soft limit of a server's Go memory. Its live heap is the caches
// (about 15 MB at 100,000 tasks); the limit bounds what garbage adds to it at moments of
// many allocations (loading the index, a burst of calls), which the GC target alone
// lets grow past 40 MB of resident memory in a server that runs for long.
const mcpMemoryLimit = 26 << 20

// memoryLimitFor is the soft memory limit of a server whose caches hold live bytes: the
// default, or twice the live heap of a store too large for it, so that the collector does
// not run without end to stay under a limit the caches alone exceed.
func memoryLimitFor(live uint64) int64 {
	return max(mcpMemoryLimit, int64(2*live))
}

// memoryLimitEvery is how often a server sets its memory limit anew from its live heap.
const memoryLimitEvery = 5 * time.Second

// followMemoryLimit sets the memory limit from the live heap now and then every interval,
// until ctx ends.
func followMemoryLimit(ctx context.Context, every time.Duration) {
	debug.SetMemoryLimit(memoryLimitFor(liveHeap()))
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				debug.SetMemoryLimit(memoryLimitFor(liveHeap()))
			}
		}
	}()
}

// liveHeap is the heap the last garbage collection found live.
func liveHeap() uint64 {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return sample[0].Value.Uint64()
}

// tuneMemory sets the garbage collector of a server. The caches hold the store's entities
// for its life; the soft limit keeps its memory near what they need at a large store,
// where the collector runs more often, and Go's default target (100) lets a small one
// collect less often than a lower target would (40 cost thirty busy servers about 12%
// more CPU). GOGC and GOMEMLIMIT in the environment win.
func tuneMemory(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(100)
	}
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(mcpMemoryLimit)
	}
}
