package coordinator

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/aipm/aipm/filestore"
	"github.com/aipm/aipm/filestore/msg"
)

// DefaultAgentCommands are the templates `aipm init` writes to settings.agent_commands: one
// per agent CLI aipm knows, keyed by the ai_type an agent names. Each starts the CLI
// non-interactively on the prompt, with the aipm MCP server declared for it; credentials
// reach `aipm mcp` through the environment (AIPM_SPAWN_TICKET), never through the prompt.
// They are starting points: edit project.json to add flags, models or permissions.
//
// Each is verified against the real CLI (testdata/agentclis pins the versions; the
// testdata/e2e scenarios run them): Claude Code takes the per-start MCP config; Codex has
// no --full-auto any more, and takes the server by -c with the spawn's variables passed
// on; Gemini CLI honours a settings file named by GEMINI_CLI_SYSTEM_SETTINGS_PATH only
// when root owns it and every directory above it, so it reads the server from the
// project's .gemini/settings.json (aipm mcp-config gemini --write), and the workspace is
// trusted by the environment because --skip-trust comes after the settings are loaded.
func DefaultAgentCommands() map[string]filestore.AgentCommand {
	return map[string]filestore.AgentCommand{
		"claude": {
			Description: "Claude Code in print mode with only the aipm MCP server",
			Command: []string{"claude", "-p", "{prompt}", "--mcp-config", "{mcp_config}", "--strict-mcp-config",
				"--permission-mode", "acceptEdits", "--allowedTools", "mcp__aipm", "--add-dir", "{workdir}"},
		},
		"codex": {
			Description: "Codex CLI non-interactive in the workspace-write sandbox, with aipm declared as an MCP server",
			Command: []string{"codex", "exec", "--sandbox", "workspace-write", "--skip-git-repo-check", "--cd", "{workdir}",
				"-c", `mcp_servers.aipm.command="{aipm}"`,
				"-c", `mcp_servers.aipm.args=["mcp"]`,
				"-c", `mcp_servers.aipm.env_vars=["AIPM_ROOT","AIPM_AGENT_ID","AIPM_SPAWN_TICKET","XDG_CONFIG_HOME"]`,
				"-c", "features.mcp_tool_list_changed=true",
				"{prompt}"},
		},
		"gemini": {
			Description: "Gemini CLI in yolo mode in a trusted workspace; the project's .gemini/settings.json declares the aipm MCP server (aipm mcp-config gemini --write)",
			Command:     []string{"gemini", "--yolo", "--allowed-mcp-server-names", "aipm", "-p", "{prompt}"},
			Env:         map[string]string{"GEMINI_CLI_TRUST_WORKSPACE": "true"},
		},
		"custom": {
			Description: "your own program: it gets AIPM_AGENT_ID, AIPM_PURPOSE, AIPM_ROOT and AIPM_PROMPT in its environment and runs `aipm mcp` itself",
			Command:     []string{"./aipm-agent", "{agent_id}", "{purpose}"},
		},
		"sim": {
			Description: "the simulated agent (no LLM): follows get_next_action deterministically",
			Command:     []string{"{aipm}", "sim-agent"},
		},
	}
}

// spawnPlan is one rendered start: argv, the extra environment, and the MCP config file
// written for it.
type spawnPlan struct {
	Argv      []string
	Env       []string
	MCPConfig string // path of the per-start MCP config file ("" if the command needs none)
}

// spawnVars are the values of a start's placeholders.
type spawnVars struct {
	AIPM, Prompt, Workdir, AgentID, Purpose, TaskID, Model, MCPConfig string
}

func (v spawnVars) expand(s string) string {
	return v.replacer(func(s string) string { return s }).Replace(s)
}

// expandShell fills the placeholders of a shell script argument (sh -c '…'), each value
// quoted for the shell: the prompt and the model come from committed files, and must stay
// words, never become commands.
func (v spawnVars) expandShell(s string) string {
	return v.replacer(shellQuote).Replace(s)
}

func (v spawnVars) replacer(q func(string) string) *strings.Replacer {
	return strings.NewReplacer("{aipm}", q(v.AIPM), "{prompt}", q(v.Prompt), "{workdir}", q(v.Workdir), "{agent_id}", q(v.AgentID),
		"{purpose}", q(v.Purpose), "{task_id}", q(v.TaskID), "{model}", q(v.Model), "{mcp_config}", q(v.MCPConfig))
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// shells are the programs whose -c argument is a script.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true, "ash": true, "busybox": true}

// isShellScript reports whether argument i of a command is the script of a shell: the
// word after -c (or a flag group holding c, as in -ec) when the program is a shell.
func isShellScript(argv []string, i int) bool {
	if i < 2 || !shells[filepath.Base(argv[0])] {
		return false
	}
	f := argv[i-1]
	return strings.HasPrefix(f, "-") && !strings.HasPrefix(f, "--") && strings.ContainsRune(f, 'c')
}

// modelRe is what an agent's model may hold: the model names of the agent CLIs
// (claude-sonnet-4-5, gpt-5.1-codex, openai/gpt-4o, …), nothing a command line could read
// as syntax.
var modelRe = regexp.MustCompile(`^[A-Za-z0-9._:/@+=-]*$`)

// renderSpawn turns an agent command into a start: placeholders replaced, the environment
// the process needs (store location, agent, purpose, the one-time ticket), and, when the
// command names {mcp_config}, the MCP config file written (0600, under runtime/).
func renderSpawn(ac filestore.AgentCommand, v spawnVars, ticket, spawnID, configDir string) (*spawnPlan, error) {
	if len(ac.Command) == 0 {
		return nil, fmt.Errorf("the command is empty")
	}
	needsConfig := false
	for _, s := range ac.Command {
		needsConfig = needsConfig || strings.Contains(s, "{mcp_config}")
	}
	for _, s := range ac.Env {
		needsConfig = needsConfig || strings.Contains(s, "{mcp_config}")
	}
	if !modelRe.MatchString(v.Model) {
		return nil, fmt.Errorf("the agent's model %q (agents/%s/agent.json) holds characters a command line could misread; "+
			"set its \"model\" field to letters, digits and . _ : / @ + = - only", v.Model, v.AgentID)
	}
	plan := &spawnPlan{}
	if needsConfig {
		plan.MCPConfig = filepath.Join(configDir, spawnID+".mcp.json")
		v.MCPConfig = plan.MCPConfig
		cfg := map[string]any{"mcpServers": map[string]any{"aipm": map[string]any{
			"command": v.AIPM, "args": []string{"mcp"},
			"env": map[string]string{"AIPM_ROOT": v.Workdir, "AIPM_AGENT_ID": v.AgentID, "AIPM_SPAWN_TICKET": ticket},
		}}}
		data, err := json.MarshalIndent(cfg, "", "  ")
		if err != nil {
			return nil, err
		}
		if err := filestore.EnsureDir(configDir); err != nil {
			return nil, err
		}
		f, err := filestore.OpenFile(plan.MCPConfig, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err == nil {
			_, err = f.Write(append(data, '\n'))
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			return nil, err
		}
	}
	for i, s := range ac.Command {
		if isShellScript(ac.Command, i) {
			plan.Argv = append(plan.Argv, v.expandShell(s))
			continue
		}
		plan.Argv = append(plan.Argv, v.expand(s))
	}
	plan.Env = []string{
		"AIPM_ROOT=" + v.Workdir, "AIPM_AGENT_ID=" + v.AgentID, "AIPM_PURPOSE=" + v.Purpose, "AIPM_TASK_ID=" + v.TaskID,
		"AIPM_SPAWN_ID=" + spawnID, "AIPM_SPAWN_TICKET=" + ticket, "AIPM_PROMPT=" + v.Prompt,
	}
	keys := make([]string, 0, len(ac.Env))
	for k := range ac.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		plan.Env = append(plan.Env, k+"="+v.expand(ac.Env[k]))
	}
	return plan, nil
}

// agentPrompt is what an agent CLI is told at start, in the project's language: who it
// is, how to connect, and to follow get_next_action. It names no secret.
func agentPrompt(lang string, a *filestore.Agent, purpose, taskID, workdir string) string {
	p := msg.Text(lang, "prompt.identity", a.ID, a.Name, workdir)
	if a.Role != "" {
		p += msg.Text(lang, "prompt.role", a.Role)
	}
	onTask := ""
	if taskID != "" {
		onTask = msg.Text(lang, "prompt.on_task", taskID)
	}
	p += msg.Text(lang, "prompt.authenticate", a.ID, purpose, onTask)
	return p + msg.Text(lang, "prompt.loop", workdir)
}

// Executable is the path of this aipm binary, for {aipm} and for starting `aipm mcp`.
// argv[0] comes first: under a multi-call test binary it is the installed name (aipm),
// while os.Executable would resolve to the test binary itself.
func Executable() (string, error) {
	arg0 := os.Args[0]
	if !strings.ContainsRune(arg0, os.PathSeparator) {
		if p, err := exec.LookPath(arg0); err == nil {
			return filepath.Abs(p)
		}
	} else if p, err := filepath.Abs(arg0); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return os.Executable()
}

// failTailLines is how much of a failed start's output aipm run prints.
const failTailLines = 5

// sayLogTail prints the last lines an agent process wrote and where the rest is, so a
// start that fails says why (a flag the CLI no longer knows, a missing login) without a
// look into runtime/spawns/.
func (c *Coordinator) sayLogTail(path string) {
	for _, l := range lastLines(path, failTailLines) {
		c.Say("  | %s", l)
	}
	c.Say("  output: %s", c.s.Rel(path))
}

// lastLines is the last n non-empty lines of a file (of its last 64 KB), nil when it
// cannot be read.
func lastLines(path string, n int) []string {
	f, err := filestore.OpenRead(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	const window = 64 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > window {
		f.Seek(fi.Size()-window, io.SeekStart)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil
	}
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimRight(l, "\r \t"); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

// needsPerson recognises, in the last lines of a failed start's output, what only a person
// can mend — an agent CLI that is not logged in, has no usable API key, or rejects its
// model — and returns what to do (for the CLI of aiType), or "" for any other failure.
// Such a start is not retried: every retry would fail the same way, and hold a slot.
func needsPerson(aiType string, lines []string) string {
	text := strings.ToLower(strings.Join(lines, "\n"))
	has := func(subs ...string) bool {
		for _, s := range subs {
			if strings.Contains(text, s) {
				return true
			}
		}
		return false
	}
	switch {
	case has("not logged in", "please run /login", "codex login", "not authenticated", "please set an auth method"):
		switch aiType {
		case "claude":
			return "Claude Code is not logged in: run `claude` once and log in with /login (or set ANTHROPIC_API_KEY in settings.agent_commands.claude.env)"
		case "codex":
			return "Codex is not logged in: run `codex login` (or set OPENAI_API_KEY in settings.agent_commands.codex.env)"
		case "gemini":
			return "Gemini CLI is not signed in: run `gemini` once and choose how to sign in (or set GEMINI_API_KEY in settings.agent_commands.gemini.env)"
		}
		return "the agent CLI (settings.agent_commands." + aiType + ") is not logged in: log it in as its documentation says"
	case has("invalid api key", "invalid x-api-key", "incorrect api key", "api key not valid", "api_key environment variable", "missing api key", "no api key"):
		return "the agent CLI's API key is missing or refused: set a valid key (settings.agent_commands." + aiType + ".env, or the CLI's own login)"
	case has("model") && has("not found", "does not exist", "not supported", "unknown model", "invalid model"):
		return "the agent CLI refuses its model: set another one (the agent's model, or the command's --model)"
	}
	return ""
}
