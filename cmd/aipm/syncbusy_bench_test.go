package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aipm/aipm/cmd/aipm/internal/gitstate"
	"github.com/aipm/aipm/filestore"
)

// busyClone is one machine of BenchmarkSyncBusy: its store, its sync loop and what
// they did.
type busyClone struct {
	name  string
	dir   string
	store *filestore.Store
	sync  *gitstate.Syncer
	tasks []string // the tasks its writer moves (no other clone's writer moves them)

	mu          sync.Mutex
	rounds      int // rounds that ended (failed ones included)
	failed      int // rounds that returned an error
	gaveUp      int // of those, rounds that gave up after refused pushes
	rejected    int // refused pushes, over every round
	pushed      int
	maxWaiting  int // most commits waiting unpushed, as `aipm status` counts them
	lastErr     string
	transitions int
	messages    int
	surprises   int // moves that found the task not as this clone's writer left it
}

// BenchmarkSyncBusy measures whether the sync keeps up with a busy team on three
// machines: a bare origin and three clones of it, each with a writer that moves one
// of its tasks (todo ⇄ blocked) and sends one chat message every 200 ms
// (AIPM_BENCH_BUSY_EVERY_MS) and a sync loop (gitstate.Syncer.Loop, as `aipm run`
// runs it: a round every 2 s and after each local change), for 60 s
// (AIPM_BENCH_BUSY_SECONDS), on a project of 1,000 tasks (AIPM_BENCH_BUSY_TASKS).
//
// It reports per clone the rounds per minute, the rounds that failed (and gave up
// after refused pushes), the pushes refused, and the most and the final commits
// waiting unpushed (gitstate.Unpushed, sampled every 250 ms); and, on clone A, the
// growth of .git per 1,000 transitions as the sync leaves it (loose objects and the
// packs it made) and after `git gc`.
func BenchmarkSyncBusy(b *testing.B) {
	exe, dir, origin, a := syncOrigin(b)
	total := scaleEnvInt(b, "AIPM_BENCH_BUSY_TASKS", 1_000)
	fixtures := 21 + 21 + len(scaleCPUWorkers)*6
	gen := buildScaleStore(b, exe, a, scaleSize{Name: "busy", Messages: 2_000, Conversations: 20,
		Background: max(total-fixtures, 0)})
	every := time.Duration(scaleEnvInt(b, "AIPM_BENCH_BUSY_EVERY_MS", 200)) * time.Millisecond
	length := time.Duration(scaleEnvInt(b, "AIPM_BENCH_BUSY_SECONDS", 60)) * time.Second
	ctx := context.Background()

	clones := []*busyClone{{name: "A", dir: a}, {name: "B"}, {name: "C"}}
	for i, c := range clones {
		if i > 0 {
			c.dir = syncClone(b, dir, origin, c.name, false)
			scaleCLI(b, exe, c.dir, "init")
		}
		s, err := filestore.Open(c.dir, filestore.Options{})
		if err != nil {
			b.Fatal(err)
		}
		c.store, c.sync = s, newStateSyncer(s, "origin", io.Discard)
		if _, err := c.sync.Once(ctx); err != nil {
			b.Fatalf("clone %s: first round: %v", c.name, err)
		}
	}
	for _, c := range clones { // every clone at the same state before the run
		if _, err := c.sync.Once(ctx); err != nil {
			b.Fatal(err)
		}
	}
	todo, err := clones[0].store.Tasks(filestore.TaskFilter{Status: filestore.StatusTodo})
	if err != nil || len(todo) < 3 {
		b.Fatalf("want 3 todo tasks to move, have %d: %v", len(todo), err)
	}
	for i, t := range todo {
		c := clones[i%3]
		c.tasks = append(c.tasks, t.ID)
	}
	benchGit(b, a, "gc", "-q", "--prune=now")
	l0, p0 := repoKiB(b, a)

	b.ResetTimer()
	runCtx, stopRun := context.WithCancel(ctx)
	writeCtx, stopWrite := context.WithTimeout(ctx, length)
	defer stopWrite()
	var loops, writers, samplers sync.WaitGroup
	owner := filestore.Actor{ID: "owner", Via: filestore.ViaCLI}
	t0 := time.Now()
	for k, c := range clones {
		wake := make(chan struct{}, 1)
		loops.Add(1)
		go func() {
			defer loops.Done()
			c.sync.Loop(runCtx, defaultSyncInterval, wake, func(r *gitstate.Round, err error) {
				c.mu.Lock()
				defer c.mu.Unlock()
				c.rounds++
				if r != nil {
					c.rejected += r.Rejected
					if r.Pushed {
						c.pushed++
					}
				}
				if err != nil {
					c.failed++
					c.lastErr = err.Error()
					if r != nil && r.Rejected > 0 {
						c.gaveUp++
					}
				}
			})
		}()
		writers.Add(1)
		go func() {
			defer writers.Done()
			tick := time.NewTicker(every)
			defer tick.Stop()
			for i := 0; ; i++ {
				select {
				case <-writeCtx.Done():
					return
				case <-tick.C:
				}
				id := c.tasks[(i/2)%len(c.tasks)]
				to := filestore.StatusBlocked
				if i%2 == 1 {
					to = filestore.StatusTodo
				}
				if cur, err := c.store.Task(id); err == nil && cur.Status == to {
					// Not what this writer left: a merge brought another status.
					c.mu.Lock()
					c.surprises++
					c.mu.Unlock()
					to = filestore.StatusTodo
					if cur.Status == filestore.StatusTodo {
						to = filestore.StatusBlocked
					}
				}
				if _, err := c.store.SetTaskStatus(owner, id, to, "busy"); err != nil {
					b.Errorf("clone %s: move %s: %v", c.name, id, err)
					return
				}
				if _, err := c.store.SendMessage(owner, filestore.SendRequest{To: scaleWorker(1 + (i+k)%9),
					Content: fmt.Sprintf("from %s %d: how far is it?", c.name, i)}); err != nil {
					b.Errorf("clone %s: send: %v", c.name, err)
					return
				}
				c.mu.Lock()
				c.transitions++
				c.messages++
				c.mu.Unlock()
				select { // what the store's watcher does for `aipm run`
				case wake <- struct{}{}:
				default:
				}
			}
		}()
		samplers.Add(1)
		go func() {
			defer samplers.Done()
			tick := time.NewTicker(250 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-runCtx.Done():
					return
				case <-tick.C:
				}
				if n, err := gitstate.Unpushed(c.dir, "origin"); err == nil {
					c.mu.Lock()
					c.maxWaiting = max(c.maxWaiting, n)
					c.mu.Unlock()
				}
			}
		}()
	}
	writers.Wait()
	elapsed := time.Since(t0)
	final := make([]int, len(clones))
	for i, c := range clones {
		final[i], _ = gitstate.Unpushed(c.dir, "origin")
	}
	stopRun()
	loops.Wait()
	samplers.Wait()
	for range 2 { // every clone takes what the others pushed last
		for _, c := range clones {
			if _, err := c.sync.Once(ctx); err != nil {
				b.Fatalf("clone %s: closing round: %v", c.name, err)
			}
		}
	}
	b.StopTimer()

	transitions, rounds, gaveUp, maxWaiting := 0, 0, 0, 0
	fmt.Printf("\nsync under three busy clones, %d tasks, a move and a message every %v on each, %v (load %s)\n",
		gen.tasks, every, elapsed.Round(time.Second), loadAverage())
	fmt.Printf("%-6s %8s %10s %7s %8s %8s %7s %11s %13s\n", "clone", "rounds", "rounds/min", "failed", "gave-up", "refused", "pushed", "max-waiting", "final-waiting")
	for i, c := range clones {
		fmt.Printf("%-6s %8d %10.1f %7d %8d %8d %7d %11d %13d\n", c.name, c.rounds, float64(c.rounds)/elapsed.Minutes(),
			c.failed, c.gaveUp, c.rejected, c.pushed, c.maxWaiting, final[i])
		if c.surprises > 0 {
			fmt.Printf("       %d move(s) found the task not as the writer left it\n", c.surprises)
		}
		if c.lastErr != "" {
			fmt.Printf("       last error: %s\n", c.lastErr)
		}
		transitions += c.transitions
		rounds += c.rounds
		gaveUp += c.gaveUp
		maxWaiting = max(maxWaiting, c.maxWaiting)
	}
	l1, p1 := repoKiB(b, a)
	benchGit(b, a, "gc", "-q", "--prune=now")
	l2, p2 := repoKiB(b, a)
	per := func(kib int) float64 { return float64(kib) / 1024 * 1000 / float64(max(transitions, 1)) }
	before, after := per(l1+p1-l0-p0), per(l2+p2-l0-p0)
	fmt.Printf("clone A's .git over %d transitions: +%d KiB as the sync left it (%d KiB loose, %d KiB packed), +%d KiB after git gc\n",
		transitions, l1+p1-l0-p0, l1-l0, p1-p0, l2+p2-l0-p0)
	fmt.Printf("per 1,000 transitions: %.1f MB before gc, %.1f MB after\n", before, after)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(rounds)/3/elapsed.Minutes(), "rounds/min/clone")
	b.ReportMetric(float64(gaveUp), "gave-up")
	b.ReportMetric(float64(maxWaiting), "max-waiting")
	b.ReportMetric(before, "MB/1k-before-gc")
	b.ReportMetric(after, "MB/1k-after-gc")
}

// loadAverage is the machine's load over 1, 5 and 15 minutes, as uptime prints it.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
