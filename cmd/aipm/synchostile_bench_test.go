package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// BenchmarkSyncHostile measures what a teammate's push can cost another machine: a bare
// origin, a victim clone with a small project, and an attacker who pushes to aipm/state
// with plain git, in turn,
//
//   - blob: a 1 GiB file (events.jsonl of zeros: about 1 MB on the remote);
//   - line: one 200 MiB line appended to an agent's mailbox;
//   - log: 1.5 million valid lines (about 190 MiB) appended to that mailbox, to which the
//     victim appends too (a merge of both sides, streamed);
//   - delta: that mailbox rewritten to 190 MiB and then a line longer, in one push, so that
//     the remote sends one version as a delta of the other;
//   - files: 100,000 tiny task files (AIPM_BENCH_HOSTILE_FILES).
//
// (AIPM_BENCH_HOSTILE_CASES=blob,line runs only those.)
//
// The origin is served by `git daemon`, as a server would serve it: what the remote's side
// of a fetch costs (its pack-objects) is the server's, not the victim's.
//
// After each push the victim adds a task of its own and runs `aipm sync --once` until
// that task is pushed (a round takes in a bounded part of what the remote holds), while
// another process sends chat messages one after another. It reports, per case, the
// rounds it took and, over them, the longest round, the highest peak memory of the
// largest process of a round (aipm's or git's), and the longest a `chat send` waited;
// and fails when the victim's own task did not reach the remote. The bounds: each round ≤ 10 s and
// ≤ 100 MB, a chat send ≤ 1 s.
func BenchmarkSyncHostile(b *testing.B) {
	exe, dir, origin, victim := syncOrigin(b)
	scaleCLI(b, exe, victim, "init", "--owner", "alice")
	scaleCLI(b, exe, victim, "agent", "add", "w1", "--ai-type", "sim", "--parent", "alice")
	scaleCLI(b, exe, victim, "chat", "send", "w1", "hello")
	scaleCLI(b, exe, victim, "sync", "--once")
	benchGit(b, dir, "clone", "-q", "-b", "aipm/state", origin, "attacker")
	attacker := filepath.Join(dir, "attacker")
	url := gitDaemon(b, dir) + "/" + filepath.Base(origin)
	benchGit(b, victim, "remote", "set-url", "origin", url)
	benchGit(b, attacker, "remote", "set-url", "origin", url)
	// floodLines appends n valid messages to the mailbox at p (about 130 bytes each).
	floodLines := func(p string, n int, flag int) {
		f, err := os.OpenFile(p, flag|os.O_WRONLY, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		w := bufio.NewWriterSize(f, 1<<20)
		at := time.Now().UTC()
		for i := 0; i < n; i++ {
			fmt.Fprintf(w, `{"id":"msg_flood%07d","senderId":"alice","receiverId":"w1","content":"flood %07d","createdAt":%q}`+"\n",
				i, i, at.Add(time.Duration(i)*time.Microsecond).Format(time.RFC3339Nano))
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}

	cases := []struct {
		name string
		push func()
	}{
		{"blob", func() {
			big := filepath.Join(dir, "zeros")
			f, err := os.Create(big)
			if err != nil {
				b.Fatal(err)
			}
			if err := f.Truncate(1 << 30); err != nil {
				b.Fatal(err)
			}
			f.Close()
			id := benchGit(b, attacker, "hash-object", "-w", big)
			os.Remove(big)
			benchGit(b, attacker, "update-index", "--add", "--cacheinfo", "100644,"+id+",events.jsonl")
		}},
		{"line", func() {
			p := filepath.Join(attacker, "agents", "w1", "chat.jsonl")
			f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				b.Fatal(err)
			}
			w := bufio.NewWriterSize(f, 1<<20)
			w.WriteString(`{"id":"msg_long","senderId":"alice","receiverId":"w1","content":"`)
			chunk := []byte(strings.Repeat("a", 1<<20))
			for range 200 {
				w.Write(chunk)
			}
			w.WriteString("\"}\n")
			if err := w.Flush(); err != nil {
				b.Fatal(err)
			}
			f.Close()
			benchGit(b, attacker, "add", "agents/w1/chat.jsonl")
		}},
		{"log", func() {
			floodLines(filepath.Join(attacker, "agents", "w1", "chat.jsonl"), 1_500_000, os.O_APPEND)
			benchGit(b, attacker, "add", "agents/w1/chat.jsonl")
			// The victim writes to that mailbox too: both sides changed it.
			scaleCLI(b, exe, victim, "chat", "send", "w1", "the victim's own message")
		}},
		{"delta", func() {
			p := filepath.Join(attacker, "agents", "w1", "chat.jsonl")
			floodLines(p, 1_500_000, os.O_TRUNC|os.O_CREATE)
			benchGit(b, attacker, "add", "agents/w1/chat.jsonl")
			benchGit(b, attacker, "commit", "-q", "-m", "rewritten")
			floodLines(p, 1, os.O_APPEND)
			benchGit(b, attacker, "add", "agents/w1/chat.jsonl")
		}},
		{"files", func() {
			n := scaleEnvInt(b, "AIPM_BENCH_HOSTILE_FILES", 100_000)
			var in strings.Builder
			fmt.Fprintf(&in, "commit refs/heads/aipm/state\ncommitter Mallory <m@example.com> 1700000000 +0000\ndata 6\nfiles\nfrom refs/heads/aipm/state^0\n")
			for i := range n {
				body := fmt.Sprintf(`{"id":"tsk_hostile%06d","title":"t%d","status":"todo"}`+"\n", i, i)
				fmt.Fprintf(&in, "M 100644 inline tasks/tsk_hostile%06d.json\ndata %d\n%s", i, len(body), body)
			}
			cmd := exec.Command("git", "fast-import", "--quiet")
			cmd.Dir = attacker
			cmd.Stdin = strings.NewReader(in.String())
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("git fast-import: %v\n%s", err, out)
			}
			benchGit(b, attacker, "reset", "-q", "--hard")
		}},
	}
	only := os.Getenv("AIPM_BENCH_HOSTILE_CASES") // a comma-separated subset, for a quicker look
	for i, c := range cases {
		if only != "" && !strings.Contains(","+only+",", ","+c.name+",") {
			continue
		}
		c.push()
		if c.name != "files" {
			benchGit(b, attacker, "commit", "-q", "-m", "crafted "+c.name)
		}
		benchGit(b, attacker, "push", "-q", "origin", "aipm/state")

		title := fmt.Sprintf("own work %d", i)
		scaleCLI(b, exe, victim, "task", "add", title, "--status", "todo")
		// Rounds until the victim's own work is pushed: a round takes in a bounded part
		// of what the remote holds and leaves the rest to the next.
		var worst hostileResult
		var log strings.Builder
		rounds := 0
		for rounds < 10 {
			res := hostileRound(b, exe, victim)
			rounds++
			fmt.Fprintf(&log, "\nround %d: %s (exit %d), peak %.1f MB, chat send: %d sent, longest wait %s",
				rounds, res.took.Round(time.Millisecond), res.exit, float64(res.allKB)/1024,
				res.sends, res.longestSend.Round(time.Millisecond))
			if rounds == 1 {
				fmt.Fprintf(&log, "; the round said: %.600s", res.out)
			}
			worst.took, worst.allKB = max(worst.took, res.took), max(worst.allKB, res.allKB)
			worst.longestSend = max(worst.longestSend, res.longestSend)
			if res.exit != 0 || strings.Contains(res.out, "pushed to origin") || !strings.Contains(res.out, "for the next round") {
				break
			}
		}
		// Printed, not logged: the testing package clips a benchmark's long log.
		fmt.Printf("BenchmarkSyncHostile %s:%s\n", c.name, log.String())
		if err := exec.Command("git", "-C", origin, "grep", "-q", "-F", title, "aipm/state", "--", "tasks").Run(); err != nil {
			b.Errorf("%s: the victim's own task did not reach the remote in %d round(s)", c.name, rounds)
		}
		b.ReportMetric(float64(rounds), c.name+"-rounds")
		b.ReportMetric(worst.took.Seconds(), c.name+"-round-s")
		b.ReportMetric(float64(worst.allKB)/1024, c.name+"-peak-MB")
		b.ReportMetric(worst.longestSend.Seconds(), c.name+"-chat-wait-s")
		if c.name == "files" {
			// What any command costs on a store that holds that many open tasks: the store
			// keeps unfinished work in memory.
			tmp := b.TempDir()
			link := filepath.Join(tmp, "aipm")
			if err := os.Symlink(exe, link); err != nil {
				b.Fatal(err)
			}
			st := exec.Command(exe, filepath.Join(tmp, "rss"), link, "status")
			st.Args[0] = maxRSSCommand
			st.Dir = victim
			st.Env = wakeEnv()
			if out, err := st.CombinedOutput(); err != nil {
				b.Errorf("aipm status: %v\n%.500s", err, out)
			}
			kb := readKB(b, filepath.Join(tmp, "rss"))
			b.Logf("files: then `aipm status` on the victim: peak %.1f MB", float64(kb)/1024)
			b.ReportMetric(float64(kb)/1024, "files-status-peak-MB")
		}
		// The attacker follows the remote, so that each case pushes on top of the last.
		benchGit(b, attacker, "fetch", "-q", "origin")
		benchGit(b, attacker, "reset", "-q", "--hard", "origin/aipm/state")
	}
}

type hostileResult struct {
	out         string
	exit        int
	took        time.Duration
	allKB       int64 // the peak of the round's largest process, aipm's or git's
	sends       int
	longestSend time.Duration
}

// hostileRound runs one `aipm sync --once` in dir through maxRSSMain, and `aipm chat
// send` from another process, one after another, for as long as the round runs.
func hostileRound(b *testing.B, exe, dir string) hostileResult {
	b.Helper()
	tmp := b.TempDir()
	rss := filepath.Join(tmp, "maxrss")
	// The wrapper starts its program by path: a link named aipm makes this test binary
	// aipm there (testscript.Main goes by the name it runs as).
	link := filepath.Join(tmp, "aipm")
	if err := os.Symlink(exe, link); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe, rss, link, "sync", "--once")
	cmd.Args[0] = maxRSSCommand
	cmd.Dir = dir
	cmd.Env = append(wakeEnv(), "AIPM_MAXRSS_ALL="+rss+".all")
	var res hostileResult
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 0; ; n++ {
			select {
			case <-done:
				return
			default:
			}
			send := exec.Command(exe, "chat", "send", "w1", fmt.Sprintf("during the round %d", n))
			send.Args[0] = "aipm"
			send.Dir = dir
			send.Env = wakeEnv()
			t0 := time.Now()
			out, err := send.CombinedOutput()
			d := time.Since(t0)
			if err != nil {
				b.Errorf("aipm chat send during the round: %v\n%s", err, out)
				return
			}
			res.sends++
			res.longestSend = max(res.longestSend, d)
		}
	}()
	t0 := time.Now()
	out, _ := cmd.CombinedOutput()
	res.took = time.Since(t0)
	close(done)
	wg.Wait()
	res.out = string(out)
	if cmd.ProcessState != nil {
		res.exit = cmd.ProcessState.ExitCode()
	}
	res.allKB = readKB(b, rss+".all")
	return res
}

func readKB(b *testing.B, p string) int64 {
	data, err := os.ReadFile(p)
	if err != nil {
		b.Fatalf("no peak memory: %v", err)
	}
	kb, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		b.Fatal(err)
	}
	return kb
}

// gitDaemon serves the bare repositories under dir over git:// on a free port of this
// machine, with pushes allowed, until the benchmark ends; it returns the base URL.
func gitDaemon(b *testing.B, dir string) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command("git", "daemon", "--reuseaddr", "--export-all", "--enable=receive-pack",
		"--listen=127.0.0.1", fmt.Sprintf("--port=%d", port), "--base-path="+dir, dir)
	cmd.Stderr = os.Stderr
	// `git daemon` runs git-daemon as a child: the group is killed, not only git.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		b.Skipf("git daemon: %v", err)
	}
	b.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	url := fmt.Sprintf("git://127.0.0.1:%d", port)
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		if exec.Command("git", "ls-remote", url+"/origin.git").Run() == nil {
			return url
		}
		if time.Since(start) > time.Minute {
			b.Fatalf("git daemon on port %d did not answer in a minute", port)
		}
	}
}
