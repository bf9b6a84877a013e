package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aipm/aipm/filestore"
)

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"task", "task", 0}, {"tsak", "task", 1}, {"lst", "list", 1},
		{"task", "", 4}, {"stauts", "status", 1}, {"agnet", "agent", 1}, {"kitten", "sitting", 3},
	} {
		if got := editDistance(c.a, c.b); got != c.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestClosest(t *testing.T) {
	names := []string{"add", "list", "show", "tree", "edit", "status", "assign", "approve", "reject"}
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"lst", []string{"list"}},
		{"stat", []string{"status"}},
		{"a", []string{"add", "assign", "approve"}},
		{"xyzzy", nil},
		{"ad", []string{"add"}},
	} {
		if got := closest(c.in, names); !slices.Equal(got, c.want) {
			t.Errorf("closest(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestShortTaskIDs(t *testing.T) {
	ids := []string{
		"tsk_01m884ty04zyx8jyw77z3tv6m1",
		"tsk_01m884ty04zyx8jyw77z3tv6m2", // same millisecond: differs only at the end
		"tsk_01m885aaaaaaaaaaaaaaaaaaaa",
		"tsk_01m9zzzzzzzzzzzzzzzzzzzzzz",
		"tsk_8001k3m9x4aaaaaaaaaaaaaaaa",
		"tsk_8002aaaaaaaaaaaaaaaaaaaaaa", // two clones minted 8002 at once
		"tsk_8002baaaaaaaaaaaaaaaaaaaaa",
		"tsk_8003aaaaaaaaaaaaaaaaaaaaaa",
	}
	got := filestore.ShortTaskIDs(ids)
	want := map[string]string{
		ids[0]: ids[0], ids[1]: ids[1],
		ids[2]: "tsk_01m885", ids[3]: "tsk_01m9",
		ids[4]: "tsk_8001", ids[5]: "tsk_8002a", ids[6]: "tsk_8002b", ids[7]: "tsk_8003",
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("short(%s) = %s, want %s", id, got[id], w)
		}
	}
	// Every short id is a prefix of its id alone.
	for id, short := range got {
		n := 0
		for _, other := range ids {
			if strings.HasPrefix(other, short) {
				n++
			}
		}
		if n != 1 || !strings.HasPrefix(id, short) {
			t.Errorf("%s abbreviates %s ambiguously", short, id)
		}
	}
}

func TestCLIHintNamesCommands(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"list tasks with list_tasks", "list tasks with `aipm task list`"},
		{"assign the task first (assign_task)", "assign the task first (`aipm task assign ID AGENT`)"},
		{"an ancestor of the assignee must approve it first (approve_task_request)", "an ancestor of the assignee must approve it first (`aipm task approve ID`)"},
		{"check my_list_tasks_x", "check my_list_tasks_x"}, // not a whole word
	} {
		if got := cliHint(c.in); got != c.want {
			t.Errorf("cliHint(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestJSONRequested(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"task", "show", "X", "--json"}, true},
		{[]string{"task", "show", "-json=true"}, true},
		{[]string{"task", "show", "--", "--json"}, false},
		{[]string{"task", "show", "X"}, false},
	} {
		if got := jsonRequested(c.args); got != c.want {
			t.Errorf("jsonRequested(%q) = %v", c.args, got)
		}
	}
}

// Every command, group or not, answers --help on stdout with exit 0, and every
// sub-command's help lists its flags in --double-dash form with examples.
func TestEveryCommandHasHelp(t *testing.T) {
	var walk func(path []string, cmds []*command)
	checked := 0
	walk = func(path []string, cmds []*command) {
		for _, c := range cmds {
			p := append(slices.Clone(path), c.name)
			if len(c.examples) == 0 && c.subs == nil {
				t.Errorf("aipm %s has no examples", strings.Join(p, " "))
			}
			var out, errb bytes.Buffer
			a := &app{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }, now: time.Now}
			if code := a.run(append(slices.Clone(p), "--help")); code != 0 {
				t.Errorf("aipm %s --help: exit %d, stderr %q", strings.Join(p, " "), code, errb.String())
			}
			help := out.String()
			if !strings.HasPrefix(help, "usage: aipm "+strings.Join(p, " ")) && !strings.Contains(help, "usage: aipm "+strings.Join(p, " ")) {
				t.Errorf("aipm %s --help: no usage line:\n%s", strings.Join(p, " "), help)
			}
			if c.subs == nil {
				if strings.Contains(help, "\n  -json") || !strings.Contains(help, "\n  --json") || !strings.Contains(help, "Examples:") {
					t.Errorf("aipm %s --help: want --double-dash flags and examples:\n%s", strings.Join(p, " "), help)
				}
			}
			checked++
			walk(p, c.subs)
		}
	}
	walk(nil, commands())
	if checked < 25 {
		t.Errorf("only %d commands checked", checked)
	}
}
