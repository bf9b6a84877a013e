package filestore

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The caches are only caches: whatever changes a file, the next query answers from the
// file as it is now.

// reopen is a second Store on the same directory: another process.
func reopen(t *testing.T, s *Store) *Store {
	t.Helper()
	o, err := Open(s.Root(), Options{Now: s.now})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func statusOf(t *testing.T, s *Store, id string) string {
	t.Helper()
	list, err := s.TasksByID([]string{id})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) == 0 {
		return "<absent>"
	}
	return list[0].Status
}

// handEdit rewrites a task file in place (no rename, no journal), as an editor may.
func handEdit(t *testing.T, s *Store, id string, edit func(*Task)) {
	t.Helper()
	tk, err := s.Task(id)
	if err != nil {
		t.Fatal(err)
	}
	edit(tk)
	data, err := encodeJSON(tk)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(s.taskPath(id), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func TestCacheUnwatchedSeesEveryChange(t *testing.T) {
	s := newTestStore(t)
	a := mustTask(t, s, NewTask{Title: "A", Status: StatusTodo, AssigneeID: "w1"})
	b := mustTask(t, s, NewTask{Title: "B", Status: StatusTodo, ParentID: a.ID})
	if got := statusOf(t, s, a.ID); got != StatusTodo {
		t.Fatalf("status = %s", got)
	}
	// An in-place edit of the same size: only the modification time says it changed.
	handEdit(t, s, a.ID, func(tk *Task) { tk.Status = "backlo" + "g" })
	if got := statusOf(t, s, a.ID); got != StatusBacklog {
		t.Errorf("in-place edit: status = %s, want backlog", got)
	}
	// Deleted, then created again with other content.
	data, _ := os.ReadFile(s.taskPath(b.ID))
	os.Remove(s.taskPath(b.ID))
	if got := statusOf(t, s, b.ID); got != "<absent>" {
		t.Errorf("deleted task still listed: %s", got)
	}
	if kids, _ := s.Tasks(TaskFilter{ParentID: a.ID}); len(kids) != 0 {
		t.Errorf("deleted child still a child: %v", kids)
	}
	os.WriteFile(s.taskPath(b.ID), []byte(strings.Replace(string(data), `"todo"`, `"blocked"`, 1)), 0o644)
	if got := statusOf(t, s, b.ID); got != StatusBlocked {
		t.Errorf("re-created task: status = %s, want blocked", got)
	}
	// Another process's write, through aipm.
	o := reopen(t, s)
	if _, err := o.AssignTask(human, b.ID, "w2"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Tasks(TaskFilter{AssigneeID: "w2"}); len(got) != 1 || got[0].ID != b.ID {
		t.Errorf("assignee index after another process's write: %v", got)
	}
	// A broken file is left out, and comes back when repaired.
	os.WriteFile(s.taskPath(b.ID), []byte("{ broken"), 0o644)
	if got := statusOf(t, s, b.ID); got != "<absent>" {
		t.Errorf("broken file listed with status %s", got)
	}
	os.WriteFile(s.taskPath(b.ID), data, 0o644)
	if got := statusOf(t, s, b.ID); got != StatusTodo {
		t.Errorf("repaired file: status = %s", got)
	}
}

func TestCacheWatched(t *testing.T) {
	s := newTestStore(t)
	a := mustTask(t, s, NewTask{Title: "A", Status: StatusTodo, AssigneeID: "w1"})
	s.Watched()
	if got := statusOf(t, s, a.ID); got != StatusTodo {
		t.Fatalf("status = %s", got)
	}
	// Writes through aipm by another process are in the journal: seen at once, with no
	// word from the watcher.
	o := reopen(t, s)
	if _, err := o.SetTaskStatus(human, a.ID, StatusInProgress, ""); err != nil {
		t.Fatal(err)
	}
	if got := statusOf(t, s, a.ID); got != StatusInProgress {
		t.Errorf("after another process's write: %s, want in_progress", got)
	}
	c := mustTask(t, o, NewTask{Title: "C", ParentID: a.ID})
	if kids, _ := s.Tasks(TaskFilter{ParentID: a.ID}); len(kids) != 1 || kids[0].ID != c.ID {
		t.Errorf("new child from another process: %v", kids)
	}
	// A hand edit is trusted to the watcher: seen once it reports the path.
	handEdit(t, s, c.ID, func(tk *Task) { tk.Title = "C edited" })
	s.Changed("tasks/" + c.ID + ".json")
	if got, _ := s.TasksByID([]string{c.ID}); len(got) != 1 || got[0].Title != "C edited" {
		t.Errorf("hand edit reported by the watcher: %v", got)
	}
	// Lost events (an overflow): a rescan compares every file.
	handEdit(t, s, c.ID, func(tk *Task) { tk.Title = "C again" })
	os.Remove(s.taskPath(a.ID))
	s.Changed("")
	if got, _ := s.TasksByID([]string{a.ID, c.ID}); len(got) != 1 || got[0].Title != "C again" {
		t.Errorf("after a rescan: %v", got)
	}
	// A directory replaced wholesale (a checkout): the directory's own path is reported.
	dir := s.path("tasks")
	os.Rename(dir, dir+".old")
	os.Mkdir(dir, 0o755)
	s.Changed("tasks")
	if all, _ := s.Tasks(TaskFilter{}); len(all) != 0 {
		t.Errorf("tasks after the directory was replaced: %d", len(all))
	}
}

func TestCacheRenameStorm(t *testing.T) {
	s := newTestStore(t)
	s.Watched()
	var ids []string
	for i := range 20 {
		ids = append(ids, mustTask(t, s, NewTask{Title: fmt.Sprint("T", i)}).ID)
	}
	// Files swapped around by renames, as a git checkout of another branch may do, each
	// reported by the watcher.
	tmp := filepath.Join(t.TempDir(), "x")
	for i := 0; i+1 < len(ids); i += 2 {
		p, q := s.taskPath(ids[i]), s.taskPath(ids[i+1])
		os.Rename(p, tmp)
		os.Rename(q, p)
		os.Rename(tmp, q)
		s.Changed("tasks/"+ids[i]+".json", "tasks/"+ids[i+1]+".json")
	}
	for i, id := range ids {
		tk, _ := s.TasksByID([]string{id})
		// The file now holds its neighbour's content (its id stays the file name).
		want := fmt.Sprint("T", i^1)
		if len(tk) != 1 || tk[0].Title != want || tk[0].ID != id {
			t.Fatalf("tasks/%s.json: cached %v, want the content of %s", id, tk, want)
		}
	}
}

func TestJournalStartedAnew(t *testing.T) {
	s := newTestStore(t)
	a := mustTask(t, s, NewTask{Title: "A"})
	s.Watched()
	statusOf(t, s, a.ID)
	// Another process starts a new journal (it grew too large) after a hand edit nobody
	// reported: the reader re-checks every cached file.
	handEdit(t, s, a.ID, func(tk *Task) { tk.Status = StatusTodo })
	os.Remove(s.eng.journalPath())
	o := reopen(t, s)
	mustTask(t, o, NewTask{Title: "B"})
	if got := statusOf(t, s, a.ID); got != StatusTodo {
		t.Errorf("after a new journal: status = %s, want todo", got)
	}
}

func TestTaskPage(t *testing.T) {
	s := newTestStore(t)
	top := mustTask(t, s, NewTask{Title: "top"})
	var kids []string
	for i := range 7 {
		kids = append(kids, mustTask(t, s, NewTask{Title: fmt.Sprint("k", i), ParentID: top.ID}).ID)
	}
	var got []string
	after := ""
	for pages := 0; ; pages++ {
		p, err := s.TaskPage(TaskFilter{ParentID: top.ID}, after, 3)
		if err != nil || p.Total != 7 || pages > 3 {
			t.Fatalf("page %d: %+v, %v", pages, p, err)
		}
		for _, tk := range p.Tasks {
			got = append(got, tk.ID)
		}
		if p.Next == "" {
			break
		}
		after = p.Next
	}
	if strings.Join(got, ",") != strings.Join(kids, ",") {
		t.Errorf("pages = %v, want %v", got, kids)
	}
	counts, _ := s.SubtreeSummary(top.ID)
	if counts[StatusBacklog] != 7 || counts.Total() != 7 {
		t.Errorf("subtree counts = %v", counts)
	}
}

func TestEventsTail(t *testing.T) {
	s := newTestStore(t)
	a := mustTask(t, s, NewTask{Title: "A", AssigneeID: "w1", Status: StatusTodo})
	b := mustTask(t, s, NewTask{Title: "B"})
	if evs, total, _ := s.EventsTail(a.ID, 10); total != 1 || len(evs) != 1 || evs[0].Change != "created" {
		t.Fatalf("A's history = %v (total %d)", evs, total)
	}
	mustStatus := func(id, to string) {
		if _, err := s.SetTaskStatus(human, id, to, ""); err != nil {
			t.Fatal(err)
		}
	}
	mustStatus(a.ID, StatusInProgress)
	mustStatus(b.ID, StatusTodo)
	mustStatus(a.ID, StatusBlocked)
	evs, total, _ := s.EventsTail(a.ID, 2)
	if total != 3 || len(evs) != 2 || evs[0].To != StatusInProgress || evs[1].To != StatusBlocked {
		t.Errorf("A's last two of %d: %+v", total, evs)
	}
	// A hand-written line (other key order and spacing) is found too.
	f, _ := os.OpenFile(s.path("events.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, "{\"id\": %q, \"change\": \"note\", \"at\": \"2026-01-02T00:00:00Z\"}\n", b.ID)
	f.Close()
	if evs, total, _ := s.EventsTail(b.ID, -1); total != 3 || evs[2].Change != "note" {
		t.Errorf("B's history = %+v", evs)
	}
	// A line longer than the index reads at once, and one still being written.
	f, _ = os.OpenFile(s.path("events.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, "{\"at\":\"2026-01-02T00:00:00Z\",\"entity\":\"task\",\"id\":%q,\"change\":\"long\",\"reason\":%q}\n", b.ID, strings.Repeat("r", 600<<10))
	fmt.Fprintf(f, "{\"id\": %q, \"change\": \"torn", b.ID)
	f.Close()
	if evs, total, _ := s.EventsTail(b.ID, 1); total != 4 || evs[0].Change != "long" || len(evs[0].Reason) != 600<<10 {
		t.Errorf("after a long line: total %d", total)
	}
	// The history rewritten as a whole (a merge): indexed again from the top.
	lines, _ := readLines(s.path("events.jsonl"), 0)
	var keep []string
	for _, l := range lines {
		var e Event
		json.Unmarshal(l.Data, &e)
		if e.ID != a.ID || e.To != StatusBlocked {
			keep = append(keep, string(l.Data))
		}
	}
	tmp := s.path("events.jsonl.new")
	os.WriteFile(tmp, []byte(strings.Join(keep, "\n")+"\n"), 0o644)
	os.Rename(tmp, s.path("events.jsonl"))
	if evs, total, _ := s.EventsTail(a.ID, -1); total != 2 || evs[1].To != StatusInProgress {
		t.Errorf("after a rewrite: %+v", evs)
	}
}

func TestAgentsCache(t *testing.T) {
	s := newTestStore(t)
	s.Watched()
	if all, _ := s.Agents(); len(all) != 4 {
		t.Fatalf("agents = %d, want 4", len(all))
	}
	o := reopen(t, s)
	if _, _, err := o.AddAgent(human, NewAgent{ID: "w3", ParentID: "mgr", Passkey: "w3-passkey"}); err != nil {
		t.Fatal(err)
	}
	all, _ := s.Agents()
	if len(all) != 5 || all[4].ID != "w3" {
		t.Fatalf("after another process added w3: %v", len(all))
	}
	// A hand edit of agent.json, reported by the watcher as its path.
	a, _ := s.Agent("w3")
	a.Role = "tester"
	data, _ := encodeJSON(a)
	os.WriteFile(s.agentPath("w3"), data, 0o644)
	s.Changed("agents/w3/agent.json")
	all, _ = s.Agents()
	if all[4].Role != "tester" {
		t.Errorf("hand edit not seen: role %q", all[4].Role)
	}
	// The agent's directory removed.
	os.RemoveAll(s.path("agents", "w3"))
	s.Changed("agents/w3")
	if all, _ := s.Agents(); len(all) != 4 {
		t.Errorf("removed agent still listed: %d", len(all))
	}
}

func TestProjectMemo(t *testing.T) {
	s := newTestStore(t)
	p, err := s.Project()
	if err != nil {
		t.Fatal(err)
	}
	// What a caller changes in its copy is not what the next caller gets.
	p.Name = "changed"
	p.Settings.AgentCommands = map[string]AgentCommand{"x": {Command: []string{"x"}}}
	if q, _ := s.Project(); q.Name == "changed" || q.Settings.AgentCommands["x"].Command != nil {
		t.Fatalf("a caller's change leaked into the memo: %+v", q)
	}
	// A hand edit in place is read at the next call.
	data, _ := os.ReadFile(s.path("project.json"))
	edited := strings.Replace(string(data), `"name": "test"`, `"name": "tset"`, 1)
	f, _ := os.OpenFile(s.path("project.json"), os.O_WRONLY|os.O_TRUNC, 0)
	f.WriteString(edited)
	f.Close()
	if q, _ := s.Project(); q.Name != "tset" {
		t.Errorf("hand edit not seen: name %q", q.Name)
	}
	// The readers that share the held copy see the same, and a caller's copy changed
	// afterwards does not reach them.
	if sh, err := s.ProjectView(); err != nil || sh.Name != "tset" {
		t.Errorf("shared read: %+v, %v", sh, err)
	}
	q, _ := s.Project()
	q.Settings.Language = "xx"
	if lang := s.ProjectLanguage(); lang == "xx" {
		t.Error("a caller's copy changed the language the store reads")
	}
	// ProjectView hands every reader the one held copy until the file changes.
	v1, err := s.ProjectView()
	if v2, _ := s.ProjectView(); err != nil || v1 != v2 {
		t.Errorf("ProjectView copied the project: %p %p, %v", v1, v2, err)
	}
	// project.json swapped for a link is refused, not answered from the memo.
	target := filepath.Join(t.TempDir(), "elsewhere.json")
	if err := os.WriteFile(target, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(s.path("project.json"))
	if err := os.Symlink(target, s.path("project.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Project(); err == nil {
		t.Error("project.json as a link read from the memo")
	}
	if _, err := s.ProjectView(); err == nil {
		t.Error("project.json as a link read from the memo by a shared read")
	}
}
