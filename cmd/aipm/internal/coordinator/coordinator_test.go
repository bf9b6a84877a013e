package coordinator

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aipm/aipm/filestore"
)

func TestManagerHold(t *testing.T) {
	task := func(id, parent, status string, deps ...string) *filestore.Task {
		return &filestore.Task{ID: id, ParentID: parent, Status: status, Dependencies: deps}
	}
	cases := []struct {
		name  string
		tasks []*filestore.Task
		hold  bool
	}{
		{"no sub-tasks yet: decompose", []*filestore.Task{task("T", "", "in_progress")}, false},
		{"a worker runs, the next waits on it", []*filestore.Task{task("T", "", "in_progress"),
			task("a", "T", "in_progress"), task("b", "T", "todo", "a")}, true},
		{"grandchild runs under a todo child", []*filestore.Task{task("T", "", "in_progress"),
			task("a", "T", "in_progress"), task("a1", "a", "in_progress")}, true},
		{"a sub-task is ready to dispatch", []*filestore.Task{task("T", "", "in_progress"),
			task("a", "T", "done"), task("b", "T", "todo", "a"), task("c", "T", "in_progress")}, false},
		{"a sub-task is blocked", []*filestore.Task{task("T", "", "in_progress"),
			task("a", "T", "in_progress"), task("b", "T", "blocked")}, false},
		{"all finished: completion check", []*filestore.Task{task("T", "", "in_progress"),
			task("a", "T", "done"), task("b", "T", "cancelled")}, false},
		{"nothing moves: deadlock to look at", []*filestore.Task{task("T", "", "in_progress"),
			task("a", "T", "cancelled"), task("b", "T", "todo", "a")}, false},
	}
	for _, c := range cases {
		if got := managerHold(c.tasks, "T") != ""; got != c.hold {
			t.Errorf("%s: hold = %v, want %v (%q)", c.name, got, c.hold, managerHold(c.tasks, "T"))
		}
	}
}

func TestFingerprintSeesSubtreeProgress(t *testing.T) {
	tasks := []*filestore.Task{{ID: "T", Status: "in_progress", Version: 3}, {ID: "a", ParentID: "T", Status: "todo", Version: 1},
		{ID: "x", Status: "todo", Version: 1}}
	w := filestore.Work{TaskID: "T"}
	before := fingerprint(filestore.PurposeTask, w, tasks)
	tasks[2].Version = 9 // unrelated task
	if fingerprint(filestore.PurposeTask, w, tasks) != before {
		t.Error("an unrelated task changed the fingerprint")
	}
	tasks[1].Status, tasks[1].Version = "in_progress", 2
	if fingerprint(filestore.PurposeTask, w, tasks) == before {
		t.Error("a sub-task's progress left the fingerprint unchanged")
	}
	if fingerprint(filestore.PurposeChat, filestore.Work{Unread: 1}, nil) == fingerprint(filestore.PurposeChat, filestore.Work{}, nil) {
		t.Error("reading the unread message left the chat fingerprint unchanged")
	}
}

// Every shipped template renders to a command with no placeholder left, the MCP config
// (when used) declares aipm mcp with the ticket in a private file, and the ticket never
// appears in the command line or the prompt.
func TestAgentCommandTemplatesRender(t *testing.T) {
	a := &filestore.Agent{ID: "w1", Name: "Worker One", Role: "writes docs"}
	for name, ac := range DefaultAgentCommands() {
		dir := t.TempDir()
		prompt := agentPrompt("en", a, "task", "tsk_1", "/repo")
		v := spawnVars{AIPM: "/bin/aipm", Prompt: prompt, Workdir: "/repo", AgentID: "w1", Purpose: "task", TaskID: "tsk_1"}
		plan, err := renderSpawn(ac, v, "spn_x.secret", "spn_x", dir)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, arg := range append(slices.Clone(plan.Argv), plan.Env...) {
			for _, ph := range []string{"{aipm}", "{prompt}", "{workdir}", "{agent_id}", "{purpose}", "{task_id}", "{mcp_config}"} {
				if strings.Contains(arg, ph) {
					t.Errorf("%s: %q still holds %s", name, arg, ph)
				}
			}
		}
		if strings.Contains(strings.Join(plan.Argv, " "), "secret") || strings.Contains(prompt, "secret") {
			t.Errorf("%s: the ticket is on the command line or in the prompt", name)
		}
		if !slices.Contains(plan.Env, "AIPM_SPAWN_TICKET=spn_x.secret") || !slices.Contains(plan.Env, "AIPM_ROOT=/repo") {
			t.Errorf("%s: env %v lacks the ticket or the store location", name, plan.Env)
		}
		if plan.MCPConfig == "" {
			continue
		}
		fi, err := os.Stat(plan.MCPConfig)
		if err != nil || fi.Mode().Perm() != 0o600 || filepath.Dir(plan.MCPConfig) != dir {
			t.Errorf("%s: mcp config %s: %v %v", name, plan.MCPConfig, fi, err)
			continue
		}
		var cfg struct {
			MCPServers map[string]struct {
				Command string            `json:"command"`
				Args    []string          `json:"args"`
				Env     map[string]string `json:"env"`
			} `json:"mcpServers"`
		}
		data, _ := os.ReadFile(plan.MCPConfig)
		if err := json.Unmarshal(data, &cfg); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		srv := cfg.MCPServers["aipm"]
		if srv.Command != "/bin/aipm" || !slices.Equal(srv.Args, []string{"mcp"}) || srv.Env["AIPM_SPAWN_TICKET"] != "spn_x.secret" {
			t.Errorf("%s: mcp config %s", name, data)
		}
	}
	if _, ok := DefaultAgentCommands()["sim"]; !ok {
		t.Error("no sim template")
	}
}

func TestChildEnvDropsAnotherAgentsIdentity(t *testing.T) {
	got := childEnv([]string{"PATH=/bin", "AIPM_PASSKEY=pk", "AIPM_SPAWN_TICKET=t", "AIPM_AGENT_ID=x", "CONVERSATION_ACTIVE_TIMEOUT_SECONDS=5"})
	if !slices.Equal(got, []string{"PATH=/bin", "CONVERSATION_ACTIVE_TIMEOUT_SECONDS=5"}) {
		t.Errorf("childEnv = %v", got)
	}
}

func TestAgentPromptLanguages(t *testing.T) {
	a := &filestore.Agent{ID: "w1", Name: "Worker One", Role: "writes docs"}
	en := agentPrompt("en", a, "task", "tsk_1", "/repo")
	want := `You are agent w1 (Worker One) of the aipm project at /repo. Your role: writes docs. Call the aipm MCP server's authenticate tool with agent_id "w1" and no passkey (this process was started for a task session on task tsk_1). Then follow the answers: do exactly what each instruction says, and call get_next_action only when an answer gives no next step, until you are told to exit. Work in /repo using absolute paths; never edit .ai-pm/ by hand.`
	if en != want {
		t.Errorf("en prompt:\n%s\nwant\n%s", en, want)
	}
	ja := agentPrompt("ja", a, "chat", "", "/repo")
	for _, s := range []string{"エージェント w1", "passkey なし", "get_next_action", "/repo"} {
		if !strings.Contains(ja, s) {
			t.Errorf("ja prompt lacks %q: %s", s, ja)
		}
	}
}

// The failures only a person can mend are told apart from any other: a CLI that is not
// logged in (each CLI gets its own way in), a refused API key, a refused model.
func TestNeedsPerson(t *testing.T) {
	cases := []struct {
		aiType string
		out    string
		want   string // a part of the answer; "" for none
	}{
		{"claude", "Not logged in · Please run /login", "/login"},
		{"codex", "Error: you are not logged in; run `codex login`", "codex login"},
		{"gemini", "Please set an Auth method in your /home/u/.gemini/settings.json", "GEMINI_API_KEY"},
		{"claude", "Invalid API key · Fix external API key", "API key"},
		{"custom", "error: model gpt-9 does not exist", "model"},
		{"claude", "agent w1 for task cannot start: no model configured", ""},
		{"custom", "panic: runtime error", ""},
	}
	for _, c := range cases {
		got := needsPerson(c.aiType, []string{"some earlier line", c.out})
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("needsPerson(%s, %q) = %q, want it to hold %q", c.aiType, c.out, got, c.want)
		}
	}
}
