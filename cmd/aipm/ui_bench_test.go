package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aipm/aipm/filestore"
	"github.com/chromedp/chromedp"
)

// BenchmarkUI measures the web view of a real `aipm ui` in a real headless Chromium, at
// 2,000 and 10,000 tasks (AIPM_BENCH_UI_SIZES, comma-separated, overrides): the page's
// first load (navigation → board drawn) and the bytes it read for it (the page, its
// script and style, and the state), then 40 task edits made with the CLI: the bytes each
// brought the page (median and largest) and the time from the CLI's return to the card changed in the DOM
// (p50/p99). What a change costs must not grow with the number of tasks.
//
//	go test -run='^$' -bench=UI -benchtime=1x ./cmd/aipm
func BenchmarkUI(b *testing.B) {
	chromium := chromiumPath()
	if chromium == "" {
		b.Skip("chromium is not installed (apt-get install chromium); set AIPM_CHROMIUM to use another")
	}
	sizes := []int{2000, 10000}
	if v := os.Getenv("AIPM_BENCH_UI_SIZES"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 10 {
				b.Fatalf("AIPM_BENCH_UI_SIZES=%q: want whole numbers ≥ 10, comma-separated", v)
			}
			sizes = append(sizes, n)
		}
	}
	const edits = 40
	var lines []string
	for range b.N {
		lines = lines[:0]
		for _, n := range sizes {
			r := benchUIOnce(b, chromium, n, edits)
			lines = append(lines, fmt.Sprintf("%6d tasks: first load %4d ms, %7d bytes; bytes per change p50 %4.0f (max %5d, the first: it carries the agents and attention list); CLI change → DOM p50 %3d ms, p99 %3d ms",
				n, r.load.Milliseconds(), r.loadBytes, r.changeBytes, r.maxChangeBytes, r.p50.Milliseconds(), r.p99.Milliseconds()))
			b.ReportMetric(float64(r.load.Milliseconds()), fmt.Sprintf("load-ms@%d", n))
			b.ReportMetric(float64(r.loadBytes), fmt.Sprintf("load-bytes@%d", n))
			b.ReportMetric(r.changeBytes, fmt.Sprintf("change-bytes@%d", n))
			b.ReportMetric(float64(r.p50.Milliseconds()), fmt.Sprintf("change-p50-ms@%d", n))
			b.ReportMetric(float64(r.p99.Milliseconds()), fmt.Sprintf("change-p99-ms@%d", n))
		}
	}
	b.Logf("aipm ui in Chromium (%d CLI edits each):\n%s", edits, strings.Join(lines, "\n"))
}

type uiBench struct {
	load                      time.Duration
	loadBytes, maxChangeBytes int
	changeBytes               float64
	p50, p99                  time.Duration
}

func benchUIOnce(b *testing.B, chromium string, n, edits int) uiBench {
	top := b.TempDir()
	repo := filepath.Join(top, "big")
	os.MkdirAll(repo, 0o755)
	env := append(os.Environ(), "AIPM_USER=", "AIPM_ROOT=", "HOME="+top)
	aipm := func(args ...string) string {
		b.Helper()
		cmd := exec.Command("aipm", args...)
		cmd.Dir, cmd.Env = repo, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("aipm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	aipm("init", "--name", "big", "--owner", "alice")
	for _, w := range []string{"w1", "w2", "w3"} {
		aipm("agent", "add", w, "--parent", "alice", "--passkey", w+"-passkey")
	}
	writeBenchTasks(b, repo, n)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	url, stop := startUIProc(ctx, b, repo, env)
	defer stop()
	actx, acancel := chromedp.NewExecAllocator(ctx, chromedp.ExecPath(chromium),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(filepath.Join(top, "profile")), chromedp.WindowSize(1440, 900))
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	eval := func(expr string) string {
		b.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[string](expr, chromedp.EvalAwaitPromise))
		if err != nil {
			b.Fatalf("evaluating %s: %v", expr, err)
		}
		return v
	}
	waitFor := func(what, cond string) {
		b.Helper()
		if _, err := chromedp.Run(bctx, chromedp.Poll[bool](cond, chromedp.WithPollingMutation(), chromedp.WithPollingTimeout(time.Minute))); err != nil {
			b.Fatalf("%s: %v", what, err)
		}
	}
	// A blank page first, so the browser's own start is not counted.
	if _, err := chromedp.Run(bctx, chromedp.Navigate("about:blank")); err != nil {
		b.Fatal(err)
	}
	var r uiBench
	t0 := time.Now()
	if _, err := chromedp.Run(bctx, chromedp.Navigate(url)); err != nil {
		b.Fatal(err)
	}
	waitFor("the board", `document.body.dataset.loaded === '1' && !!document.querySelector('#col-backlog .card')`)
	r.load = time.Since(t0)
	// Bytes: the page, its script and style as sent, and the state as read.
	lb, err := strconv.Atoi(eval(`String(performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource'))
		.filter(e => !e.name.includes('/events') && !e.name.includes('/api/')).reduce((s, e) => s + e.encodedBodySize, 0) + window.aipmStats.firstLoadBytes)`))
	if err != nil {
		b.Fatal(err)
	}
	r.loadBytes = lb
	// The page notes when each edited title reaches the DOM, by the page's clock (the
	// machine's), so no polling delay is counted.
	eval(`(() => { window.aipmSeen = {}; new MutationObserver(ms => { const now = Date.now();
		for (const m of ms) for (const n of m.addedNodes) { const t = n.querySelector && n.querySelector('.title');
			if (t && t.textContent.startsWith('bench edit ') && !(t.textContent in window.aipmSeen)) window.aipmSeen[t.textContent] = now; } })
		.observe(document.getElementById('board'), { childList: true, subtree: true }); return ''; })()`)
	ids := strings.Fields(eval(`[...document.querySelectorAll('#col-backlog .card')].slice(0, ` + strconv.Itoa(edits) + `).map(c => c.dataset.taskId).join(' ')`))
	if len(ids) < edits {
		b.Fatalf("only %d backlog cards to edit", len(ids))
	}
	var lat []time.Duration
	var got []int
	for i, id := range ids {
		before, _ := strconv.Atoi(eval(`String(window.aipmStats.bytes)`))
		title := fmt.Sprintf("bench edit %d", i)
		aipm("task", "edit", id, "--title", title)
		returned := time.Now().UnixMilli()
		waitFor("edit "+strconv.Itoa(i), `window.aipmSeen[`+jsString(title)+`] !== undefined`)
		seen, _ := strconv.ParseInt(eval(`String(window.aipmSeen[`+jsString(title)+`])`), 10, 64)
		lat = append(lat, time.Duration(max(seen-returned, 0))*time.Millisecond)
		after, _ := strconv.Atoi(eval(`String(window.aipmStats.bytes)`))
		got = append(got, after-before)
	}
	slices.Sort(got)
	r.changeBytes, r.maxChangeBytes = float64(got[len(got)/2]), got[len(got)-1]
	slices.Sort(lat)
	r.p50 = lat[len(lat)/2]
	r.p99 = lat[min(len(lat)-1, len(lat)*99/100)]
	return r
}

// writeBenchTasks writes n tasks as the store writes them: groups of a parent and nine
// sub-tasks, 70% done, the rest spread over the open statuses, ids of the store's scheme.
func writeBenchTasks(b *testing.B, repo string, n int) {
	dir := filepath.Join(repo, ".ai-pm")
	var p struct {
		ID string `json:"id"`
	}
	pb, err := os.ReadFile(filepath.Join(dir, "project.json"))
	if err != nil || json.Unmarshal(pb, &p) != nil {
		b.Fatalf("reading project.json: %v", err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const crockford = "0123456789abcdefghjkmnpqrstvwxyz"
	id := func(seq int) string {
		var sb strings.Builder
		sb.WriteString("tsk_")
		for i := 3; i >= 0; i-- {
			sb.WriteByte(crockford[(seq>>(5*i))&31])
		}
		sb.WriteString("k3")
		for range 20 {
			sb.WriteByte(crockford[rng.IntN(32)])
		}
		return sb.String()
	}
	now := time.Now().UTC().Add(-time.Hour)
	open := []string{filestore.StatusBacklog, filestore.StatusTodo, filestore.StatusInProgress, filestore.StatusBlocked, filestore.StatusCancelled}
	parent := ""
	for i := range n {
		t := filestore.Task{ID: id(8*32*32*32 + 1 + i), ProjectID: p.ID, Title: fmt.Sprintf("Task %d of the benchmark project", i),
			Priority: "medium", CreatedBy: "alice", StatusChangedBy: "alice", StatusChangedAt: &now, Approval: filestore.ApprovalApproved,
			CreatedAt: now, UpdatedAt: now, Version: 1, Dependencies: []string{}}
		if i%10 == 0 {
			parent = t.ID
		} else {
			t.ParentID = parent
		}
		switch {
		case i < n/20: // the newest work first in the backlog column
			t.Status = filestore.StatusBacklog
		case rng.IntN(10) < 7:
			t.Status = filestore.StatusDone
		default:
			t.Status = open[rng.IntN(len(open))]
		}
		if t.Status == filestore.StatusBlocked {
			t.BlockedReason = "waiting for a decision"
		}
		if t.Status != filestore.StatusBacklog {
			t.AssigneeID = []string{"w1", "w2", "w3"}[i%3]
		}
		data, err := json.MarshalIndent(&t, "", "  ")
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "tasks", t.ID+".json"), append(data, '\n'), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}
