package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// Parameters of BenchmarkWakeAcrossProcesses.
const (
	// wakeMinMessages is the least number of measured messages; b.N raises it.
	wakeMinMessages = 200
	// wakeWarmup messages are sent and checked first but not measured.
	wakeWarmup = 10
	// wakeTurnsPerConversation: a conversation allows at most 40 messages
	// (filestore.MaxMaxTurns) and the 40th ends it, after which the
	// receiver's get_next_action may answer conversation_ended instead of
	// get_pending_messages. So every conversation carries 39 measured
	// messages and is then ended by the sender.
	wakeMaxTurns             = 40
	wakeTurnsPerConversation = wakeMaxTurns - 1
	// wakeSettle is the least time between starting B's get_next_action and
	// A's send_message (see the benchmark's doc comment).
	wakeSettle = 10 * time.Millisecond
	// wakeDeadline bounds every wake-up; the long-poll itself is asked to
	// wait up to wakePollSeconds, so only a missed wake-up reaches it.
	wakeDeadline    = 5 * time.Second
	wakePollSeconds = 20
	// wakeCallTimeout bounds every other tool call.
	wakeCallTimeout = 10 * time.Second
)

// BenchmarkWakeAcrossProcesses measures the wake latency of SPEC §10 across
// two real `aipm mcp` server processes, each driven over stdio by an mcp-go
// client in this process: agent a's server (process A) sends, agent b's
// server (process B) long-polls.
//
// Setup: a temporary project made with the CLI (`aipm init`, `aipm agent add`
// for the AI agents a and b with known passkeys, and `aipm chat open` for
// both, which is chat work, so each authenticates into a chat session).
// Messages between two AI agents need a live conversation of at most 40
// turns, so a opens one with start_conversation (no initial message), b's
// get_next_action accepts it (conversation_request), a sends 39 measured
// messages, then ends it (b's get_next_action answers conversation_ended),
// and the next conversation starts. This bookkeeping is not measured.
//
// One measured round: B's client starts get_next_action (which long-polls
// because nothing is unread); after wakeSettle, A's client calls
// send_message to b and notes t_sent when the response arrives (the message
// is then durable in b's mailbox); B's goroutine notes t_wake when its
// get_next_action response arrives, which must be get_pending_messages with
// one unread message, within 5 s. B then calls get_pending_messages and the
// benchmark checks it got exactly that message. The latency is t_wake −
// t_sent, both on this process's monotonic clock. It can be negative: b's
// mailbox line is written before A's server finishes the send (it still
// counts the conversation turn and writes the response), and B may wake in
// that window.
//
// The settle delay: nothing observable marks the moment B's server is inside
// its long-poll (it writes nothing while waiting), so the benchmark waits a
// fixed time before sending. The time B's server needs to get there is about
// one get_next_action with timeout_seconds 0 (the same path up to the first
// evaluation); the setup measures that and the delay is wakeSettle or three
// times the slowest such call, whichever is longer. Should B not be waiting
// yet, its first evaluation would answer at once, which could only make the
// figures look better, never worse.
//
// Reported metrics: p50-ms, p99-ms and max-ms of the latency over the
// measured messages (at least 200; b.N more if asked), and send-p50-ms, the
// round trip of A's send_message for context. ns/op is suppressed: the
// rounds are paced by the settle delay, so time per round means nothing (and
// B/op, allocs/op are this client process's, per benchmark run). The log
// repeats them as "wake latency across processes: n=... p50=... p99=...",
// with the latency counted from the start of send_message as an upper bound.
//
// Run it with `make bench`, or alone:
//
//	go test -run='^$' -bench=WakeAcrossProcesses ./cmd/aipm
func BenchmarkWakeAcrossProcesses(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	// A person's setup, through the real CLI (this test binary acts as aipm,
	// see TestMain).
	for _, args := range [][]string{
		{"init", "--name", "wakebench", "--owner", "owner"},
		{"agent", "add", "a", "--parent", "owner", "--passkey", "a-passkey"},
		{"agent", "add", "b", "--parent", "owner", "--passkey", "b-passkey"},
		{"chat", "open", "a"},
		{"chat", "open", "b"},
	} {
		cmd := exec.Command(exe, args...)
		cmd.Args[0] = "aipm"
		cmd.Dir = dir
		cmd.Env = wakeEnv()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("aipm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}

	sa := startWakeServer(b, exe, dir, "A")
	sb := startWakeServer(b, exe, dir, "B")
	sa.call(b, "authenticate", map[string]any{"agent_id": "a", "passkey": "a-passkey"}, "purpose", "chat")
	sb.call(b, "authenticate", map[string]any{"agent_id": "b", "passkey": "b-passkey"}, "purpose", "chat")

	p := newWakePair(b, sa, sb, "a", "b")

	for i := range wakeWarmup {
		p.round(b, -1-i)
	}
	n := max(b.N, wakeMinMessages)
	lats := make([]time.Duration, 0, n)
	sends := make([]time.Duration, 0, n)
	// fromStart is the latency counted from the start of send_message
	// instead: an upper bound that includes all of A's write (two fsynced
	// mailbox lines and the conversation's turn).
	fromStart := make([]time.Duration, 0, n)
	b.ResetTimer()
	for i := range n {
		lat, send := p.round(b, i)
		lats = append(lats, lat)
		sends = append(sends, send)
		fromStart = append(fromStart, send+lat)
	}
	b.StopTimer()

	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	p50, p99 := wakePercentile(lats, 50), wakePercentile(lats, 99)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(p50), "p50-ms")
	b.ReportMetric(ms(p99), "p99-ms")
	b.ReportMetric(ms(wakePercentile(lats, 100)), "max-ms")
	b.ReportMetric(ms(wakePercentile(sends, 50)), "send-p50-ms")
	b.Logf("wake latency across processes: n=%d p50=%.3fms p99=%.3fms (min %.3fms, max %.3fms)",
		len(lats), ms(p50), ms(p99), ms(wakePercentile(lats, 0)), ms(wakePercentile(lats, 100)))
	b.Logf("for context: send_message round trip p50=%.3fms p99=%.3fms; wake counted from the start of send_message p50=%.3fms p99=%.3fms",
		ms(wakePercentile(sends, 50)), ms(wakePercentile(sends, 99)), ms(wakePercentile(fromStart, 50)), ms(wakePercentile(fromStart, 99)))
}

// wakePercentile returns the q-th percentile of ds (0 the least, 100 the
// greatest), the way watch.BenchmarkWakeLatency takes it. It sorts ds.
func wakePercentile(ds []time.Duration, q int) time.Duration {
	slices.Sort(ds)
	return ds[min(len(ds)*q/100, len(ds)-1)]
}

// wakePair measures wake-ups between two agents' servers, both holding
// chat sessions: agent aID's server sa sends, agent bID's server sb waits.
// It keeps the conversation the messages need (see
// BenchmarkWakeAcrossProcesses).
type wakePair struct {
	sa, sb   *wakeServer
	aID, bID string
	settle   time.Duration
	conv     string
	turns    int
}

// newWakePair measures how long sb takes to answer get_next_action without
// waiting and sets the settle delay from it.
func newWakePair(b *testing.B, sa, sb *wakeServer, aID, bID string) *wakePair {
	var slowest time.Duration
	for range 20 {
		t0 := time.Now()
		sb.call(b, "get_next_action", map[string]any{"timeout_seconds": 0}, "action", "wait_for_messages")
		slowest = max(slowest, time.Since(t0))
	}
	p := &wakePair{sa: sa, sb: sb, aID: aID, bID: bID, settle: max(wakeSettle, 3*slowest)}
	b.Logf("get_next_action(timeout_seconds=0) on %s: slowest of 20 took %v; settle delay %v", sb.name, slowest, p.settle)
	return p
}

// rotate ends the current conversation (if any) and starts the next one.
func (p *wakePair) rotate(b *testing.B) {
	sa, sb := p.sa, p.sb
	if p.conv != "" {
		sa.call(b, "end_conversation", map[string]any{"conversation_id": p.conv}, "status", "terminating")
		r := sb.call(b, "get_next_action", map[string]any{"timeout_seconds": 5}, "action", "conversation_ended")
		if r["conversation_id"] != p.conv {
			b.Fatalf("%s: conversation_ended for %v, want %s", sb.name, r["conversation_id"], p.conv)
		}
	}
	r := sa.call(b, "start_conversation", map[string]any{"target_agent_id": p.bID, "purpose": "wake benchmark", "max_turns": wakeMaxTurns},
		"status", "pending")
	p.conv, _ = r["conversation_id"].(string)
	r = sb.call(b, "get_next_action", map[string]any{"timeout_seconds": 5}, "action", "conversation_request")
	if r["conversation_id"] != p.conv {
		b.Fatalf("%s: conversation_request for %v, want %s", sb.name, r["conversation_id"], p.conv)
	}
	p.turns = 0
}

// round sends message i from a to b while b waits, and returns the wake
// latency and the round trip of send_message.
func (p *wakePair) round(b *testing.B, i int) (lat, send time.Duration) {
	type wake struct {
		at  time.Time
		res map[string]any
		err error
	}
	sa, sb := p.sa, p.sb
	if p.conv == "" || p.turns == wakeTurnsPerConversation {
		p.rotate(b)
	}
	done := make(chan wake, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), wakeDeadline+time.Second)
		defer cancel()
		res, err := sb.raw(ctx, "get_next_action", map[string]any{"timeout_seconds": wakePollSeconds})
		done <- wake{time.Now(), res, err}
	}()
	time.Sleep(p.settle)
	content := fmt.Sprintf("wake %d", i)
	t0 := time.Now()
	r := sa.call(b, "send_message", map[string]any{"target_agent_id": p.bID, "content": content}, "conversation_state", "active")
	tSent := time.Now()
	p.turns++
	var w wake
	select {
	case w = <-done:
	case <-time.After(wakeDeadline - time.Since(tSent)):
		b.Fatalf("message %d (%v): %s's get_next_action did not wake within %v of send_message returning%s", i, r["message_id"], sb.name, wakeDeadline, sb.stderrNote())
	}
	if w.err != nil {
		b.Fatalf("message %d: %s's get_next_action: %v%s", i, sb.name, w.err, sb.stderrNote())
	}
	if w.res["action"] != "get_pending_messages" || w.res["unread_count"] != 1.0 {
		b.Fatalf("message %d: %s's get_next_action answered %v, want action get_pending_messages with unread_count 1", i, sb.name, w.res)
	}
	pm := sb.call(b, "get_pending_messages", nil, "count", 1.0)
	msgs, _ := pm["pending_messages"].([]any)
	if m, _ := msgs[0].(map[string]any); m["content"] != content || m["id"] != r["message_id"] || m["senderId"] != p.aID {
		b.Fatalf("message %d: %s read %v, want %s %q from %s", i, sb.name, msgs[0], r["message_id"], content, p.aID)
	}
	return w.at.Sub(tSent), tSent.Sub(t0)
}

// wakeEnv is the servers' and CLI's environment: this process's, without the
// variables that would change their behaviour (the frozen test clock, the
// acting human, timeout overrides).
func wakeEnv() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "AIPM_TEST_CLOCK", "AIPM_USER", "CONVERSATION_PENDING_TIMEOUT_SECONDS", "CONVERSATION_ACTIVE_TIMEOUT_SECONDS", "CHAT_IDLE_TIMEOUT_SECONDS":
			return true
		}
		return false
	})
}

// wakeServer is one `aipm mcp` process and the client driving it.
type wakeServer struct {
	name   string
	c      *benchClient
	stderr *mcpSyncBuffer
}

// startWakeServer starts `aipm mcp` (this test binary under the name aipm) in
// dir, connects and initializes. The server is stopped when the benchmark
// ends: its stdin is closed, as when an agent exits.
func startWakeServer(b *testing.B, exe, dir, name string) *wakeServer {
	s := &wakeServer{name: name, stderr: &mcpSyncBuffer{}}
	cmd := exec.Command(exe, "mcp")
	cmd.Args[0] = "aipm"
	cmd.Dir = dir
	cmd.Env = wakeEnv()
	cmd.Stderr = s.stderr
	ctx, cancel := context.WithTimeout(context.Background(), wakeCallTimeout)
	defer cancel()
	c, err := startBenchClient(ctx, cmd, "aipm-wake-bench")
	if c != nil {
		s.c = c
		b.Cleanup(func() { c.Close() })
	}
	if err != nil {
		b.Fatalf("server %s: %v%s", name, err, s.stderrNote())
	}
	return s
}

// raw calls a tool and decodes the JSON object of its text block. An isError
// result is an error.
func (s *wakeServer) raw(ctx context.Context, tool string, args map[string]any) (map[string]any, error) {
	var out map[string]any
	err := s.rawInto(ctx, tool, args, &out)
	return out, err
}

// rawInto is raw decoding the text block into out, which need name only the
// fields the caller looks at: the text must still be a whole JSON object.
func (s *wakeServer) rawInto(ctx context.Context, tool string, args map[string]any, out any) error {
	text, isError, err := s.c.callTool(ctx, tool, args)
	if err != nil {
		return fmt.Errorf("server %s: %s: %w", s.name, tool, err)
	}
	if isError {
		return fmt.Errorf("server %s: %s: %s", s.name, tool, text)
	}
	if len(text) == 0 || text[0] != '{' {
		return fmt.Errorf("server %s: %s: result is not a JSON object: %s", s.name, tool, text)
	}
	if err := json.Unmarshal([]byte(text), out); err != nil {
		return fmt.Errorf("server %s: %s: result is not a JSON object: %v: %s", s.name, tool, err, text)
	}
	return nil
}

// call is raw with a timeout that fails the benchmark on any error, or when
// the result's field key is not want.
func (s *wakeServer) call(b *testing.B, tool string, args map[string]any, key string, want any) map[string]any {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wakeCallTimeout)
	defer cancel()
	out, err := s.raw(ctx, tool, args)
	if err != nil {
		b.Fatalf("%v%s", err, s.stderrNote())
	}
	if out[key] != want {
		b.Fatalf("server %s: %s: %s is %v, want %v; result: %v", s.name, tool, key, out[key], want, out)
	}
	return out
}

// stderrNote is the end of what the server wrote to stderr, for failures.
func (s *wakeServer) stderrNote() string {
	e := s.stderr.String()
	if e == "" {
		return ""
	}
	if len(e) > 2000 {
		e = "..." + e[len(e)-2000:]
	}
	return fmt.Sprintf(" (server %s stderr:\n%s)", s.name, e)
}
