package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aipm/aipm/cmd/aipm/internal/gitstate"
	"github.com/aipm/aipm/filestore"
)

// syncGit gives the benchmark's git a known identity and no user or system
// configuration; every process it starts inherits it.
func syncGit(b *testing.B) string {
	b.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("needs git")
	}
	dir := b.TempDir()
	b.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	b.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(dir, "gitconfig"))
	for k, v := range map[string]string{"GIT_AUTHOR_NAME": "Bench", "GIT_COMMITTER_NAME": "Bench",
		"GIT_AUTHOR_EMAIL": "bench@example.com", "GIT_COMMITTER_EMAIL": "bench@example.com"} {
		b.Setenv(k, v)
	}
	return dir
}

func benchGit(b *testing.B, dir string, args ...string) string {
	b.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// syncClone makes a clone of origin at dir/name with a first code commit
// pushed when it is the first clone.
func syncClone(b *testing.B, dir, origin, name string, first bool) string {
	b.Helper()
	benchGit(b, dir, "clone", "-q", origin, name)
	c := filepath.Join(dir, name)
	if first {
		benchGit(b, c, "commit", "-q", "--allow-empty", "-m", "code")
		benchGit(b, c, "push", "-q", "origin", "HEAD")
	}
	return c
}

// syncOrigin makes what every sync benchmark starts from: a bare origin and clone A of it
// (a code commit pushed), with this test binary as aipm; it returns the binary, the
// directory holding them, the origin's path and A's.
func syncOrigin(b *testing.B) (exe, dir, origin, a string) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	dir = syncGit(b)
	origin = filepath.Join(dir, "origin.git")
	benchGit(b, dir, "init", "-q", "--bare", origin)
	return exe, dir, origin, syncClone(b, dir, origin, "a", true)
}

// syncBackground is how many generated tasks bring a sync benchmark's store, with the
// generator's fixtures, to AIPM_BENCH_TASKS (10,000).
func syncBackground(b *testing.B) int {
	fixtures := 21 + 21 + len(scaleCPUWorkers)*6
	return max(scaleEnvInt(b, "AIPM_BENCH_TASKS", 10_000)-fixtures, 0)
}

// BenchmarkSyncRound measures one `aipm sync` round (gitstate.Syncer.Once, the
// code `aipm sync --once` and `aipm run` run) on a project of 10,000 tasks
// (AIPM_BENCH_TASKS) and 10,000 messages (AIPM_BENCH_MESSAGES), generated
// as for BenchmarkScale, between two clones of a bare origin on this disk:
//
//   - round-idle: nothing changed anywhere (commit finds nothing, fetch,
//     nothing to push);
//   - round-push: clone A changed one task's status and sent one message
//     (commit, fetch, push);
//   - round-merge: clone C, which also sent a message, takes A's change
//     (commit, fetch, a three-way merge of the changed paths written through
//     the store, merge commit, push).
//
// It logs the first round (committing the generated store) and p50/p99 of
// each kind over at least 20 rounds (b.N more).
func BenchmarkSyncRound(b *testing.B) {
	exe, dir, origin, a := syncOrigin(b)
	sz := scaleSize{Name: "sync", Messages: scaleEnvInt(b, "AIPM_BENCH_MESSAGES", 10_000), Conversations: 100, Events: 20_000,
		Background: syncBackground(b)}
	gen := buildScaleStore(b, exe, a, sz)
	sa, err := filestore.Open(a, filestore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if !gitstate.Attached(a) {
		b.Fatal("aipm init in a clone with a remote did not put the state on its branch")
	}
	ctx := context.Background()
	ya := &gitstate.Syncer{Store: sa, Remote: "origin"}
	t0 := time.Now()
	if _, err := ya.Once(ctx); err != nil {
		b.Fatal(err)
	}
	first := time.Since(t0)
	c := syncClone(b, dir, origin, "c", false)
	t0 = time.Now()
	scaleCLI(b, exe, c, "init")
	initC := time.Since(t0)
	sc, err := filestore.Open(c, filestore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	yc := &gitstate.Syncer{Store: sc, Remote: "origin"}

	owner := filestore.Actor{ID: "owner", Via: filestore.ViaCLI}
	tasks, err := sa.Tasks(filestore.TaskFilter{Status: filestore.StatusTodo})
	if err != nil || len(tasks) == 0 {
		b.Fatalf("no todo task to change: %v", err)
	}
	n := max(b.N, 20)
	var idle, pushed, merged []time.Duration
	b.ResetTimer()
	for i := range n {
		t0 := time.Now()
		if r, err := ya.Once(ctx); err != nil || r.Committed || r.Pushed {
			b.Fatalf("idle round: %+v, %v", r, err)
		}
		idle = append(idle, time.Since(t0))

		tk := tasks[i%len(tasks)]
		to := filestore.StatusBlocked
		if cur, _ := sa.Task(tk.ID); cur != nil && cur.Status == filestore.StatusBlocked {
			to = filestore.StatusTodo
		}
		if _, err := sa.SetTaskStatus(owner, tk.ID, to, "bench"); err != nil {
			b.Fatal(err)
		}
		if _, err := sa.SendMessage(owner, filestore.SendRequest{To: "w1", Content: fmt.Sprintf("from A %d", i)}); err != nil {
			b.Fatal(err)
		}
		t0 = time.Now()
		if r, err := ya.Once(ctx); err != nil || !r.Pushed {
			b.Fatalf("round with a change: %+v, %v", r, err)
		}
		pushed = append(pushed, time.Since(t0))

		if _, err := sc.SendMessage(owner, filestore.SendRequest{To: "w1", Content: fmt.Sprintf("from C %d", i)}); err != nil {
			b.Fatal(err)
		}
		t0 = time.Now()
		if r, err := yc.Once(ctx); err != nil || len(r.Merged) == 0 || !r.Pushed {
			b.Fatalf("round merging A's change: %+v, %v", r, err)
		}
		merged = append(merged, time.Since(t0))
		if _, err := ya.Once(ctx); err != nil { // A takes C's merge (a fast-forward)
			b.Fatal(err)
		}
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(wakePercentile(idle, 50)), "idle-p50-ms")
	b.ReportMetric(ms(wakePercentile(pushed, 50)), "push-p50-ms")
	b.ReportMetric(ms(wakePercentile(merged, 50)), "merge-p50-ms")
	b.Logf("sync at %d tasks, %d messages, %d events: first round (commit the whole store, push) %v; `aipm init` of a new clone %v",
		gen.tasks, gen.messages, gen.events, first.Round(time.Millisecond), initC.Round(time.Millisecond))
	b.Logf("one sync round over %d rounds: idle p50=%.1fms p99=%.1fms; commit+push of one change p50=%.1fms p99=%.1fms; "+
		"commit+fetch+merge+push p50=%.1fms p99=%.1fms",
		n, ms(wakePercentile(idle, 50)), ms(wakePercentile(idle, 99)), ms(wakePercentile(pushed, 50)), ms(wakePercentile(pushed, 99)),
		ms(wakePercentile(merged, 50)), ms(wakePercentile(merged, 99)))
}

// BenchmarkSyncWake measures what a person on another machine waits: a human
// on clone A sends a message (`aipm chat send`, a real process) to agent c,
// whose chat session on clone C waits in get_next_action (a real `aipm mcp`);
// both clones run `aipm sync` at the default interval (2 s), as `aipm run`
// does. The latency is from the send command's return to c's wake-up
// (get_pending_messages with that message), over at least 20 messages
// (AIPM_BENCH_SYNC_MESSAGES, or b.N).
func BenchmarkSyncWake(b *testing.B) {
	exe, dir, origin, a := syncOrigin(b)
	scaleCLI(b, exe, a, "init", "--name", "syncwake", "--owner", "owner")
	scaleCLI(b, exe, a, "agent", "add", "c", "--parent", "owner", "--passkey", "c-passkey")
	scaleCLI(b, exe, a, "sync", "--once")
	c := syncClone(b, dir, origin, "c", false)
	scaleCLI(b, exe, c, "init")
	scaleCLI(b, exe, c, "chat", "open", "c") // an open chat is this machine's: chat work for c here
	// The passkey is machine-local: C gets its own.
	key := ""
	for _, l := range strings.Split(scaleCLI(b, exe, c, "agent", "passkey", "c"), "\n") {
		if k, ok := strings.CutPrefix(l, "passkey: "); ok {
			key = strings.TrimSpace(k)
		}
	}
	if key == "" {
		b.Fatal("no passkey printed for c")
	}
	for _, clone := range []string{a, c} {
		cmd := exec.Command(exe, "sync")
		cmd.Args[0] = "aipm"
		cmd.Dir = clone
		cmd.Env = wakeEnv()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			cmd.Process.Signal(syscall.SIGINT)
			cmd.Wait()
		})
	}
	sc := startWakeServer(b, exe, c, "C")
	sc.call(b, "authenticate", map[string]any{"agent_id": "c", "passkey": key}, "purpose", "chat")

	n := max(b.N, scaleEnvInt(b, "AIPM_BENCH_SYNC_MESSAGES", 20))
	lats := make([]time.Duration, 0, n)
	b.ResetTimer()
	for i := range n {
		type wake struct {
			at  time.Time
			res map[string]any
			err error
		}
		done := make(chan wake, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			res, err := sc.raw(ctx, "get_next_action", map[string]any{"timeout_seconds": 50})
			done <- wake{time.Now(), res, err}
		}()
		time.Sleep(50 * time.Millisecond) // c's server reaches its wait (see BenchmarkWakeAcrossProcesses)
		content := fmt.Sprintf("across machines %d", i)
		scaleCLI(b, exe, a, "chat", "send", "--to", "c", content)
		tSent := time.Now()
		var w wake
		select {
		case w = <-done:
		case <-time.After(30 * time.Second):
			b.Fatalf("message %d: c on clone C did not wake within 30 s%s", i, sc.stderrNote())
		}
		if w.err != nil || w.res["action"] != "get_pending_messages" {
			b.Fatalf("message %d: c's get_next_action answered %v, %v", i, w.res, w.err)
		}
		pm := sc.call(b, "get_pending_messages", nil, "count", 1.0)
		msgs, _ := pm["pending_messages"].([]any)
		if m, _ := msgs[0].(map[string]any); m["content"] != content {
			b.Fatalf("message %d: c read %v, want %q", i, msgs[0], content)
		}
		lats = append(lats, w.at.Sub(tSent))
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(wakePercentile(lats, 50)), "p50-ms")
	b.ReportMetric(ms(wakePercentile(lats, 99)), "p99-ms")
	b.Logf("a message from clone A waking an agent on clone C, both syncing every %v: n=%d p50=%.0fms p99=%.0fms (min %.0fms, max %.0fms)",
		defaultSyncInterval, len(lats), ms(wakePercentile(lats, 50)), ms(wakePercentile(lats, 99)),
		ms(wakePercentile(lats, 0)), ms(wakePercentile(lats, 100)))
}

// repoKiB returns the KiB of loose objects and of packs in the clone at dir.
func repoKiB(b *testing.B, dir string) (loose, packed int) {
	b.Helper()
	for _, l := range strings.Split(benchGit(b, dir, "count-objects", "-v"), "\n") {
		k, v, _ := strings.Cut(l, ": ")
		n, _ := strconv.Atoi(v)
		switch k {
		case "size":
			loose = n
		case "size-pack":
			packed = n
		}
	}
	return loose, packed
}

// BenchmarkSyncHistory measures what sync adds to a clone's Git history on a
// project of 10,000 tasks (AIPM_BENCH_TASKS): 200 task status changes
// (AIPM_BENCH_TRANSITIONS), one sync round (commit) each — the worst case,
// a busy team changes several per round — then 2,000 messages
// (AIPM_BENCH_HISTORY_MESSAGES), ten per round. It logs the bytes each adds
// once `git gc` has packed them, scaled to 1,000 transitions and 10,000
// messages (growth is linear: every commit adds the same kind of objects),
// and the size the history reached before that gc with only the packing sync
// does by itself.
func BenchmarkSyncHistory(b *testing.B) {
	exe, _, _, a := syncOrigin(b)
	gen := buildScaleStore(b, exe, a, scaleSize{Name: "history", Messages: 1_000, Conversations: 10,
		Background: syncBackground(b)})
	s, err := filestore.Open(a, filestore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	y := &gitstate.Syncer{Store: s} // commits only: the history is this clone's
	if _, err := y.Once(ctx); err != nil {
		b.Fatal(err)
	}
	benchGit(b, a, "gc", "-q", "--prune=now")
	_, base := repoKiB(b, a)
	owner := filestore.Actor{ID: "owner", Via: filestore.ViaCLI}
	tasks, err := s.Tasks(filestore.TaskFilter{Status: filestore.StatusTodo})
	if err != nil || len(tasks) == 0 {
		b.Fatalf("no todo task to change: %v", err)
	}
	transitions := scaleEnvInt(b, "AIPM_BENCH_TRANSITIONS", 200)
	messages := scaleEnvInt(b, "AIPM_BENCH_HISTORY_MESSAGES", 2_000)
	b.ResetTimer()
	for i := range transitions {
		tk := tasks[(i/2)%len(tasks)]
		to := filestore.StatusBlocked
		if i%2 == 1 {
			to = filestore.StatusTodo
		}
		if _, err := s.SetTaskStatus(owner, tk.ID, to, "bench"); err != nil {
			b.Fatal(err)
		}
		if r, err := y.Once(ctx); err != nil || !r.Committed {
			b.Fatalf("round %d: %+v, %v", i, r, err)
		}
	}
	l1, p1 := repoKiB(b, a)
	benchGit(b, a, "gc", "-q", "--prune=now")
	_, afterT := repoKiB(b, a)
	for i := range messages {
		if _, err := s.SendMessage(owner, filestore.SendRequest{To: scaleWorker(1 + i%9), Content: fmt.Sprintf("message %d: how far is the parser?", i)}); err != nil {
			b.Fatal(err)
		}
		if i%10 == 9 {
			if _, err := y.Once(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	l2, p2 := repoKiB(b, a)
	benchGit(b, a, "gc", "-q", "--prune=now")
	_, afterM := repoKiB(b, a)
	b.StopTimer()
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(afterT-base)*1000/float64(transitions), "B/transition")
	b.ReportMetric(float64(afterM-afterT)*1000/float64(messages), "B/message")
	b.Logf("history at %d tasks: %d transitions (a commit each) add %d KiB after gc, %.0f KiB per 1,000 (%d KiB in the clone before it: %d loose, %d packed)",
		gen.tasks, transitions, afterT-base, float64(afterT-base)*1000/float64(transitions), l1+p1-base, l1, p1-base)
	b.Logf("%d messages (a commit per 10) add %d KiB after gc, %.0f KiB per 10,000 (%d KiB before it: %d loose, %d packed)",
		messages, afterM-afterT, float64(afterM-afterT)*10000/float64(messages), l2+p2-afterT, l2, p2-afterT)
}
