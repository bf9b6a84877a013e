package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/aipm/aipm/filestore"
)

// A key in the command's own env, or a CLI directory named by its variable there, is a
// login as much as one in aipm's environment; a program doctor knows nothing of is never
// reported.
func TestLoginProblem(t *testing.T) {
	for _, v := range []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX",
		"CLAUDE_CONFIG_DIR", "OPENAI_API_KEY", "CODEX_API_KEY", "CODEX_HOME"} {
		t.Setenv(v, "")
	}
	home := t.TempDir()
	codex := filestore.AgentCommand{Command: []string{"codex", "exec"}}
	if got := loginProblem("codex", codex, home); !strings.Contains(got, filepath.Join(home, ".codex", "auth.json")) {
		t.Fatalf("codex with nothing: %q", got)
	}
	codex.Env = map[string]string{"OPENAI_API_KEY": "k"}
	if got := loginProblem("codex", codex, home); got != "" {
		t.Errorf("codex with a key in its env: %q", got)
	}
	own := t.TempDir()
	os.WriteFile(filepath.Join(own, "auth.json"), []byte("{}"), 0o600)
	codex.Env = map[string]string{"CODEX_HOME": own}
	if got := loginProblem("codex", codex, home); got != "" {
		t.Errorf("codex with its directory named in its env: %q", got)
	}
	if got := loginProblem("custom", filestore.AgentCommand{Command: []string{"/opt/bin/mycli"}}, home); got != "" {
		t.Errorf("an unknown program: %q", got)
	}
	claude := filestore.AgentCommand{Command: []string{"/usr/local/bin/claude", "-p"}}
	got := loginProblem("claude", claude, home)
	if runtime.GOOS == "darwin" {
		if got != "" {
			t.Errorf("claude on macOS keeps its login in the keychain: %q", got)
		}
		return
	}
	if !strings.Contains(got, "Claude Code") {
		t.Errorf("claude with nothing: %q", got)
	}
	os.MkdirAll(filepath.Join(home, ".claude"), 0o700)
	os.WriteFile(filepath.Join(home, ".claude", ".credentials.json"), []byte("{}"), 0o600)
	if got := loginProblem("claude", claude, home); got != "" {
		t.Errorf("claude logged in: %q", got)
	}
}
