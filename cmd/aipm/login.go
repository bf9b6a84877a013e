package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/aipm/aipm/filestore"
)

// cliLogin is where an agent CLI keeps what lets it reach its model: the environment
// variables that carry a key, and the files its login writes, under the user's home
// (or under the directory a variable names instead).
type cliLogin struct {
	name    string   // the CLI's name, for the message
	vars    []string // any one of them set is a login
	dirVar  string   // a variable naming the CLI's own directory, which holds file
	dir     string   // the CLI's directory under the home, when dirVar is not set
	files   []string // any one of them in the directory is a login
	fix     string   // what to run to log in
	noFiles string   // a GOOS where the login is not kept in a file (the keychain), "" for none
}

// cliLogins are the agent CLIs whose login doctor can see before a first start.
var cliLogins = map[string]cliLogin{
	"claude": {name: "Claude Code", vars: []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX"},
		dirVar: "CLAUDE_CONFIG_DIR", dir: ".claude", files: []string{".credentials.json"}, fix: "run `claude` once and log in with /login", noFiles: "darwin"},
	"codex": {name: "Codex", vars: []string{"OPENAI_API_KEY", "CODEX_API_KEY"},
		dirVar: "CODEX_HOME", dir: ".codex", files: []string{"auth.json"}, fix: "run `codex login`"},
	"gemini": {name: "Gemini CLI", vars: []string{"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_GCA", "GOOGLE_APPLICATION_CREDENTIALS"},
		dir: ".gemini", files: []string{"oauth_creds.json", ".env"}, fix: "run `gemini` once and sign in"},
}

// loginProblem says, for an agent command that starts a known agent CLI, that nothing on
// this machine shows the CLI is logged in: no variable that carries a key, in aipm's
// environment or the command's env, and no file its login writes. "" when one is there,
// when the CLI keeps its login where aipm cannot look, or for another program. The check
// can only see signs: a key that is wrong still shows as a login, and aipm run reports
// that at the first start.
func loginProblem(t string, ac filestore.AgentCommand, home string) string {
	l, ok := cliLogins[filepath.Base(ac.Command[0])]
	if !ok || l.noFiles == runtime.GOOS {
		return ""
	}
	for _, v := range l.vars {
		if os.Getenv(v) != "" || ac.Env[v] != "" {
			return ""
		}
	}
	dir := filepath.Join(home, l.dir)
	if l.dirVar != "" {
		if d := os.Getenv(l.dirVar); d != "" {
			dir = d
		} else if d := ac.Env[l.dirVar]; d != "" {
			dir = d
		}
	}
	var looked []string
	for _, f := range l.files {
		p := filepath.Join(dir, f)
		if _, err := os.Stat(p); err == nil {
			return ""
		}
		looked = append(looked, p)
	}
	return l.name + ", and nothing on this machine shows it is logged in (no " + strings.Join(looked, " or ") + ", and none of " +
		strings.Join(l.vars, ", ") + " in the environment or in settings.agent_commands." + t + ".env): aipm run would stop at its first start; " +
		l.fix + ", or set one of them"
}
