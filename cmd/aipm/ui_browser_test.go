package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aipm/aipm/filestore"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// liveWithin is how soon a change made by another process must show on the page.
const liveWithin = time.Second

// chromiumPath finds the browser for TestUIBrowser: $AIPM_CHROMIUM, else chromium on PATH.
func chromiumPath() string {
	if p := os.Getenv("AIPM_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestUIBrowser drives the page of a real `aipm ui` process with a real headless
// Chromium: the board renders the project; changes made by the CLI, an agent's `aipm mcp`,
// a hand edit, a `git pull`, an agent process's exit and a second `aipm ui` appear without
// a reload within a second; a chat message sent from the page lands in both mailboxes and
// the agent's answer appears; approving a request from the page approves it; a failed
// run shows with its log; a page loaded under a foreign host name (DNS rebinding) is
// refused. The board is a place to work: New task and Edit go through the store as the CLI
// does, the status menu and drag and drop offer only the moves the store's rules take now
// (the others with their reason), ids show short, a URL opens a task or a chat, Tab moves
// between columns, the page follows the system's dark setting, and on a phone each section
// is one tap away. With AIPM_UI_SHOTS=DIR (an absolute path: the test runs in cmd/aipm) it
// writes the screenshots of docs/ there (ui-board.png, ui-board-dark.png, ui-details.png,
// ui-chat.png, ui-needs-you.png, ui-phone-board.png, ui-phone-needs-you.png,
// ui-phone-details.png, ui-landing.png).
//
// Chromium comes from Debian's chromium package (.ci/run installs it). Without it the test
// is skipped, except under CI, where it fails.
func TestUIBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	chromium := chromiumPath()
	if chromium == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium is not installed (apt-get install chromium; .ci/run does); under CI the browser test must run")
		}
		t.Skip("chromium is not installed (apt-get install chromium); set AIPM_CHROMIUM to use another")
	}
	if _, err := exec.LookPath("aipm"); err != nil {
		t.Skip("aipm is not on PATH (TestMain puts it there)")
	}

	// The project: a manager and two workers under alice, a task tree with a dependency,
	// a blocked task, and git history (for the pull below).
	top := t.TempDir()
	repo := filepath.Join(top, "shop")
	clone := filepath.Join(top, "clone")
	os.MkdirAll(repo, 0o755)
	env := append(os.Environ(), "AIPM_USER=", "AIPM_ROOT=",
		"GIT_AUTHOR_NAME=alice", "GIT_AUTHOR_EMAIL=alice@example.com", "GIT_COMMITTER_NAME=alice",
		"GIT_COMMITTER_EMAIL=alice@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME="+top)
	run := func(dir, prog string, args ...string) string {
		t.Helper()
		cmd := exec.Command(prog, args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", prog, strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	aipm := func(args ...string) string { t.Helper(); return run(repo, "aipm", args...) }
	git := func(dir string, args ...string) string { t.Helper(); return run(dir, "git", args...) }

	git(repo, "init", "-q", "-b", "main")
	aipm("init", "--name", "online-shop", "--owner", "alice", "--description", "The shop's first release")
	aipm("agent", "add", "bob", "--type", "human", "--parent", "alice", "--role", "sales")
	aipm("agent", "add", "lead", "--name", "Lead", "--hierarchy", "manager", "--parent", "alice", "--role", "tech lead", "--passkey", "lead-passkey")
	aipm("agent", "add", "be1", "--parent", "lead", "--role", "backend", "--passkey", "be1-passkey")
	aipm("agent", "add", "fe1", "--parent", "lead", "--role", "frontend", "--passkey", "fe1-passkey")
	launch := aipm("task", "add", "Launch the online shop", "--assign", "lead", "--status", "todo", "--priority", "high",
		"--description", "Everything for the first public release.")
	aipm("task", "status", launch, "in_progress")
	api := aipm("task", "add", "Build the orders API", "--parent", launch, "--assign", "be1", "--status", "todo", "--priority", "high")
	aipm("task", "status", api, "in_progress")
	checkout := aipm("task", "add", "Checkout page", "--parent", launch, "--assign", "fe1", "--status", "todo", "--dep", api)
	pay := aipm("task", "add", "Choose a payment provider", "--parent", launch, "--assign", "be1", "--status", "todo")
	aipm("task", "status", pay, "in_progress")
	aipm("task", "status", pay, "done")
	notes := aipm("task", "add", "Write the release notes", "--parent", launch)
	hosting := aipm("task", "add", "Set up hosting", "--parent", launch, "--assign", "fe1", "--status", "todo")
	aipm("task", "status", hosting, "blocked", "--reason", "waiting for the cloud account")
	aipm("task", "add", "Product search", "--parent", checkout, "--assign", "fe1")
	// A backlog long enough to scroll.
	var items []string
	for i := range 30 {
		items = append(items, aipm("task", "add", fmt.Sprintf("Backlog item %d", i), "--priority", "low"))
	}
	// bob asks be1 for a task outside bob's chain: be1's request of it waits for approval.
	aipm("chat", "send", "--to", "be1", "Please add search to the user list", "--as", "bob")
	git(repo, "add", "-A")
	git(repo, "commit", "-q", "-m", "project")
	git(top, "clone", "-q", repo, clone)

	// be1's task session, a real `aipm mcp`.
	be1 := startAgent(t, repo, env, "be1", "be1-passkey", "task")

	// aipm ui, a real process; its first line is the URL.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	url := startUI(ctx, t, repo, env)
	port := strings.TrimPrefix(url, "http://127.0.0.1:")
	port = port[:strings.Index(port, "/")]

	// Headless Chromium: a new profile, no network beyond this machine; evil.test resolves
	// to 127.0.0.1, as a rebound name would.
	actx, acancel := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromium),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("no-proxy-server", true),
		chromedp.Flag("host-resolver-rules", "MAP evil.test 127.0.0.1"),
		chromedp.UserDataDir(filepath.Join(top, "chromium-profile")),
		chromedp.WindowSize(1440, 900),
	)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// click clicks like a person: at the element's place on the screen. The page redraws
	// when anything under .ai-pm/ changes; an element replaced between finding it and
	// clicking it is looked up again.
	click := func(what, sel string) {
		t.Helper()
		var err error
		for range 5 {
			if err = chromedp.Do(bctx, chromedp.Click(sel)); err == nil || !strings.Contains(err.Error(), "Could not find node") {
				break
			}
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	eval := func(expr string) string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("evaluating %s: %v", expr, err)
		}
		return v
	}
	// waitFor waits for a JavaScript condition on the page, re-checked at every DOM change,
	// and says how long it took.
	waitFor := func(what, cond string, limit time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		// Polled on an interval, not on DOM mutations: a condition such as where the focus
		// is changes no node, and would otherwise be looked at again only if something else
		// on the page happened to change.
		if _, err := chromedp.Run(bctx, chromedp.Poll[bool](cond, chromedp.WithPollingInterval(10*time.Millisecond), chromedp.WithPollingTimeout(limit))); err != nil {
			t.Fatalf("%s: not on the page within %v: %v\nfocus: %s\ndetails: %s\nfilters: %s\nboard: %s", what, limit, err,
				eval(`document.activeElement.outerHTML.slice(0, 120)`), eval(`document.getElementById('details').hidden + ' ' + document.getElementById('details').innerText.slice(0, 200)`),
				eval(`['search', 'f-assignee', 'f-status', 'f-priority', 'f-mine'].map(id => id + '=' + (document.getElementById(id).value || document.getElementById(id).getAttribute('aria-pressed'))).join(' ')`),
				eval(`document.getElementById('board').innerText`))
		}
		return time.Since(start)
	}
	card := func(status, id string) string {
		return fmt.Sprintf(`!!document.querySelector('#col-%s [data-task-id="%s"]')`, status, id)
	}

	// The board renders the project.
	do("opening the page", chromedp.EmulateViewport(1440, 900), chromedp.Navigate(url))
	waitFor("the board", card("in_progress", api), 30*time.Second)
	for _, c := range []struct{ status, id string }{{"in_progress", launch}, {"todo", checkout},
		{"backlog", notes}, {"blocked", hosting}} {
		waitFor("task "+c.id+" in column "+c.status, card(c.status, c.id), 5*time.Second)
	}
	// Done and cancelled are folded, with their counts; a click unfolds one.
	if got := eval(`document.querySelector('#col-done .n').textContent + ' ' + document.querySelectorAll('#col-done .card').length`); got != "1 0" {
		t.Errorf("the folded done column shows count and cards %q, want \"1 0\"", got)
	}
	click("unfolding done", `#col-done button.fold`)
	waitFor("the done task after unfolding", card("done", pay), 5*time.Second)
	click("folding done again", `#col-done button.fold`)
	// Ids on cards: the short id, at most 7 characters after tsk_.
	if got := eval(`document.querySelector('[data-task-id="` + api + `"] .tid').textContent`); !strings.HasPrefix(api, got) || len(got) > len("tsk_")+7 || len(got) < len("tsk_")+4 {
		t.Errorf("the card of %s shows the id %q, want its short id", api, got)
	}
	board := eval(`document.getElementById('board').innerText`)
	for _, want := range []string{"Launch the online shop", "waits for: Build the orders API (in progress)", "waiting for the cloud account", "Product search"} {
		if !strings.Contains(board, want) {
			t.Errorf("the board lacks %q:\n%s", want, board)
		}
	}
	// Sub-tasks are indented under their parent.
	if indent := eval(`getComputedStyle(document.querySelector('[data-task-id="` + api + `"]')).marginLeft`); indent != "14px" {
		t.Errorf("sub-task indentation %q, want 14px", indent)
	}
	if got := eval(`document.getElementById('project-name').textContent`); got != "online-shop" {
		t.Errorf("project name %q", got)
	}
	waitFor("be1's live task session", `document.querySelector('[data-agent-id="be1"]').innerText.includes('task session')`, 5*time.Second)
	waitFor("the blocked task in the attention list", `!!document.querySelector('#attention [data-kind="blocked"][data-task-id="`+hosting+`"]')`, 5*time.Second)
	eval(`window.aipmMark = "not reloaded"; ""`)
	// The README's first screenshot: the board as it opens, nothing else asked for.
	if dir := os.Getenv("AIPM_UI_SHOTS"); dir != "" {
		b, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot ui-board.png: %v", err)
		}
		if err := os.WriteFile(filepath.Join(dir, "ui-board.png"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Changes by other processes appear without a reload.
	var took []string
	live := func(what, cond string, change func()) {
		t.Helper()
		change()
		d := waitFor(what, cond, liveWithin)
		took = append(took, fmt.Sprintf("%s %v", what, d.Round(time.Millisecond)))
	}
	live("the CLI (aipm task status)", card("todo", notes), func() { aipm("task", "status", notes, "todo") })
	live("an agent (request_task through aipm mcp)", `!!document.querySelector('#attention [data-kind="approval"]')`, func() {
		res := be1.call(t, "request_task", map[string]any{"title": "Add search to the user list", "requester_id": "bob"})
		if !strings.Contains(res, `"approval":"pending_approval"`) {
			t.Fatalf("request_task: %s", res)
		}
	})
	live("a hand edit of tasks/<id>.json", `document.querySelector('[data-task-id="`+hosting+`"]').innerText.includes('Set up hosting on two zones')`, func() {
		path := filepath.Join(repo, ".ai-pm", "tasks", hosting+".json")
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(strings.Replace(string(b), `"title": "Set up hosting"`, `"title": "Set up hosting on two zones"`, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	translate := run(clone, "aipm", "task", "add", "Translate the shop", "--parent", launch)
	git(clone, "add", "-A")
	git(clone, "commit", "-q", "-m", "translation task")
	git(repo, "add", "-A")
	git(repo, "commit", "-q", "-m", "local work")
	live("a git pull", card("backlog", translate), func() { git(repo, "pull", "-q", "--no-rebase", "--no-edit", clone, "main") })

	// Approving the request from the page approves it, as alice, via ui. The request is
	// one item in Needs you (not also the store's message asking for it), in short ids.
	req := eval(`document.querySelector('#attention [data-kind="approval"]').dataset.taskId`)
	if got := eval(`[...document.querySelectorAll('#attention li')].filter(li => li.dataset.taskId === ` + jsString(req) + ` || li.innerText.includes(` + jsString(req[:len("tsk_")+4]) + `)).map(li => li.dataset.kind).join(',')`); got != "approval" {
		t.Errorf("Needs you about the request %s: %q, want one approval item", req, got)
	}
	if got := eval(`document.getElementById('attention').innerText`); regexp.MustCompile(`tsk_[0-9a-z]{26}`).MatchString(got) {
		t.Errorf("Needs you prints whole ids:\n%s", got)
	}
	if dir := os.Getenv("AIPM_UI_SHOTS"); dir != "" {
		eval(`document.getElementById('toast').hidden = true; ""`)
		b, err := chromedp.Run(bctx, chromedp.Screenshot(`#attention-pane`))
		if err != nil {
			t.Fatalf("screenshot ui-needs-you.png: %v", err)
		}
		if err := os.WriteFile(filepath.Join(dir, "ui-needs-you.png"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	click("clicking Approve", `#attention [data-kind="approval"] button.approve`)
	waitFor("the approval leaving the attention list", `!document.querySelector('#attention [data-kind="approval"]') && ![...document.querySelectorAll('#attention li')].some(li => li.dataset.taskId === `+jsString(req)+`)`, 5*time.Second)
	var shown struct {
		Approval   string `json:"approval"`
		ApprovedBy string `json:"approved_by"`
		History    []struct{ Actor, Via, Change string }
	}
	if err := json.Unmarshal([]byte(aipm("task", "show", req, "--json")), &shown); err != nil {
		t.Fatal(err)
	}
	if shown.Approval != "approved" || shown.ApprovedBy != "alice" {
		t.Errorf("request %s after Approve: approval %q by %q, want approved by alice", req, shown.Approval, shown.ApprovedBy)
	}
	if last := shown.History[len(shown.History)-1]; last.Actor != "alice" || last.Via != "ui" {
		t.Errorf("last history event of %s: %+v, want alice via ui", req, last)
	}

	// A column scrolled down keeps its place across a live change, and so do an open
	// task's details and the text typed in them; the page takes the change, not the state.
	eval(`window.aipmCol = document.getElementById('col-backlog'); ""`)
	scrolled := eval(`(() => { const c = document.querySelector('#col-backlog .cards'); c.scrollTop = 400; return String(c.scrollTop); })()`)
	if scrolled == "0" {
		t.Fatalf("the backlog column does not scroll")
	}
	click("opening a task's details", `[data-task-id="`+checkout+`"]`)
	waitFor("the details", `!!document.querySelector('#details input[name=reason]')`, 5*time.Second)
	// The status menu offers only the moves the store's rules allow now: in progress waits
	// for the orders API, and says so beside the menu, in short ids. No part of the details
	// prints "false" (a left-out part).
	if got := eval(`[...document.querySelectorAll('#details select[name=status] option:not([disabled])')].map(o => o.value).join(',')`); got != ",backlog,blocked,cancelled" {
		t.Errorf("status menu of a todo task waiting for a dependency offers %q", got)
	}
	shortCheckout := checkout[:len("tsk_")+4]
	if got := eval(`document.querySelector('#details ul.refused li[data-status="in_progress"]').innerText`); !strings.Contains(got, "task "+shortCheckout+" depends on unfinished tasks: "+api[:len("tsk_")+4]) || strings.Contains(got, api) {
		t.Errorf("the refused move reads %q, want the store's reason in short ids", got)
	}
	if got := eval(`document.getElementById('details').innerText`); strings.Contains(got, "false") || strings.Contains(got, "undefined") {
		t.Errorf("the details print a left-out part:\n%s", got)
	}
	do("typing a reason", chromedp.SendKeys(`#details input[name=reason]`, "half-typed reason"))
	loads := eval(`document.body.dataset.loaded`)
	bytesBefore := eval(`String(window.aipmStats.bytes)`)
	live("a CLI edit beside a scrolled column and open details", `document.querySelector('[data-task-id="`+items[5]+`"]').innerText.includes('renamed')`, func() {
		aipm("task", "edit", items[5], "--title", "Backlog item 5 renamed")
	})
	aipm("task", "edit", checkout, "--priority", "urgent")
	waitFor("the details after an edit of their task", `document.querySelector('#details dl').innerText.includes('urgent')`, 5*time.Second)
	got := eval(`[document.querySelector('#col-backlog .cards').scrollTop, window.aipmCol === document.getElementById('col-backlog'), document.querySelector('#details input[name=reason]').value, document.body.dataset.loaded].join('|')`)
	if want := scrolled + "|true|half-typed reason|" + loads; got != want {
		t.Errorf("after live changes: scroll|same column|typed reason|state loads = %q, want %q", got, want)
	}
	t.Logf("two task edits reached the page in %s bytes (before: %s)", eval(`String(window.aipmStats.bytes - `+bytesBefore+`)`), bytesBefore)
	do("closing the details with Escape", chromedp.KeyEvent("\x1b"))
	waitFor("the details closed", `document.getElementById('drawer').hidden`, 5*time.Second)

	// Filters and search narrow the board.
	visible := func() []string {
		t.Helper()
		v := eval(`[...document.querySelectorAll('#board .card')].map(c => c.dataset.taskId).sort().join(' ')`)
		return strings.Fields(v)
	}
	setFilter := func(id, value string) {
		t.Helper()
		eval(`(() => { const e = document.getElementById('` + id + `'); e.value = ` + jsString(value) + `; e.dispatchEvent(new Event(e.tagName === 'INPUT' ? 'input' : 'change')); return ''; })()`)
	}
	all := len(visible())
	do("searching", chromedp.SendKeys(`#search`, "ORDERS api"))
	waitFor("the search narrowing the board", `document.querySelectorAll('#board .card').length === 1`, 5*time.Second)
	if v := visible(); len(v) != 1 || v[0] != api {
		t.Errorf("search for \"ORDERS api\" shows %v, want %s", v, api)
	}
	shortHosting := eval(`document.querySelector('[data-task-id="` + hosting + `"] .tid').textContent`)
	setFilter("search", strings.TrimPrefix(shortHosting, "tsk_"))
	waitFor("a search by id", `document.querySelectorAll('#board .card').length === 1 && !!document.querySelector('[data-task-id="`+hosting+`"]')`, 5*time.Second)
	setFilter("search", "")
	setFilter("f-assignee", "fe1")
	waitFor("the assignee filter", `[...document.querySelectorAll('#board .card')].every(c => c.innerText.includes('@fe1'))`, 5*time.Second)
	if n := len(visible()); n == 0 || n >= all {
		t.Errorf("assignee fe1 shows %d of %d cards (search %q)", n, all, eval(`document.getElementById('search').value`))
	}
	setFilter("f-assignee", "")
	setFilter("f-priority", "high")
	waitFor("the priority filter", `document.querySelectorAll('#board .card').length === 2`, 5*time.Second)
	setFilter("f-priority", "")
	setFilter("f-status", "blocked")
	waitFor("the status filter", `document.querySelectorAll('#board .column').length === 1 && !!document.getElementById('col-blocked')`, 5*time.Second)
	setFilter("f-status", "")
	click("needs me", `#f-mine`)
	waitFor("the needs-me filter", `document.querySelectorAll('#board .card').length > 0 && document.querySelectorAll('#board .card').length < `+fmt.Sprint(all), 5*time.Second)
	if v, want := visible(), eval(`[...new Set([...document.querySelectorAll('#attention [data-task-id]')].map(li => li.dataset.taskId).filter(Boolean))].join(' ')`); !slices.Contains(v, hosting) || len(v) > len(strings.Fields(want)) {
		t.Errorf("needs me shows %v, want the tasks of the attention list %s", v, want)
	}
	click("needs me off", `#f-mine`)
	waitFor("the whole board again", `document.querySelectorAll('#board .card').length === `+fmt.Sprint(all), 5*time.Second)

	// Keyboard: "/" goes to the search, Tab reaches the cards, the arrows move between them,
	// Enter opens one, Escape closes it and gives the focus back. "/" is pressed with the
	// focus on no field: where the clicks above leave it varies (in the search, "/" is
	// typed, as it must be).
	eval(`(document.activeElement && document.activeElement.blur(), '')`)
	waitFor("the focus on no field", `document.activeElement === document.body`, 5*time.Second)
	do("pressing /", chromedp.KeyEvent("/"))
	waitFor("the focus on the search, empty", `document.activeElement.id === 'search' && document.activeElement.value === ''`, 5*time.Second)
	for i := 0; i < 15 && eval(`document.activeElement.classList.contains('card') ? 'card' : ''`) == ""; i++ {
		do("pressing Tab", chromedp.KeyEvent("\t"))
	}
	first := eval(`document.activeElement.classList.contains('card') ? document.activeElement.dataset.taskId : ''`)
	if first == "" {
		t.Fatalf("15 Tabs from the search never reached a card (focus on %s)", eval(`document.activeElement.outerHTML.slice(0, 80)`))
	}
	do("pressing the down arrow", chromedp.KeyEvent(kb.ArrowDown))
	second := eval(`document.activeElement.dataset.taskId || ''`)
	if second == "" || second == first {
		t.Errorf("the down arrow moved the focus from %s to %q", first, second)
	}
	do("pressing Enter", chromedp.KeyEvent("\r"))
	waitFor("the details of the focused card", `!document.getElementById('details').hidden && document.querySelector('#details .mono').textContent === `+jsString(second), 5*time.Second)
	do("pressing Escape", chromedp.KeyEvent("\x1b"))
	waitFor("the focus back on the card", `document.getElementById('drawer').hidden && document.activeElement.dataset.taskId === `+jsString(second), 5*time.Second)
	// Tab leaves the column for the next one (its fold button, then its card), never
	// another card of the same column; the page lists its keys.
	fromCol := eval(`document.activeElement.closest('.column').id`)
	for i := 0; i < 3; i++ {
		do("pressing Tab", chromedp.KeyEvent("\t"))
		if eval(`document.activeElement.classList.contains('card') ? 'card' : ''`) != "" {
			break
		}
	}
	if got := eval(`document.activeElement.classList.contains('card') ? document.activeElement.closest('.column').id : document.activeElement.outerHTML.slice(0, 60)`); got == fromCol || !strings.HasPrefix(got, "col-") {
		t.Errorf("Tab from a card of %s went to %q, want a card of the next column within 3 Tabs", fromCol, got)
	}
	if got := eval(`document.getElementById('keys').innerText`); !strings.Contains(got, "n new task") || !strings.Contains(got, "Tab next column") {
		t.Errorf("the keyboard hints read %q", got)
	}

	// New task (key n) and Edit: CreateTask and EditTask by alice via ui, as aipm task add
	// and aipm task edit.
	eval(`(document.activeElement && document.activeElement.blur(), '')`)
	do("pressing n", chromedp.KeyEvent("n"))
	waitFor("the New task form", `!!document.querySelector('#details form.new') && document.activeElement.name === 'title'`, 5*time.Second)
	do("typing a title", chromedp.SendKeys(`#details form.new input[name=title]`, "Write the privacy policy"))
	eval(`(() => { const f = document.querySelector('#details form.new'); f.priority.value = 'high'; f.dependencies.value = ` + jsString(api[:len("tsk_")+4]) + `; return ''; })()`)
	click("Create task", `#details form.new button.create`)
	waitFor("the new task's details", `!!document.querySelector('#details h3') && document.querySelector('#details h3').textContent === 'Write the privacy policy'`, 5*time.Second)
	made := eval(`document.querySelector('#details .mono').textContent`)
	var mt struct {
		Title, Priority, CreatedBy string
		Dependencies               []string
		History                    []struct{ Actor, Via, Change string }
	}
	showTask := func(id string) {
		t.Helper()
		var raw map[string]any
		out := aipm("task", "show", id, "--json")
		if err := json.Unmarshal([]byte(out), &raw); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(map[string]any{"Title": raw["title"], "Priority": raw["priority"], "CreatedBy": raw["created_by"], "Dependencies": raw["dependencies"], "History": raw["history"]})
		mt.Dependencies = nil
		json.Unmarshal(b, &mt)
	}
	showTask(made)
	if mt.Title != "Write the privacy policy" || mt.Priority != "high" || !slices.Equal(mt.Dependencies, []string{api}) || mt.CreatedBy != "alice" ||
		mt.History[0].Actor != "alice" || mt.History[0].Via != "ui" {
		t.Errorf("the task New task made: %+v, want the fields typed, its dependency expanded, by alice via ui", mt)
	}
	// Its link: the address bar names it by its short id, and the link's address is the same.
	waitFor("the new task's short link", `location.hash.length < '#task=tsk_'.length + 8 && document.querySelector('#details a.permalink').getAttribute('href') === location.hash`, 5*time.Second)
	if got := eval(`location.hash + ' ' + document.querySelector('#details a.permalink').getAttribute('href')`); !strings.HasPrefix(got, "#task=tsk_") || !strings.HasPrefix(made, strings.Fields(got)[0][len("#task="):]) || strings.Fields(got)[0] != strings.Fields(got)[1] {
		t.Errorf("the link of %s: address and link %q", made, got)
	}
	click("Edit", `#details button.edit`)
	waitFor("the Edit form", `!!document.querySelector('#details form.edit')`, 5*time.Second)
	eval(`(() => { const f = document.querySelector('#details form.edit'); f.title.value = 'Write the privacy policy and the terms'; f.dependencies.value = ''; return ''; })()`)
	click("Save", `#details form.edit button.save`)
	waitFor("the edited task's details", `!document.querySelector('#details form.edit') && document.querySelector('#details h3').textContent === 'Write the privacy policy and the terms'`, 5*time.Second)
	showTask(made)
	if last := mt.History[len(mt.History)-1]; mt.Title != "Write the privacy policy and the terms" || len(mt.Dependencies) != 0 || mt.Priority != "high" || last.Actor != "alice" || last.Via != "ui" || last.Change != "updated" {
		t.Errorf("after Edit: %+v, want the new title, no dependencies, by alice via ui", mt)
	}
	// A refused edit says why, in short ids: a task cannot depend on itself.
	click("Edit again", `#details button.edit`)
	waitFor("the Edit form", `!!document.querySelector('#details form.edit')`, 5*time.Second)
	eval(`(() => { const f = document.querySelector('#details form.edit'); f.dependencies.value = ` + jsString(made) + `; return ''; })()`)
	click("Save", `#details form.edit button.save`)
	waitFor("the refusal", `!document.getElementById('toast').hidden && document.getElementById('toast').innerText.includes('cannot depend on itself')`, 5*time.Second)
	if got := eval(`document.getElementById('toast').innerText`); strings.Contains(got, made) {
		t.Errorf("the toast prints the whole id: %q", got)
	}
	click("Cancel", `#details form.edit button.cancel`)
	do("closing the details", chromedp.KeyEvent("\x1b"))
	waitFor("the details closed", `document.getElementById('drawer').hidden && location.hash === ''`, 5*time.Second)
	// Links open what they name: a task, an agent's chat. A card's id is its task's link.
	if got := eval(`document.querySelector('[data-task-id="` + checkout + `"] a.tid').getAttribute('href')`); got != "#task="+shortCheckout {
		t.Errorf("the link on the card of %s: %q", checkout, got)
	}
	eval(`location.hash = '#task=` + shortCheckout + `'; ''`)
	waitFor("the linked task", `!document.getElementById('details').hidden && document.querySelector('#details .mono').textContent === `+jsString(checkout), 5*time.Second)
	if got := eval(`document.querySelector('#agents [data-agent-id="be1"] a.permalink').getAttribute('href')`); got != "#chat=be1" {
		t.Errorf("be1's link in the agents list: %q, want #chat=be1", got)
	}
	eval(`location.hash = '#chat=be1'; ''`)
	waitFor("the linked chat", `!document.getElementById('chat').hidden && document.querySelector('#chat h2').textContent.startsWith('Chat with be1') && document.querySelector('#chat a.permalink').getAttribute('href') === '#chat=be1'`, 5*time.Second)
	do("closing", chromedp.KeyEvent("\x1b"))
	waitFor("the drawer closed", `document.getElementById('drawer').hidden`, 5*time.Second)

	// Drag and drop: while a card is dragged the columns say whether they take it (by the
	// store's rules now); a drop where it is refused says why and changes nothing, a drop
	// where it is allowed is the status change.
	center := func(sel string) (float64, float64) {
		t.Helper()
		var xy []float64
		if err := json.Unmarshal([]byte(eval(`JSON.stringify((() => { const b = document.querySelector(`+jsString(sel)+`).getBoundingClientRect(); return [b.left + b.width / 2, b.top + Math.min(b.height / 2, 40)]; })())`)), &xy); err != nil {
			t.Fatal(err)
		}
		return xy[0], xy[1]
	}
	drag := func(what, id, to string) {
		t.Helper()
		x0, y0 := center(`[data-task-id="` + id + `"]`)
		x1, y1 := center(`#col-` + to + ` h2`)
		do(what, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x0, y0), chromedp.MouseEvent(input.DispatchMouseEventTypeMousePressed, x0, y0, chromedp.ButtonLeft, chromedp.ClickCount(1)),
			chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x0+20, y0+20, chromedp.ButtonLeft))
		waitFor("the columns marked for "+what, `document.body.dataset.dragReady === `+jsString(id), 5*time.Second)
		do(what, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x1, y1+30, chromedp.ButtonLeft), chromedp.MouseEvent(input.DispatchMouseEventTypeMouseReleased, x1, y1+30, chromedp.ButtonLeft, chromedp.ClickCount(1)))
	}
	// notes is todo, with no assignee: in progress refuses it; backlog takes it.
	x0, y0 := center(`[data-task-id="` + notes + `"]`)
	do("picking up a card", chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x0, y0), chromedp.MouseEvent(input.DispatchMouseEventTypeMousePressed, x0, y0, chromedp.ButtonLeft, chromedp.ClickCount(1)),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x0+20, y0+20, chromedp.ButtonLeft))
	waitFor("the columns marked", `document.body.dataset.dragReady === `+jsString(notes), 5*time.Second)
	if got := eval(`['backlog', 'in_progress', 'done'].map(s => document.getElementById('col-' + s).className.match(/drop-(ok|no)/)[0] + ':' + (document.getElementById('col-' + s).dataset.dropWhy || '')).join(' | ')`); !strings.HasPrefix(got, "drop-ok: | drop-no:task "+notes[:len("tsk_")+4]) || !strings.Contains(got, "has no assignee") || !strings.Contains(got, "drop-no:a todo task cannot move to done") {
		t.Errorf("while dragging a todo task with no assignee the columns read %q", got)
	}
	do("releasing it where it was", chromedp.MouseEvent(input.DispatchMouseEventTypeMouseReleased, x0+20, y0+20, chromedp.ButtonLeft, chromedp.ClickCount(1)))
	waitFor("the drag over", `!document.body.classList.contains('dragging') && document.getElementById('drawer').hidden`, 5*time.Second)
	drag("dropping on in progress", notes, "in_progress")
	waitFor("the refusal", `!document.getElementById('toast').hidden && document.getElementById('toast').innerText.includes('has no assignee')`, 5*time.Second)
	drag("dropping on backlog", notes, "backlog")
	waitFor("the card in backlog", card("backlog", notes), 5*time.Second)
	var moved struct {
		Status  string
		History []struct{ Actor, Via, To string }
	}
	if err := json.Unmarshal([]byte(aipm("task", "show", notes, "--json")), &moved); err != nil {
		t.Fatal(err)
	}
	if last := moved.History[len(moved.History)-1]; moved.Status != "backlog" || last.Actor != "alice" || last.Via != "ui" || last.To != "backlog" {
		t.Errorf("after the drop: status %s, last event %+v; want backlog by alice via ui", moved.Status, last)
	}

	// Dark mode follows the system's setting.
	bg := func() string {
		return eval(`getComputedStyle(document.body).backgroundColor + ' ' + getComputedStyle(document.querySelector('.card')).backgroundColor`)
	}
	light := bg()
	if _, err := chromedp.Call(bctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}); err != nil {
		t.Fatal(err)
	}
	dark := bg()
	if dark == light || !strings.HasPrefix(dark, "rgb(18, 21, 28) rgb(28, 33, 43)") {
		t.Errorf("with the system's dark setting the page and a card are %q (light: %q)", dark, light)
	}
	if dir := os.Getenv("AIPM_UI_SHOTS"); dir != "" {
		if b, err := chromedp.Run(bctx, chromedp.FullScreenshot(100)); err == nil {
			os.WriteFile(filepath.Join(dir, "ui-board-dark.png"), b, 0o644)
		}
	}
	if _, err := chromedp.Call(bctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "light"}}}); err != nil {
		t.Fatal(err)
	}

	// A phone, 390×844: every box that holds text (a block: a column, a card and its
	// lines, a pane, a list item, a heading, a form field) is at least 300 px wide — the
	// words inside them (spans, links, button labels) are not boxes of their own — and
	// nothing makes the page scroll sideways; the details cover the screen.
	narrow := `(() => {
		const boxes = new Set(['DIV', 'SECTION', 'ASIDE', 'NAV', 'HEADER', 'MAIN', 'UL', 'LI', 'P', 'H2', 'H3', 'DL', 'DT', 'DD', 'PRE', 'FORM', 'INPUT', 'SELECT', 'TEXTAREA']);
		const bad = [];
		for (const e of document.querySelectorAll('body *')) {
			if (!boxes.has(e.tagName) || e.closest('[hidden]')) continue;
			if (!e.innerText.trim() && !/INPUT|SELECT|TEXTAREA/.test(e.tagName)) continue;
			const w = e.getBoundingClientRect().width;
			if (w > 0 && w < 300) bad.push((e.id ? '#' + e.id : e.tagName.toLowerCase() + '.' + e.className) + ' "' + e.innerText.trim().slice(0, 20) + '" ' + Math.round(w) + 'px');
		}
		if (document.documentElement.scrollWidth > innerWidth) bad.push('page ' + document.documentElement.scrollWidth + 'px wide');
		return bad.join('; ');
	})()`
	do("a phone's screen", chromedp.EmulateViewport(390, 844))
	waitFor("the phone layout", `innerWidth === 390 && document.getElementById('board').getBoundingClientRect().width > 300`, 5*time.Second)
	if bad := eval(narrow); bad != "" {
		t.Errorf("at 390×844, boxes narrower than 300 px hold text: %s", bad)
	}
	shots := os.Getenv("AIPM_UI_SHOTS")
	phoneShot := func(name string) {
		if shots == "" {
			return
		}
		eval(`document.getElementById('toast').hidden = true; ""`)
		b, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(shots, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	phoneShot("ui-phone-board.png")
	// Each section one tap away in the tab bar: Needs you, the agents, the chat, the board;
	// each shows on the screen without scrolling.
	for _, c := range []struct{ tab, shows string }{{"attention", "attention-pane"}, {"agents", "agents-pane"}, {"chat", "chat"}, {"board", "board"}} {
		click("the "+c.tab+" tab", `#tabs button[data-tab="`+c.tab+`"]`)
		waitFor("the "+c.tab+" section on the phone", `(() => { const r = document.getElementById('`+c.shows+`').getBoundingClientRect(); return r.height > 0 && r.top >= 0 && r.top < innerHeight - 100; })()`, 5*time.Second)
		if c.tab != "board" && eval(`String(document.getElementById('board').getBoundingClientRect().height)`) != "0" {
			t.Errorf("the %s tab shows the board too", c.tab)
		}
		if bad := eval(narrow); bad != "" {
			t.Errorf("at 390×844 on the %s tab, boxes narrower than 300 px hold text: %s", c.tab, bad)
		}
		if c.tab == "attention" {
			phoneShot("ui-phone-needs-you.png")
		}
	}
	// New task on the phone: the form covers the screen, its fields take the width.
	click("New task on the phone", `#new-task`)
	waitFor("the New task form on the phone", `!!document.querySelector('#details form.new')`, 5*time.Second)
	if bad := eval(narrow); bad != "" {
		t.Errorf("at 390×844 with the New task form, boxes narrower than 300 px hold text: %s", bad)
	}
	if w := eval(`String(Math.round(document.querySelector('#details form.new input[name=title]').getBoundingClientRect().width))`); w < "300" || len(w) != 3 {
		t.Errorf("the title field of New task on a phone is %s px wide", w)
	}
	do("closing the form", chromedp.KeyEvent("\x1b"))
	waitFor("the form closed", `document.getElementById('drawer').hidden`, 5*time.Second)
	click("a card on the phone", `[data-task-id="`+checkout+`"]`)
	waitFor("the details on the phone", `!document.getElementById('details').hidden && !!document.querySelector('#details h3')`, 5*time.Second)
	if bad := eval(narrow); bad != "" {
		t.Errorf("at 390×844 with details open, boxes narrower than 300 px hold text: %s", bad)
	}
	if w := eval(`String(Math.round(document.getElementById('details').getBoundingClientRect().width))`); w != "390" {
		t.Errorf("the details on a phone are %s px wide, want the screen's 390", w)
	}
	phoneShot("ui-phone-details.png")
	do("closing the details", chromedp.KeyEvent("\x1b"))
	do("back to a desktop screen", chromedp.EmulateViewport(1440, 900))
	waitFor("the desktop layout", `innerWidth === 1440`, 5*time.Second)

	// Chat: alice writes to be1 from the page; the message lands in both mailboxes; be1's
	// chat session answers and the answer appears in the pane.
	click("opening the chat with be1", `#agents [data-agent-id="be1"]`)
	waitFor("the chat pane", `!!document.querySelector('#chat textarea')`, 5*time.Second)
	const hello = "Hi be1, how is the orders API going?"
	do("typing a message", chromedp.SendKeys(`#chat textarea`, hello))
	click("sending it", `#chat button.send`)
	waitFor("the sent message in the pane", `[...document.querySelectorAll('#chat .msg.mine')].some(m => m.innerText.includes(`+jsString(hello)+`))`, 5*time.Second)
	for _, box := range []string{"alice", "be1"} {
		b, err := os.ReadFile(filepath.Join(repo, ".ai-pm", "agents", box, "chat.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `"senderId":"alice"`) || !strings.Contains(string(b), hello) {
			t.Errorf("%s's mailbox lacks alice's message:\n%s", box, b)
		}
	}
	chat := startAgent(t, repo, env, "be1", "be1-passkey", "chat")
	const answer = "Going well: orders can be created; payments next."
	live("an agent's answer in the chat pane", `[...document.querySelectorAll('#chat .msg:not(.mine)')].some(m => m.innerText.includes(`+jsString(answer)+`))`, func() {
		chat.call(t, "send_message", map[string]any{"target_agent_id": "alice", "content": answer})
	})

	// be1's task session opens its run, and its process exits before reporting: the failed
	// run waits for the human, and the task's details show it with its log.
	var myTask struct {
		ExecutionID string `json:"execution_id"`
	}
	if err := json.Unmarshal([]byte(be1.call(t, "get_my_task", map[string]any{})), &myTask); err != nil || myTask.ExecutionID == "" {
		t.Fatalf("get_my_task: no execution_id (%v)", err)
	}
	live("an agent process's exit (a failed run)", `!!document.querySelector('#attention [data-kind="failed_run"][data-task-id="`+api+`"]')`, func() {
		be1.c.Close()
	})
	// A second aipm ui beside the first (it holds no state): its Assign shows here.
	other := startUI(ctx, t, repo, env)
	live("another aipm ui (its Assign)", `document.querySelector('[data-task-id="`+checkout+`"]').innerText.includes('@be1')`, func() {
		base, tok, _ := strings.Cut(other, "/?token=")
		req, err := http.NewRequest("POST", base+"/api/tasks/"+checkout+"/assign", strings.NewReader(`{"assignee":"be1"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Aipm-Token", tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("Assign through the second aipm ui: %d %s", resp.StatusCode, b)
		}
	})
	t.Logf("on the page after the writing process returned: %s", strings.Join(took, "; "))
	// The output aipm run keeps of the process, beside the run record.
	if err := os.WriteFile(filepath.Join(repo, ".ai-pm", "executions", myTask.ExecutionID+".log"),
		[]byte("reading the orders schema\nPOST /orders: 201\nerror: the payments service is unreachable\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	click("the failed run in the attention list", `#attention [data-kind="failed_run"]`)
	// The run counts its session's calls: authenticate and get_my_task at least.
	waitFor("the task's runs", `[...document.querySelectorAll('#details .runs li')].some(li => li.innerText.includes('failed') && /[2-9] tool calls \(\d+\.\d KB requests, \d+\.\d KB results\)/.test(li.innerText))`, 5*time.Second)
	click("showing the run's log", `#details .runs a.ref`)
	waitFor("the run's log", `!!document.querySelector('#details pre.log') && document.querySelector('#details pre.log').innerText.includes('the payments service is unreachable')`, 5*time.Second)

	// The README's screenshots: the board with a task's details, and the chat pane.
	if dir := os.Getenv("AIPM_UI_SHOTS"); dir != "" {
		eval(`document.getElementById('toast').hidden = true; ""`)
		shot := func(name string, a chromedp.Action[[]byte]) {
			b, err := chromedp.Run(bctx, a)
			if err != nil {
				t.Fatalf("screenshot %s: %v", name, err)
			}
			if !strings.HasPrefix(string(b), "\x89PNG") {
				t.Fatalf("screenshot %s is not a PNG", name)
			}
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		shot("ui-details.png", chromedp.FullScreenshot(100))
		shot("ui-chat.png", chromedp.Screenshot(`#chat`))
	}

	// The attention list's messages are marked read as `aipm chat log` marks them.
	click("marking the messages read", `#attention button.read-all`)
	waitFor("no message in the attention list", `!document.querySelector('#attention [data-kind="message"]')`, 5*time.Second)
	var status struct {
		Agents []struct {
			ID     string `json:"id"`
			Unread int    `json:"unread_messages"`
		} `json:"agents"`
	}
	if err := json.Unmarshal([]byte(aipm("status", "--json")), &status); err != nil {
		t.Fatal(err)
	}
	for _, a := range status.Agents {
		if a.ID == "alice" && a.Unread != 0 {
			t.Errorf("alice has %d unread messages after Mark read", a.Unread)
		}
	}

	landingShot := func() {
		if dir := os.Getenv("AIPM_UI_SHOTS"); dir != "" {
			eval(`document.getElementById('toast').hidden = true; ""`)
			b, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
			if err != nil {
				t.Fatalf("screenshot ui-landing.png: %v", err)
			}
			if err := os.WriteFile(filepath.Join(dir, "ui-landing.png"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	phone := func(what string) {
		t.Helper()
		do("a phone's screen", chromedp.EmulateViewport(390, 844))
		waitFor("the phone layout", `innerWidth === 390`, 5*time.Second)
		if bad := eval(narrow); bad != "" {
			t.Errorf("at 390×844 with %s, boxes narrower than 300 px hold text: %s", what, bad)
		}
		do("back to a desktop screen", chromedp.EmulateViewport(1440, 900))
		waitFor("the desktop layout", `innerWidth === 1440`, 5*time.Second)
	}
	testUILanding(t, repo, aipm, git, click, eval, waitFor, landingShot, phone)

	if got := eval(`String(window.aipmMark)`); got != "not reloaded" {
		t.Errorf("the page was reloaded (mark %q)", got)
	}

	// A page loaded under another name is refused (DNS rebinding), token or not.
	do("opening the page as evil.test", chromedp.Navigate("http://evil.test:"+port+"/?token="+strings.SplitN(url, "token=", 2)[1]))
	body := eval(`document.body.innerText`)
	if !strings.Contains(body, "refused") || strings.Contains(body, "online-shop") {
		t.Errorf("the page under evil.test:%s shows %q, want the refusal", port, body)
	}
	stateBody, err := chromedp.Run(bctx, chromedp.Evaluate[string](`fetch('/api/state?token=`+strings.SplitN(url, "token=", 2)[1]+`').then(r => r.status + ' ' + r.statusText)`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(stateBody, "403") {
		t.Errorf("GET /api/state under evil.test: %s, want 403", stateBody)
	}

	// A tab survives a restart of aipm ui on a fixed address: the token is this machine's,
	// kept in the runtime area. A tab whose server is gone, or does not take its token,
	// says what to do.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	fixed, stopFixed := startUIProc(ctx, t, repo, env, "--addr", addr)
	if tokenOf := func(u string) string { return u[strings.Index(u, "token=")+len("token="):] }; tokenOf(fixed) != tokenOf(url) {
		t.Errorf("a second aipm ui on this machine printed token %s, want the machine's %s", tokenOf(fixed), tokenOf(url))
	}
	do("opening the page on the fixed address", chromedp.Navigate(fixed))
	waitFor("the board on the fixed address", card("in_progress", api), 30*time.Second)
	stopFixed()
	waitFor("the tab saying aipm ui is gone", `!document.getElementById('banner').hidden && document.getElementById('banner').innerText.includes('not running')`, 10*time.Second)
	again, stopAgain := startUIProc(ctx, t, repo, env, "--addr", addr)
	if again != fixed {
		t.Errorf("aipm ui restarted on %s printed %s, want the same URL %s", addr, again, fixed)
	}
	waitFor("the tab reconnecting by itself", `document.getElementById('banner').hidden && document.getElementById('live').className === 'live on'`, 10*time.Second)
	do("reloading the tab", chromedp.Reload())
	waitFor("the board in the reloaded tab", card("in_progress", api), 30*time.Second)
	stopAgain()
	st, err := filestore.Open(repo, filestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mdir, err := st.MachineDir()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(mdir, "ui-token")); err != nil {
		t.Fatal(err)
	}
	if other, _ := startUIProc(ctx, t, repo, env, "--addr", addr); other == fixed {
		t.Errorf("with the token file removed, aipm ui kept the token: %s", other)
	}
	waitFor("the stale tab saying what to do", `!document.getElementById('banner').hidden && document.getElementById('banner').innerText.includes('no longer valid')`, 10*time.Second)
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// agentProc is a real `aipm mcp` process authenticated as one agent.
type agentProc struct {
	c *client.Client
}

// startAgent starts `aipm mcp` in repo and authenticates agent for purpose.
func startAgent(t *testing.T, repo string, env []string, agent, passkey, purpose string) *agentProc {
	t.Helper()
	c, err := client.NewStdioMCPClient("aipm", append(env, "AIPM_ROOT="+repo), "mcp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "ui-test", Version: "1"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	p := &agentProc{c: c}
	res := p.call(t, "authenticate", map[string]any{"agent_id": agent, "passkey": passkey, "purpose": purpose})
	if !strings.Contains(res, `"purpose":"`+purpose+`"`) {
		t.Fatalf("authenticate %s for %s: %s", agent, purpose, res)
	}
	return p
}

// call calls a tool and returns its text.
func (p *agentProc) call(t *testing.T, tool string, args map[string]any) string {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := p.c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var sb strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			sb.WriteString(tc.Text)
		}
	}
	return sb.String()
}

// startUI starts `aipm ui` in repo and returns the URL its first line prints; the process
// is interrupted when the test ends.
func startUI(ctx context.Context, t testing.TB, repo string, env []string, args ...string) string {
	url, _ := startUIProc(ctx, t, repo, env, args...)
	return url
}

// startUIProc is startUI that also returns a function stopping the process (as Ctrl-C does)
// and waiting for it.
func startUIProc(ctx context.Context, t testing.TB, repo string, env []string, args ...string) (string, func()) {
	t.Helper()
	ui := exec.CommandContext(ctx, "aipm", append([]string{"ui"}, args...)...)
	ui.Dir, ui.Env = repo, env
	out, err := ui.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	ui.Stderr = &stderr
	if err := ui.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			ui.Process.Signal(os.Interrupt)
			ui.Wait()
		})
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("aipm ui stderr:\n%s", stderr.String())
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the URL from aipm ui: %v", err)
	}
	url := strings.TrimSpace(line)
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.Contains(url, "/?token=") {
		t.Fatalf("aipm ui's first line %q, want http://127.0.0.1:PORT/?token=…", url)
	}
	return url, stop
}

// testUILanding is TestUIBrowser's part about code: tasks on branches of their own, in
// real worktrees beside the repository where `aipm run` makes them, with landing records
// as the merge queue writes them (the store's calls the queue makes; running the queue
// would need agents that write code). Each card shows its landing; a task's details show
// its branch, what went wrong and its diff, as text (the patch holds markup); a landing
// that waits for the human is in Needs you, and Retry and Abandon there are the queue's
// own calls (the worktree goes with Abandon), and the item goes.
func testUILanding(t *testing.T, repo string, aipm func(...string) string, git func(string, ...string) string,
	click func(what, sel string), eval func(string) string, waitFor func(what, cond string, limit time.Duration) time.Duration,
	shot func(), phone func(what string)) {
	t.Helper()
	st, err := filestore.Open(repo, filestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	machine, err := st.MachineID()
	if err != nil {
		t.Fatal(err)
	}
	queue := filestore.Actor{ID: "aipm-land", Via: filestore.ViaCoordinator}
	base := git(repo, "rev-parse", "main")
	worktree := func(id string) string { return filepath.Join(filepath.Dir(repo), filepath.Base(repo)+".worktrees", id) }
	// task starts a task on its branch, commits files there, and finishes it: done
	// queues its landing, which change then sets as the queue would.
	task := func(title string, files map[string]string, change func(l *filestore.Landing)) (id, commit string) {
		t.Helper()
		id = aipm("task", "add", title, "--assign", "fe1", "--status", "todo")
		aipm("task", "status", id, "in_progress")
		wt := worktree(id)
		git(repo, "worktree", "add", "-q", "-b", "aipm/"+id, wt, base)
		for name, body := range files {
			if err := os.WriteFile(filepath.Join(wt, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		git(wt, "add", "-A")
		git(wt, "commit", "-q", "-m", title)
		commit = git(wt, "rev-parse", "HEAD")
		if _, err := st.BeginLanding(queue, id, filestore.Landing{Target: "main", Branch: "aipm/" + id, Base: base, Machine: machine}); err != nil {
			t.Fatal(err)
		}
		aipm("task", "status", id, "done")
		if _, err := st.UpdateLanding(queue, id, func(_ *filestore.Task, l *filestore.Landing) error { change(l); return nil }); err != nil {
			t.Fatal(err)
		}
		return id, commit
	}
	const markup = `<img src=x onerror="window.pwned=1">`
	filter, _ := task("Add the price filter", map[string]string{"filter.js": "// price filter\nconst tag = '" + markup + "';\n"}, func(l *filestore.Landing) {
		l.State, l.Attempts, l.NeedsHuman = filestore.LandCheckFailed, 3, true
		l.Detail = "the check `sh check.sh` failed (exit status 1); the end of its output:\n<b>found BROKEN</b> in filter.js"
	})
	footer, _ := task("Tidy the footer", map[string]string{"footer.html": "<footer>shop</footer>\n"}, func(l *filestore.Landing) {
		l.State, l.Attempts, l.NeedsHuman, l.Detail = filestore.LandConflict, 3, true, "the rebase onto main conflicts in footer.html"
	})
	banner, landed := task("Add a banner", map[string]string{"banner.txt": "sale\n"}, func(l *filestore.Landing) {})
	if _, err := st.UpdateLanding(queue, banner, func(_ *filestore.Task, l *filestore.Landing) error {
		l.State, l.LandedCommit = filestore.LandLanded, landed
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	// The cards say where each task's code is. (The details and chat opened before cover
	// the done column: Escape closes them.)
	escape := func() { eval(`document.dispatchEvent(new KeyboardEvent('keydown', {key: 'Escape'})); ""`) }
	escape()
	waitFor("the drawer closed", `document.getElementById('drawer').hidden`, 5*time.Second)
	if eval(`document.getElementById('col-done').classList.contains('folded') ? 'folded' : ''`) != "" {
		click("unfolding done", `#col-done button.fold`)
	}
	badge := func(id string) string { return `document.querySelector('#col-done [data-task-id="` + id + `"] .land')` }
	waitFor("the landing badges", badge(filter)+` && `+badge(filter)+`.textContent === 'check failed · needs you' && `+
		badge(footer)+` && `+badge(footer)+`.textContent === 'conflict · needs you' && `+
		badge(banner)+` && `+badge(banner)+`.textContent === 'landed `+landed[:10]+`'`, 5*time.Second)

	// Needs you: each landing that waits for the human, with its attempts and what went wrong.
	item := func(id string) string { return `#attention [data-kind="landing"][data-task-id="` + id + `"]` }
	waitFor("the landings in Needs you", `!!document.querySelector('`+item(filter)+`') && !!document.querySelector('`+item(footer)+`')`, 5*time.Second)
	if got := eval(`document.querySelector('` + item(filter) + `').innerText`); !strings.Contains(got, "Add the price filter — check failed after 3 attempts: the check `sh check.sh` failed") ||
		!strings.Contains(got, "Retry") || !strings.Contains(got, "Abandon") {
		t.Errorf("the landing in Needs you reads %q, want its attempts, what went wrong, Retry and Abandon", got)
	}

	// Its details: the branch, the landing, the check's output and the diff, as text.
	click("opening the details of a landing that failed", `#col-done [data-task-id="`+filter+`"]`)
	waitFor("the code in the details", `!!document.querySelector('#details dl.code') && !!document.querySelector('#details pre.stat')`, 5*time.Second)
	code := eval(`document.querySelector('#details dl.code').innerText`)
	for _, want := range []string{"aipm/" + filter + " from main at " + base[:10], "failed attempts\n3", "check failed · needs you"} {
		if !strings.Contains(code, want) {
			t.Errorf("the details' code facts lack %q:\n%s", want, code)
		}
	}
	if got := eval(`document.querySelector('#details dl.facts').innerText`); !strings.Contains(got, "check failed · needs you") {
		t.Errorf("the details' status lacks the landing:\n%s", got)
	}
	if got := eval(`document.querySelector('#details pre.land-detail').textContent + '|' + document.querySelectorAll('#details pre.land-detail b').length`); got != "the check `sh check.sh` failed (exit status 1); the end of its output:\n<b>found BROKEN</b> in filter.js|0" {
		t.Errorf("the landing's detail shows %q, want the check's output as text", got)
	}
	if got := eval(`document.querySelector('#details pre.stat').textContent`); !strings.Contains(got, "filter.js") || !strings.Contains(got, "1 file changed") {
		t.Errorf("the changed files read %q, want git's summary naming filter.js", got)
	}
	click("unfolding the diff", `#details details.diff summary`)
	waitFor("the diff", `!!document.querySelector('#details pre.diff') && document.querySelector('#details pre.diff').textContent.includes('+const tag')`, 5*time.Second)
	if got := eval(`document.querySelector('#details pre.diff').textContent`); !strings.Contains(got, "+const tag = '"+markup+"';") || !strings.Contains(got, "diff --git a/filter.js b/filter.js") {
		t.Errorf("the diff reads %q, want the patch of filter.js as text", got)
	}
	if got := eval(`String(document.querySelectorAll('#details pre.diff img').length) + ' ' + String(window.pwned)`); got != "0 undefined" {
		t.Errorf("the diff's markup was parsed as HTML: images and pwned %q", got)
	}
	shot() // the README's ui-landing.png
	phone("a task's code and diff open")
	// The unfolded diff stays unfolded when the landing changes underneath (and is read
	// again).
	if _, err := st.UpdateLanding(queue, filter, func(_ *filestore.Task, l *filestore.Landing) error {
		l.Detail += "\nthe queue looked again"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	waitFor("the details after a change of the landing", `document.querySelector('#details pre.land-detail').textContent.includes('looked again')`, 5*time.Second)
	waitFor("the diff still unfolded", `!!document.querySelector('#details details.diff[open] pre.diff span')`, 5*time.Second)

	// Retry in Needs you: the queue's Retry, by alice via ui; the item goes.
	click("Retry", item(filter)+` button.retry`)
	waitFor("the retried landing leaving Needs you", `!document.querySelector('`+item(filter)+`')`, 5*time.Second)
	var shown struct {
		Landing filestore.Landing `json:"landing"`
		History []struct{ Actor, Via, Change, To string }
	}
	if err := json.Unmarshal([]byte(aipm("task", "show", filter, "--json")), &shown); err != nil {
		t.Fatal(err)
	}
	if shown.Landing.State != filestore.LandQueued || shown.Landing.NeedsHuman || shown.Landing.Detail != "retried by alice" {
		t.Errorf("landing after Retry: %+v, want queued again, retried by alice", shown.Landing)
	}
	if last := shown.History[len(shown.History)-1]; last.Actor != "alice" || last.Via != "ui" || last.To != filestore.LandQueued {
		t.Errorf("last history event after Retry: %+v, want alice via ui → queued", last)
	}
	waitFor("the details following the retry", `document.querySelector('#details dl.code').innerText.includes('queued') && !document.querySelector('#details .needs-you')`, 5*time.Second)

	// Abandon: the code is given up, its worktree removed; the item goes.
	eval(`window.confirm = () => true; ""`)
	click("Abandon", item(footer)+` button.abandon`)
	waitFor("the abandoned landing leaving Needs you", `!document.querySelector('`+item(footer)+`') && !document.querySelector('#attention [data-kind="landing"]')`, 5*time.Second)
	if err := json.Unmarshal([]byte(aipm("task", "show", footer, "--json")), &shown); err != nil {
		t.Fatal(err)
	}
	if shown.Landing.State != filestore.LandAbandoned || shown.Landing.NeedsHuman {
		t.Errorf("landing after Abandon: %+v, want abandoned", shown.Landing)
	}
	// The worktree goes after the record that takes the item away: wait for it.
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(worktree(footer)); os.IsNotExist(err) {
			break
		}
	}
	if _, err := os.Stat(worktree(footer)); !os.IsNotExist(err) {
		t.Errorf("the abandoned task's worktree %s: %v, want it removed", worktree(footer), err)
	}
	waitFor("the abandoned badge", badge(footer)+` && `+badge(footer)+`.textContent === 'abandoned'`, 5*time.Second)
	escape()
	waitFor("the details closed", `document.getElementById('drawer').hidden`, 5*time.Second)
}
