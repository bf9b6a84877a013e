package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestUILanding: the web view over what the real merge queue wrote. A change that breaks
// the project's check is reworked until the attempts are spent (as in
// land_check_failed.txtar); then `aipm ui` lists it once in Needs you, at the task `aipm
// land list` names (the last rework, whose worktree holds the code, not the original),
// serves its diff, and its Retry queues it again as `aipm land retry` does: the item goes.
func TestUILanding(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	if _, err := exec.LookPath("aipm"); err != nil {
		t.Skip("aipm is not on PATH (TestMain puts it there)")
	}
	top := t.TempDir()
	repo := filepath.Join(top, "repo")
	os.MkdirAll(repo, 0o755)
	env := append(os.Environ(), "AIPM_USER=", "AIPM_ROOT=",
		"GIT_AUTHOR_NAME=alice", "GIT_AUTHOR_EMAIL=alice@example.com", "GIT_COMMITTER_NAME=alice",
		"GIT_COMMITTER_EMAIL=alice@example.com", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+filepath.Join(top, "gitconfig"), "HOME="+top)
	run := func(prog string, args ...string) string {
		t.Helper()
		cmd := exec.Command(prog, args...)
		cmd.Dir, cmd.Env = repo, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", prog, strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	check := "for f in *.txt; do\n  if grep -q BROKEN \"$f\" 2>/dev/null; then echo \"found BROKEN in $f\"; exit 1; fi\ndone\necho ok\n"
	if err := os.WriteFile(filepath.Join(repo, "check.sh"), []byte(check), 0o644); err != nil {
		t.Fatal(err)
	}
	run("git", "init", "-q", "-b", "main")
	run("git", "add", "check.sh")
	run("git", "commit", "-qm", "the check")
	run("aipm", "init", "--owner", "alice")
	run("aipm", "agent", "add", "w1", "--ai-type", "sim", "--parent", "alice")
	pj := filepath.Join(repo, ".ai-pm", "project.json")
	b, err := os.ReadFile(pj)
	if err != nil {
		t.Fatal(err)
	}
	b = []byte(strings.Replace(string(b), `"max_agent_processes": 4,`, `"max_agent_processes": 4, "check_command": "sh check.sh", "max_land_attempts": 2,`, 1))
	if err := os.WriteFile(pj, b, 0o644); err != nil {
		t.Fatal(err)
	}
	run("aipm", "trust")
	orig := run("aipm", "task", "add", "Break it", "--assign", "w1", "--status", "todo", "--description", "write notes.txt <b>BROKEN</b>")
	// The run stops with code that waits for a person: no success.
	cmd := exec.Command("aipm", "run", "--exit-when-idle", "--timeout", "60s")
	cmd.Dir, cmd.Env = repo, env
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "1 task(s) whose code waits to land") {
		t.Fatalf("aipm run --exit-when-idle: %v, want it to stop on the code that waits\n%s", err, out)
	}
	var list struct {
		NeedsYou []struct {
			ID       string `json:"id"`
			ReworkOf string `json:"rework_of"`
		} `json:"needs_you"`
	}
	if err := json.Unmarshal([]byte(run("aipm", "land", "list", "--json")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.NeedsYou) != 1 || list.NeedsYou[0].ReworkOf != orig {
		t.Fatalf("aipm land list's needs_you: %+v, want the rework of %s", list.NeedsYou, orig)
	}
	rework := list.NeedsYou[0].ID

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url := startUI(ctx, t, repo, env)
	base, token, _ := strings.Cut(url, "/?token=")
	call := func(method, path string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Aipm-Token", token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	landings := func() []map[string]any {
		t.Helper()
		code, body := call("GET", "/api/state")
		if code != http.StatusOK {
			t.Fatalf("GET /api/state: %d %s", code, body)
		}
		var st struct {
			Attention []map[string]any `json:"attention"`
		}
		if err := json.Unmarshal([]byte(body), &st); err != nil {
			t.Fatal(err)
		}
		var out []map[string]any
		for _, a := range st.Attention {
			if a["kind"] == "landing" {
				out = append(out, a)
			}
		}
		return out
	}
	items := landings()
	if len(items) != 1 || items[0]["task_id"] != rework || !strings.Contains(items[0]["text"].(string), "check failed after 2 attempts: the check `sh check.sh` failed") {
		t.Fatalf("the landings in Needs you: %v, want one, at %s (as aipm land list), after 2 attempts", items, rework)
	}
	code, body := call("GET", "/api/tasks/"+rework+"/diff")
	var d struct {
		Stat, Diff string
	}
	if err := json.Unmarshal([]byte(body), &d); code != http.StatusOK || err != nil {
		t.Fatalf("GET the diff: %d %s (%v)", code, body, err)
	}
	if !strings.Contains(d.Stat, "notes.txt") || !strings.Contains(d.Diff, "+<b>BROKEN</b>") || strings.Contains(body, "<b>") {
		t.Errorf("the diff of %s: %s, want notes.txt's patch, its markup escaped in the JSON", rework, body)
	}
	if code, body := call("POST", "/api/tasks/"+rework+"/land/retry"); code != http.StatusOK || !strings.Contains(body, `"state":"queued"`) {
		t.Fatalf("Retry: %d %s, want queued", code, body)
	}
	if items := landings(); len(items) != 0 {
		t.Errorf("after Retry, Needs you still has %v", items)
	}
	if out := run("aipm", "land", "list"); strings.Contains(out, "needs you") || !strings.Contains(out, rework) {
		t.Errorf("aipm land list after Retry from the page:\n%s\nwant %s queued, nothing waiting for you", out, rework)
	}
}
