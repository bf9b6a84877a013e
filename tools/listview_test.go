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

// The brief list of each session kind a spawn ticket opens stays within its budget: what
// the model sees of it with every request. Clients add their own wrapping (Codex about
// 25 bytes a tool; testdata/e2e/toolbytes.txtar measures what it sends), and the limit
// is 8 KB a request with it.
func TestBriefListBudget(t *testing.T) {
	s, _ := newTestServer(t)
	kinds := []struct {
		name    string
		purpose string
		hier    string
		budget  int
	}{
		{"worker task", filestore.PurposeTask, filestore.HierarchyWorker, 6000},
		// (7450: update_task_dependencies, the CLI's --add-dep/--remove-dep, adds 277 bytes
		// to the 7137 of the list with dispatch_subtasks)
		{"manager task", filestore.PurposeTask, filestore.HierarchyManager, 7450},
		{"worker chat", filestore.PurposeChat, filestore.HierarchyWorker, 5600},
		{"manager chat", filestore.PurposeChat, filestore.HierarchyManager, 7000},
	}
	var names []string
	for n := range s.tools {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, k := range kinds {
		se, a := &filestore.Session{Purpose: k.purpose}, &filestore.Agent{Hierarchy: k.hier}
		full, short, n := 0, 0, 0
		var sizes []string
		for _, name := range names {
			tl := s.tools[name]
			if permits(tl.perm, se, a) != nil || reference[name] {
				continue
			}
			b := briefTool(tl.def)
			n++
			full += modelBytes(tl.def)
			short += modelBytes(b)
			sizes = append(sizes, name+"="+itoa(modelBytes(b)))
		}
		t.Logf("%s: %d tools, %d bytes brief (%d in full): %s", k.name, n, short, full, strings.Join(sizes, " "))
		if short > k.budget {
			t.Errorf("%s: the brief list is %d bytes, over the budget of %d", k.name, short, k.budget)
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
	lim := briefTool(s.tools["list_tasks"].def).InputSchema.Properties["limit"].(map[string]any)
	if lim["type"] != "integer" || lim["minimum"] != 1.0 && lim["minimum"] != 1 || lim["maximum"] == nil {
		t.Errorf("limit = %v, want an integer with bounds", lim)
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
