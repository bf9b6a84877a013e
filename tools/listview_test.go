package tools

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/mcp"
)

// modelBytes is what a model sees of a listed tool: its name, description and input
// schema as compact JSON (clients send these, in their own wrapping, with every request).
func modelBytes(t mcp.Tool) int {
	b, _ := json.Marshal(map[string]any{"name": t.Name, "description": t.Description, "input_schema": t.InputSchema})
	return len(b)
}

// geminiPerTool is what Gemini CLI adds to each listed tool as it sends it: its own
// wait_for_previous parameter (about 260 bytes) and its wrapping (testdata/e2e/gemini.txtar
// measures what it sends: 780 bytes for three tools).
const geminiPerTool = 280

// requestBudget is the most bytes of aipm tool schemas one model request may carry.
const requestBudget = 5120

// The short list of each session kind a spawn ticket opens stays within the budget of a
// request as Gemini CLI sends it (the costliest client): its core with authenticate
// before the session opens, and after it the core with the largest tool an answer can add.
func TestBriefListBudget(t *testing.T) {
	s, _ := newTestServer(t)
	kinds := []struct {
		name    string
		purpose string
		hier    string
	}{
		{"worker task", filestore.PurposeTask, filestore.HierarchyWorker},
		{"manager task", filestore.PurposeTask, filestore.HierarchyManager},
		{"worker chat", filestore.PurposeChat, filestore.HierarchyWorker},
		{"manager chat", filestore.PurposeChat, filestore.HierarchyManager},
	}
	cost := func(name string) int { return modelBytes(briefTool(s.tools[name].def)) + geminiPerTool }
	for _, k := range kinds {
		se, a := &filestore.Session{Purpose: k.purpose}, &filestore.Agent{Hierarchy: k.hier}
		core, n := 0, 0
		for _, name := range coreTools[k.purpose] {
			if permits(s.tools[name].perm, se, a) == nil {
				core += cost(name)
				n++
			}
		}
		extra, largest := 0, ""
		for name, tl := range s.tools {
			if permits(tl.perm, se, a) == nil && !slices.Contains(coreTools[k.purpose], name) && cost(name) > extra {
				extra, largest = cost(name), name
			}
		}
		before := core + cost("authenticate")
		t.Logf("%s: %d core tools, %d bytes with Gemini CLI's share; %d with authenticate; %d with the largest other tool (%s)",
			k.name, n, core, before, core+extra, largest)
		if before > requestBudget {
			t.Errorf("%s: the list before authenticate is %d bytes, over %d", k.name, before, requestBudget)
		}
		if core+extra > requestBudget {
			t.Errorf("%s: the core and %s are %d bytes, over %d", k.name, largest, core+extra, requestBudget)
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestBriefToolKeepsWhatAModelNeeds(t *testing.T) {
	s, _ := newTestServer(t)
	b := briefTool(s.tools["update_task_status"].def)
	if _, ok := b.InputSchema.Properties["session_token"]; ok {
		t.Error("session_token is listed")
	}
	st := b.InputSchema.Properties["status"].(map[string]any)
	if st["enum"] == nil {
		t.Error("the status enum was lost")
	}
	if _, ok := b.InputSchema.Properties["task_id"].(map[string]any)["description"]; ok {
		t.Error(`"The task" was kept as a description`)
	}
	if !slicesEqual(b.InputSchema.Required, []string{"task_id", "status"}) {
		t.Errorf("required = %v", b.InputSchema.Required)
	}
	// the shared definition is untouched: help and hand-configured clients see it in full
	if _, ok := s.tools["update_task_status"].def.InputSchema.Properties["session_token"]; !ok {
		t.Error("briefTool changed the tool's own definition")
	}
	to := briefTool(s.tools["get_next_action"].def).InputSchema.Properties["timeout_seconds"].(map[string]any)
	if to["type"] != "integer" || to["minimum"] == nil || to["maximum"] == nil {
		t.Errorf("timeout_seconds = %v, want an integer with bounds", to)
	}
	// paging parameters are left out of the listed view, and only there
	if _, ok := briefTool(s.tools["list_tasks"].def).InputSchema.Properties["limit"]; ok {
		t.Error("list_tasks lists its paging parameter limit")
	}
	if _, ok := s.tools["list_tasks"].def.InputSchema.Properties["limit"]; !ok {
		t.Error("list_tasks lost its limit parameter")
	}
}

func slicesEqual(a, b []string) bool {
	return strings.Join(a, ",") == strings.Join(b, ",")
}

func listedNames(tools []mcp.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name)
	}
	sort.Strings(out)
	return out
}

func allTools(s *Server) []mcp.Tool {
	var all []mcp.Tool
	for _, t := range s.tools {
		all = append(all, t.def)
	}
	return all
}

// A process started with a spawn ticket lists its session's tools, brief, before it has
// authenticated; one configured by hand lists every tool in full.
func TestTicketListsTheSessionsToolsFromTheStart(t *testing.T) {
	hand, st := newTestServer(t)
	if got := len(hand.visibleTools(allTools(hand))); got != len(hand.tools) {
		t.Errorf("without a ticket %d tools listed, want all %d", got, len(hand.tools))
	}
	sp, ticket, err := st.CreateSpawn(filestore.NewSpawn{AgentID: "w1", Purpose: filestore.PurposeTask, AIType: "codex"})
	if err != nil {
		t.Fatal(err)
	}
	s := New(st, Options{Logf: t.Logf, SpawnTicket: ticket})
	listed := s.visibleTools(allTools(s))
	names := listedNames(listed)
	for _, want := range []string{"authenticate", "get_next_action", "report_completed", "create_tasks_batch", "help"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s is not listed: %v", want, names)
		}
	}
	for _, not := range []string{"send_message", "assign_task", "get_my_profile", "get_execution_log"} {
		if slices.Contains(names, not) {
			t.Errorf("%s is listed to a worker's task session", not)
		}
	}
	for _, tl := range listed {
		if _, ok := tl.InputSchema.Properties["session_token"]; ok {
			t.Errorf("%s lists session_token", tl.Name)
		}
	}
	// a ticket of an ended spawn (or none that can be read) lists everything, as by hand
	if _, err := st.EndSpawn(sp.ID, 0, "exited"); err != nil {
		t.Fatal(err)
	}
	if got := len(s.visibleTools(allTools(s))); got != len(s.tools) {
		t.Errorf("with an ended spawn's ticket %d tools listed, want all %d", got, len(s.tools))
	}
}

// Every numeric parameter the server reads is an integer (optInt refuses 60.5): none is
// declared "number", and each says its bounds.
func TestNumericParametersAreBoundedIntegers(t *testing.T) {
	s, _ := newTestServer(t)
	for name, tl := range s.tools {
		for p, v := range tl.def.InputSchema.Properties {
			m, _ := v.(map[string]any)
			switch m["type"] {
			case "number":
				t.Errorf("%s.%s is declared number; the server accepts integers only", name, p)
			case "integer":
				if m["minimum"] == nil {
					t.Errorf("%s.%s: an integer without its minimum", name, p)
				}
			}
		}
	}
}
