package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/aipm/aipm/cmd/aipm/internal/coordinator"
	"github.com/aipm/aipm/filestore"
)

// mcpConfigTargets are the agent CLIs `aipm mcp-config` writes the aipm MCP server block
// for: where each reads it, and whether aipm may write that file (a project file) or only
// prints the block (the user's own configuration).
var mcpConfigTargets = map[string]struct {
	file    string // relative to the project root, or ~/… for a user file
	project bool
}{
	"claude": {".mcp.json", true},
	"gemini": {filepath.Join(".gemini", "settings.json"), true},
	"codex":  {"~/.codex/config.toml", false},
}

// cmdMCPConfig prints (or, with --write, merges into the project's file) the block that
// declares aipm's MCP server to an agent CLI configured by hand, and says what else the
// CLI needs before its health command (claude/codex/gemini mcp list) shows it connected.
func (a *app) cmdMCPConfig(args []string) error {
	fs := newFlags(a, "mcp-config")
	write := fs.Bool("write", false, "merge the block into the project's file (claude: .mcp.json, gemini: .gemini/settings.json)")
	pos, err := fs.parse(args, 1, 1, "claude|codex|gemini [--write]")
	if err != nil {
		return err
	}
	cli := pos[0]
	target, ok := mcpConfigTargets[cli]
	if !ok {
		return &filestore.Error{Code: "invalid_argument", Kind: filestore.ErrInvalid,
			Message: fmt.Sprintf("no MCP config block for %q", cli), Hint: "name one of: claude, codex, gemini"}
	}
	s, err := a.open()
	if err != nil {
		return err
	}
	exe, err := coordinator.Executable()
	if err != nil {
		return err
	}
	root := s.Root()
	if !*write {
		a.printf("%s", mcpConfigBlock(cli, exe, root))
		a.printf("\n%s\n", mcpConfigAdvice(cli, root))
		return nil
	}
	if !target.project {
		return &filestore.Error{Code: "invalid_argument", Kind: filestore.ErrInvalid,
			Message: cli + " reads MCP servers from " + target.file + ", the user's own file, which aipm does not edit",
			Hint:    "run `aipm mcp-config " + cli + "` and add the block it prints yourself"}
	}
	path := filepath.Join(root, target.file)
	if err := refuseLinks(root, path); err != nil {
		return err
	}
	if err := mergeMCPServer(path, exe); err != nil {
		return err
	}
	a.printf("declared the aipm MCP server in %s\n%s\n", s.Rel(path), mcpConfigAdvice(cli, root))
	return nil
}

// mcpServerEntry is the aipm server as a JSON MCP config declares it. No environment: the
// CLI starts it in the project directory (aipm finds .ai-pm/ from there), and a process
// started by aipm run passes on AIPM_ROOT, AIPM_AGENT_ID and AIPM_SPAWN_TICKET.
func mcpServerEntry(exe string) map[string]any {
	return map[string]any{"command": exe, "args": []string{"mcp"}}
}

func mcpConfigBlock(cli, exe, root string) string {
	if cli == "codex" {
		// Codex starts the server in ~/.codex for `codex mcp list`: the store is named.
		q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
		return fmt.Sprintf("[mcp_servers.aipm]\ncommand = %s\nargs = [\"mcp\"]\nenv = { AIPM_ROOT = %s }\nenv_vars = [\"AIPM_AGENT_ID\", \"AIPM_SPAWN_TICKET\", \"XDG_CONFIG_HOME\"]\n",
			q(exe), q(root))
	}
	data, _ := json.MarshalIndent(map[string]any{"mcpServers": map[string]any{"aipm": mcpServerEntry(exe)}}, "", "  ")
	return string(data) + "\n"
}

// mcpConfigAdvice says where the block goes and what the CLI needs besides it.
func mcpConfigAdvice(cli, root string) string {
	switch cli {
	case "claude":
		return "Put it in " + filepath.Join(root, ".mcp.json") + " (`aipm mcp-config claude --write` does). Claude Code lists a project's\n" +
			".mcp.json server as pending approval until the project is trusted and the server approved: start `claude`\n" +
			"in the project once, accept the trust dialog and the server (or, once trusted, add \"enabledMcpjsonServers\": [\"aipm\"]\n" +
			"to .claude/settings.local.json). Check with `claude mcp list`."
	case "gemini":
		return "Put it in " + filepath.Join(root, ".gemini", "settings.json") + " (`aipm mcp-config gemini --write` does). Gemini CLI\n" +
			"starts no MCP server in an untrusted folder: trust the project (`gemini trust` in it, or GEMINI_CLI_TRUST_WORKSPACE=true;\n" +
			"the gemini agent command sets the latter). Check with `gemini mcp list` in the project."
	case "codex":
		return "Add it to ~/.codex/config.toml. AIPM_ROOT names this project because Codex starts the server in ~/.codex;\n" +
			"aipm run's codex command declares the server itself. Check with `codex mcp list`."
	}
	return ""
}

// mergeMCPServer sets mcpServers.aipm in a JSON config file, keeping everything else in it.
func mergeMCPServer(path, exe string) error {
	cfg := map[string]any{}
	data, err := filestore.ReadFile(path, 4<<20)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return err
	default:
		if len(strings.TrimSpace(string(data))) > 0 {
			if err := json.Unmarshal(data, &cfg); err != nil {
				return &filestore.Error{Code: "invalid_argument", Kind: filestore.ErrInvalid,
					Message: path + " is not a JSON object: " + err.Error(), Hint: "fix the file by hand, then run the command again"}
			}
		}
	}
	servers, _ := cfg["mcpServers"].(map[string]any)
	if servers == nil {
		servers = map[string]any{}
	}
	servers["aipm"] = mcpServerEntry(exe)
	cfg["mcpServers"] = servers
	out, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	// Replaced, never written through: a link put there after the check is replaced, not
	// followed.
	return filestore.WriteFile(path, append(out, '\n'), 0o644)
}

// refuseLinks refuses a path of the repository that is, or passes through, a symbolic link
// or a non-regular file: the repository's files are committed by anyone, and a committed
// link would make aipm rewrite whatever it points to.
func refuseLinks(root, path string) error {
	rel, err := filepath.Rel(root, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("%s is outside the repository %s", path, root)
	}
	p := root
	parts := strings.Split(rel, string(filepath.Separator))
	for i, part := range parts {
		p = filepath.Join(p, part)
		fi, err := os.Lstat(p)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		last := i == len(parts)-1
		if fi.Mode()&os.ModeSymlink != 0 || (!last && !fi.IsDir()) || (last && !fi.Mode().IsRegular()) {
			return fmt.Errorf("%s is a symbolic link or not a regular file: aipm does not write through it; remove it (git rm it if it is committed), then run the command again", p)
		}
	}
	return nil
}

// declaresAipm reports whether a JSON MCP config file declares the aipm server.
func declaresAipm(path string) bool {
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var cfg struct {
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
	}
	return json.Unmarshal(data, &cfg) == nil && cfg.MCPServers["aipm"] != nil
}

// commandApproved reports whether this machine approved the agent command called name, its
// program resolved as `aipm trust` resolves it.
func commandApproved(s *filestore.Store, name string, ac filestore.AgentCommand) (bool, error) {
	ok, _, err := commandApproval(s, name, ac)
	return ok, err
}

// commandApproval is commandApproved, with, when it is not approved only because its
// program got installed since, the words that say so (filestore.NowInstalled).
func commandApproval(s *filestore.Store, name string, ac filestore.AgentCommand) (ok bool, nowInstalled string, err error) {
	exe, err := coordinator.Executable()
	if err != nil {
		return false, "", err
	}
	prog, err := s.CommandProgram(ac, exe, s.Root())
	if err != nil {
		return false, "", err
	}
	if ok, err = s.CommandApproved(name, ac, prog); err != nil || ok {
		return ok, "", err
	}
	return false, s.NowInstalled(name, ac, prog), nil
}

// agentCommandProblems are the doctor's findings about the agent commands: every ai_type
// an active AI agent uses is configured, its program is on PATH, and a Gemini CLI command
// finds the aipm server in the project's .gemini/settings.json.
func agentCommandProblems(s *filestore.Store) ([]filestore.Problem, error) {
	p, err := s.Project()
	if err != nil {
		return nil, err
	}
	agents, err := s.Agents()
	if err != nil {
		return nil, err
	}
	var out []filestore.Problem
	users := map[string][]string{} // ai_type → agent ids
	for _, ag := range agents {
		if ag.Type != filestore.AgentAI || ag.Status != filestore.AgentActive {
			continue
		}
		t := coordinator.AIType(ag)
		if _, ok := p.Settings.AgentCommands[t]; !ok {
			var known []string
			for k := range p.Settings.AgentCommands {
				known = append(known, k)
			}
			sort.Strings(known)
			fix := "add one to .ai-pm/project.json"
			if len(known) > 0 {
				fix += " or give the agent one of: " + strings.Join(known, ", ")
			}
			out = append(out, filestore.Problem{Path: s.Rel(filepath.Join(s.Dir(), "agents", ag.ID, "agent.json")), Line: 1,
				Problem: fmt.Sprintf("agent %s has ai_type %q, but settings.agent_commands has no such command; aipm run cannot start it: %s",
					ag.ID, t, fix)})
			continue
		}
		users[t] = append(users[t], ag.ID)
	}
	held, err := s.HeldAgents()
	if err != nil {
		return nil, err
	}
	for _, id := range slices.Sorted(maps.Keys(held)) {
		if a, err := s.Agent(id); err != nil || a.Status != filestore.AgentActive {
			continue
		}
		out = append(out, filestore.Problem{Path: s.Rel(filepath.Join(s.Dir(), "agents", id, "agent.json")), Line: 1,
			Problem: describeHeld(held[id])})
	}
	types := make([]string, 0, len(users))
	for t := range users {
		types = append(types, t)
	}
	sort.Strings(types)
	projectFile := s.Rel(filepath.Join(s.Dir(), "project.json"))
	for _, t := range types {
		ac := p.Settings.AgentCommands[t]
		who := "used by " + strings.Join(users[t], ", ")
		if len(ac.Command) == 0 {
			out = append(out, filestore.Problem{Path: projectFile, Line: 1,
				Problem: fmt.Sprintf("settings.agent_commands.%s (%s) has an empty command; give it a program and its arguments", t, who)})
			continue
		}
		if ok, now, err := commandApproval(s, t, ac); err == nil && !ok && now != "" {
			out = append(out, filestore.Problem{Path: projectFile, Line: 1,
				Problem: fmt.Sprintf("settings.agent_commands.%s (%s) is not approved on this machine: %s, so aipm run starts nothing with it until you approve it with `aipm trust`", t, who, now)})
		} else if err == nil && !ok {
			out = append(out, filestore.Problem{Path: projectFile, Line: 1,
				Problem: fmt.Sprintf("settings.agent_commands.%s (%s) is not approved on this machine (new, or changed since it was approved), so aipm run starts nothing with it; review it and approve it with `aipm trust`", t, who)})
		}
		prog := ac.Command[0]
		if prog == "{aipm}" {
			continue
		}
		if _, err := lookPath(prog, s.Root()); err != nil {
			out = append(out, filestore.Problem{Path: projectFile, Line: 1,
				Problem: fmt.Sprintf("settings.agent_commands.%s (%s) starts %q, which is not on PATH; install it%s or put its full path first in the command",
					t, who, prog, installHint(prog))})
		} else if home, err := os.UserHomeDir(); err == nil {
			if login := loginProblem(t, ac, home); login != "" {
				out = append(out, filestore.Problem{Path: projectFile, Line: 1,
					Problem: fmt.Sprintf("settings.agent_commands.%s (%s) runs %s", t, who, login)})
			}
		}
		if filepath.Base(prog) == "gemini" && !declaresAipm(filepath.Join(s.Root(), ".gemini", "settings.json")) {
			out = append(out, filestore.Problem{Path: ".gemini/settings.json", Line: 1,
				Problem: fmt.Sprintf("settings.agent_commands.%s (%s) runs Gemini CLI, which reads MCP servers from the project's .gemini/settings.json, and it does not declare aipm; run `aipm mcp-config gemini --write`", t, who)})
		}
	}
	return out, nil
}

// lookPath finds a program as aipm run would start it: a relative path from the project
// root, a bare name on PATH.
func lookPath(prog, root string) (string, error) {
	if strings.ContainsRune(prog, os.PathSeparator) {
		if !filepath.IsAbs(prog) {
			prog = filepath.Join(root, prog)
		}
		fi, err := os.Stat(prog)
		if err != nil {
			return "", err
		}
		if fi.IsDir() || fi.Mode()&0o111 == 0 {
			return "", fmt.Errorf("%s is not executable", prog)
		}
		return prog, nil
	}
	return exec.LookPath(prog)
}

func installHint(prog string) string {
	switch filepath.Base(prog) {
	case "claude":
		return " (npm install -g @anthropic-ai/claude-code)"
	case "codex":
		return " (npm install -g @openai/codex)"
	case "gemini":
		return " (npm install -g @google/gemini-cli)"
	}
	return ""
}
