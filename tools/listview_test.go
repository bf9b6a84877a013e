package tools

import (
	"encoding/json"
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
// the model sees of it with every request (clients add their own wrapping, about 110
// bytes a tool for Codex; the end-to-end scenario agentcli_toolbytes measures that).
func TestBriefListBudget(t *testing.T) {
	s, _ := newTestServer(t)
	kinds := []struct {
		name    string
		purpose string
		hier    string
		budget  int
	}{
		{"worker task", filestore.PurposeTask, filestore.HierarchyWorker, 5300},
		{"manager task", filestore.PurposeTask, filestore.HierarchyManager, 6600},
		{"worker chat", filestore.PurposeChat, filestore.HierarchyWorker, 5000},
		{"manager chat", filestore.PurposeChat, filestore.HierarchyManager, 6400},
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
