package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The README's quick start is fenced by these comments; every shell line between them is a
// command a reader types.
const (
	quickStartBegin = "<!-- quickstart:begin -->"
	quickStartEnd   = "<!-- quickstart:end -->"
)

// quickStartLines returns the command lines of the shell blocks between the quick start's
// markers: every line of a fenced block that is not blank, not a comment alone, and not a
// continuation comment (a line of only spaces and a `#` comment).
func quickStartLines(readme string) ([]string, error) {
	_, rest, ok := strings.Cut(readme, quickStartBegin)
	if !ok {
		return nil, fmt.Errorf("README.md has no %s", quickStartBegin)
	}
	block, _, ok := strings.Cut(rest, quickStartEnd)
	if !ok {
		return nil, fmt.Errorf("README.md has %s but no %s", quickStartBegin, quickStartEnd)
	}
	var lines []string
	inFence := false
	for _, l := range strings.Split(block, "\n") {
		if strings.HasPrefix(l, "```") {
			inFence = !inFence
			continue
		}
		if t := strings.TrimSpace(l); inFence && t != "" && !strings.HasPrefix(t, "#") {
			lines = append(lines, l)
		}
	}
	if inFence {
		return nil, fmt.Errorf("the quick start's code block is not closed")
	}
	return lines, nil
}

func TestQuickStartLines(t *testing.T) {
	got, err := quickStartLines("intro\n" + quickStartBegin + "\n```sh\ngit init x   # a comment\n\n" +
		"                 # more of the comment\ncd x\n```\nprose\n```sh\naipm ui\n```\n" + quickStartEnd + "\n```sh\nnot this\n```\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"git init x   # a comment", "cd x", "aipm ui"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("lines = %q, want %q", got, want)
	}
	for _, bad := range []string{"no markers", quickStartBegin + "\n```sh\naipm init\n```\n", quickStartBegin + "\n```sh\naipm init\n" + quickStartEnd} {
		if _, err := quickStartLines(bad); err == nil {
			t.Errorf("quickStartLines(%q): no error", bad)
		}
	}
}

// TestReadmeQuickStart runs the README's two-minute tour word for word, as a new user would:
// the aipm built from this tree on PATH, a fresh home directory (git's identity in it, as any
// committer has), an empty directory to start in. Each line must exit 0; `cd` moves the
// lines after it, as in the reader's shell; `aipm ui`, which serves until Ctrl-C, must print
// its URL and serve the tour's tasks there, and then stop on an interrupt. At the end the
// tour's work is done and landed.
func TestReadmeQuickStart(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines, err := quickStartLines(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build aipm with")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("the quick start needs git")
	}
	top := t.TempDir()
	bin := filepath.Join(top, "bin")
	if out, err := exec.Command(goTool, "build", "-o", filepath.Join(bin, "aipm"), ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	home := filepath.Join(top, "home")
	os.MkdirAll(home, 0o755)
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[user]\n\tname = Alice\n\temail = alice@example.com\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + home, "PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1"}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "HOME" || k == "PATH" || strings.HasPrefix(k, "AIPM_") || strings.HasPrefix(k, "GIT_") || strings.HasPrefix(k, "XDG_"):
		default:
			env = append(env, kv)
		}
	}
	dir := filepath.Join(top, "start")
	os.MkdirAll(dir, 0o755)

	var chat string // what `aipm chat log` printed
	sawUI := false
	for _, line := range lines {
		words := strings.Fields(line)
		switch {
		case words[0] == "cd":
			if len(words) != 2 {
				t.Fatalf("%q: the test follows a plain `cd DIR` only", line)
			}
			dir = filepath.Join(dir, words[1])
			if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
				t.Fatalf("%q: no directory %s", line, dir)
			}
		case len(words) >= 2 && words[0] == "aipm" && words[1] == "ui":
			sawUI = true
			checkUI(t, line, dir, env)
		default:
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			cmd := exec.CommandContext(ctx, "sh", "-c", line)
			cmd.Dir, cmd.Env = dir, env
			out, err := cmd.CombinedOutput()
			cancel()
			if err != nil {
				t.Fatalf("%s\n%s: %v", out, line, err)
			}
			t.Logf("$ %s\n%s", line, out)
			if strings.HasPrefix(line, "aipm chat log") {
				chat = string(out)
			}
		}
	}
	if !sawUI {
		t.Error("the quick start does not end in `aipm ui`")
	}

	// What the tour says it makes: the answer, a commit per task on the branch, both tasks
	// done and landed.
	answer, err := os.ReadFile(filepath.Join(dir, "answer.txt"))
	if err != nil || strings.TrimSpace(string(answer)) != "42" {
		t.Errorf("answer.txt = %q, %v; want 42", answer, err)
	}
	gitLog := exec.Command("git", "log", "--format=%s")
	gitLog.Dir, gitLog.Env = dir, env
	out, err := gitLog.Output()
	if err != nil || string(out) != "Double it\nPick a number\nfirst commit\n" {
		t.Errorf("git log = %q, %v; want a commit per task on the first", out, err)
	}
	list := exec.Command(filepath.Join(bin, "aipm"), "--json", "task", "list")
	list.Dir, list.Env = dir, env
	out, err = list.Output()
	if err != nil {
		t.Fatalf("aipm task list: %v", err)
	}
	var tasks []struct {
		Title, Status string
		Landing       *struct{ State string }
	}
	if err := json.Unmarshal(out, &tasks); err != nil {
		t.Fatalf("aipm --json task list: %v\n%s", err, out)
	}
	if len(tasks) != 2 {
		t.Fatalf("%d tasks, want the tour's 2: %s", len(tasks), out)
	}
	for _, tk := range tasks {
		if tk.Status != "done" || tk.Landing == nil || tk.Landing.State != "landed" {
			t.Errorf("task %q: status %s, landing %+v; want done and landed", tk.Title, tk.Status, tk.Landing)
		}
	}
	if !strings.Contains(chat, "w1: w1 here: my tasks:") {
		t.Errorf("aipm chat log shows no answer from w1:\n%s", chat)
	}
}

// checkUI starts the README's `aipm ui` line as the reader's shell would, waits for the URL
// it prints first, reads the board's state through it, and stops it as Ctrl-C does.
func checkUI(t *testing.T, line, dir string, env []string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", "exec "+line)
	cmd.Dir, cmd.Env = dir, env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	first := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		l, _ := r.ReadString('\n')
		first <- l
		io.Copy(io.Discard, r)
		done <- cmd.Wait()
	}()
	exited := false
	defer func() {
		if !exited {
			cmd.Process.Kill()
			<-done
		}
	}()
	var printed string
	select {
	case printed = <-first:
	case err := <-done:
		exited = true
		t.Fatalf("%q exited before printing its URL: %v\n%s", line, err, stderr.String())
	case <-time.After(2 * time.Minute):
		t.Fatalf("%q printed no URL in 2 minutes\n%s", line, stderr.String())
	}
	page, err := url.Parse(strings.TrimSpace(printed))
	if err != nil || page.Scheme != "http" || page.Query().Get("token") == "" {
		t.Fatalf("%q printed %q, not the board's URL with its token", line, printed)
	}
	get := func(u string) string {
		t.Helper()
		resp, err := http.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s\n%s", u, resp.Status, body)
		}
		return string(body)
	}
	get(page.String())
	state := *page
	state.Path = "/api/state"
	if body := get(state.String()); !strings.Contains(body, "Double it") || !strings.Contains(body, "Pick a number") {
		t.Errorf("the board's state has not the tour's tasks:\n%.2000s", body)
	}
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-done:
		exited = true
		if err != nil {
			t.Errorf("%q after Ctrl-C: %v\n%s", line, err, stderr.String())
		}
	case <-time.After(2 * time.Minute):
		t.Errorf("%q did not stop within 2 minutes of Ctrl-C", line)
	}
}
