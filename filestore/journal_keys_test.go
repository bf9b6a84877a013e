package filestore

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
)

// A write through aipm tells the other processes, in its journal line, the identity its
// file was given and the index keys of what it holds: they bring their indexes up to date
// with a stat, and read the file only when its content is asked for.

// countReads makes s count the task files it reads, by id.
func countReads(s *Store) func() map[string]int {
	var mu sync.Mutex
	reads := map[string]int{}
	read := s.tasks.read
	s.tasks.read = func(id string) (*Task, error) {
		mu.Lock()
		reads[id]++
		mu.Unlock()
		return read(id)
	}
	return func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := reads
		reads = map[string]int{}
		return out
	}
}

func refsOf(t *testing.T, s *Store, ids ...string) string {
	t.Helper()
	refs, err := s.TaskRefs(ids)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range refs {
		out = append(out, fmt.Sprintf("%s:%s:%s", r.AssigneeID, r.Status, strings.TrimPrefix(r.ParentID, "tsk_")))
	}
	return strings.Join(out, " ")
}

func TestJournalCarriesIndexKeys(t *testing.T) {
	for _, watched := range []bool{false, true} {
		t.Run(fmt.Sprint("watched=", watched), func(t *testing.T) {
			s := newTestStore(t)
			a := mustTask(t, s, NewTask{Title: "A", Status: StatusTodo, AssigneeID: "w1"})
			b := mustTask(t, s, NewTask{Title: "B", Status: StatusTodo, ParentID: a.ID})
			o := reopen(t, s)
			if watched {
				o.Watched()
			}
			reads := countReads(o)
			if got := refsOf(t, o, a.ID, b.ID); got != "w1:todo: :todo:"+strings.TrimPrefix(a.ID, "tsk_") {
				t.Fatalf("refs = %q", got)
			}
			reads()

			// Another process moves a, hands b over and creates c.
			if _, err := s.SetTaskStatus(human, a.ID, StatusInProgress, ""); err != nil {
				t.Fatal(err)
			}
			if _, err := s.AssignTask(human, b.ID, "w2"); err != nil {
				t.Fatal(err)
			}
			c := mustTask(t, s, NewTask{Title: "C", Status: StatusTodo, ParentID: b.ID, AssigneeID: "w2"})
			want := "w1:in_progress: w2:todo:" + strings.TrimPrefix(a.ID, "tsk_") + " w2:todo:" + strings.TrimPrefix(b.ID, "tsk_")
			if got := refsOf(t, o, a.ID, b.ID, c.ID); got != want {
				t.Fatalf("refs after another process's writes = %q, want %q", got, want)
			}
			if n, err := o.TaskStatusCounts(); err != nil || n[StatusInProgress] != 1 || n[StatusTodo] != 2 {
				t.Errorf("counts = %v, %v", n, err)
			}
			if kids, err := o.TaskPage(TaskFilter{AssigneeID: "w2"}, "", 0); err != nil || kids.Total != 2 {
				t.Errorf("w2's tasks: %+v, %v", kids, err)
			}
			if got := reads(); len(got) != 0 {
				t.Errorf("the index came from the journal, yet files were read: %v", got)
			}
			// The content is read when asked for, once.
			for range 2 {
				if tk, err := o.TasksByID([]string{c.ID}); err != nil || len(tk) != 1 || tk[0].Title != "C" || tk[0].AssigneeID != "w2" {
					t.Fatalf("TasksByID(c) = %+v, %v", tk, err)
				}
			}
			if got := reads(); got[c.ID] != 1 || len(got) != 1 {
				t.Errorf("reads asking for c twice: %v, want c once", got)
			}

			// A write through aipm, then an edit beside it before this process looks: the
			// file no longer has the identity the journal names, so it is read.
			if _, err := s.SetTaskStatus(human, a.ID, StatusBlocked, "waits"); err != nil {
				t.Fatal(err)
			}
			handEdit(t, s, a.ID, func(tk *Task) { tk.AssigneeID = "w7" })
			if !watched {
				if got := refsOf(t, o, a.ID); got != "w7:blocked:" {
					t.Errorf("after an edit beside the journaled write: %q", got)
				}
			} else {
				o.Changed("tasks/" + a.ID + ".json") // what its watcher reports
				if got := refsOf(t, o, a.ID); got != "w7:blocked:" {
					t.Errorf("after an edit beside the journaled write: %q", got)
				}
			}

			// Known from the journal (blocked by the cascade), not yet read, then edited in place: a process without a
			// watcher compares it as it compares every unfinished task.
			if _, err := s.AssignTask(human, b.ID, "w1"); err != nil {
				t.Fatal(err)
			}
			if got := refsOf(t, o, b.ID); !strings.HasPrefix(got, "w1:blocked:") {
				t.Fatalf("refs of b = %q", got)
			}
			handEdit(t, s, b.ID, func(tk *Task) { tk.AssigneeID = "w9" })
			if watched {
				o.Changed("tasks/" + b.ID + ".json")
			}
			if got := refsOf(t, o, b.ID); !strings.HasPrefix(got, "w9:blocked:") {
				t.Errorf("after an in-place edit of a task known from the journal: %q", got)
			}
			if tk, err := o.Task(b.ID); err != nil || tk.AssigneeID != "w9" {
				t.Errorf("Task(b) = %+v, %v", tk, err)
			}
		})
	}
}

// A journal line whose keys do not match the file (written by hand, or by another
// program) costs a read when the content is asked for, and the file's keys win.
func TestJournalKeysCheckedAgainstTheFile(t *testing.T) {
	s := newTestStore(t)
	a := mustTask(t, s, NewTask{Title: "A", Status: StatusTodo, AssigneeID: "w1"})
	o := reopen(t, s)
	o.Watched()
	refsOf(t, o, a.ID)
	// A write through aipm that this process has not looked at yet, and a line after it
	// that names the same file with other keys.
	if _, err := s.AssignTask(human, a.ID, "w2"); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(s.taskPath(a.ID))
	if err != nil {
		t.Fatal(err)
	}
	line := "tasks/" + a.ID + ".json\t1\t2\t" + stampFields(stampOf(fi)) + "\t[\"\",\"w5\",\"done\"]\n"
	f, err := os.OpenFile(s.eng.journalPath(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(line)
	f.Close()
	if got := refsOf(t, o, a.ID); got != "w5:done:" {
		t.Fatalf("refs = %q: the line was not taken, so this test shows nothing", got)
	}
	if tk, err := o.TasksByID([]string{a.ID}); err != nil || len(tk) != 1 || tk[0].AssigneeID != "w2" || tk[0].Status != StatusTodo {
		t.Fatalf("TasksByID = %+v, %v", tk, err)
	}
	if got := refsOf(t, o, a.ID); got != "w2:todo:" {
		t.Errorf("refs after the file was read = %q, want the file's", got)
	}
}

// A process holding tasks it knows from the journal only writes them to its index file in
// full: the next process answers as one that read every file.
func TestIndexFileSavedWithTasksKnownFromTheJournal(t *testing.T) {
	s := newTestStore(t)
	var ids []string
	for i := range 4 {
		ids = append(ids, mustTask(t, s, NewTask{Title: fmt.Sprint("t", i), AssigneeID: "w1"}).ID)
	}
	finish(t, s, ids[0])
	o := reopen(t, s)
	o.Watched()
	refsOf(t, o, ids...)
	w := reopen(t, s)
	if _, err := w.SetTaskStatus(human, ids[1], StatusTodo, ""); err != nil {
		t.Fatal(err)
	}
	finish(t, w, ids[2])
	late := mustTask(t, w, NewTask{Title: "late", ParentID: ids[1], AssigneeID: "w2"})
	ids = append(ids, late.ID)
	o.tasks.mu.Lock()
	o.tasks.rebuilt = true
	o.tasks.mu.Unlock()
	if _, err := o.TaskStatusCounts(); err != nil { // a query that reads no file, and saves
		t.Fatal(err)
	}
	n := reopen(t, s)
	if !fromIndex(t, n) {
		t.Fatal("not started from the index file")
	}
	// Unfinished work first: it is what the index file holds in full, and what the
	// coordinator looks at.
	unfinished := titles(t, n, TaskFilter{Unfinished: true})
	os.Remove(s.tasks.indexPath())
	if want := titles(t, reopen(t, s), TaskFilter{Unfinished: true}); unfinished != want {
		t.Fatalf("unfinished work from the index file: %q, from the files: %q", unfinished, want)
	}
	if got, want := answers(t, n, ids), answers(t, reopen(t, s), ids); got != want {
		t.Fatalf("from the index file:\n%s\nfrom the files:\n%s", got, want)
	}
}

// A server answers Task from its cache, but a write starts from the file: an edit beside
// aipm that its watcher has not reported yet is kept, not overwritten with what the cache
// held.
func TestWriteStartsFromTheFileNotTheCache(t *testing.T) {
	s := newTestStore(t)
	a := mustTask(t, s, NewTask{Title: "A", Status: StatusTodo, AssigneeID: "w1"})
	o := reopen(t, s)
	o.Watched()
	o.Warm()
	if tk, err := o.Task(a.ID); err != nil || tk.Title != "A" {
		t.Fatalf("Task = %+v, %v", tk, err)
	}
	handEdit(t, s, a.ID, func(tk *Task) { tk.Title = "A, edited by hand" }) // not reported
	if _, err := o.SetTaskStatus(human, a.ID, StatusInProgress, ""); err != nil {
		t.Fatal(err)
	}
	tk, err := s.readTask(a.ID)
	if err != nil || tk.Title != "A, edited by hand" || tk.Status != StatusInProgress {
		t.Errorf("file after the write: %+v, %v; want the edited title, in progress", tk, err)
	}
}

// A server answers Agent from its cache, which its watcher keeps current; a process without
// a watcher sees an edit at once.
func TestAgentFromTheCacheSeesEdits(t *testing.T) {
	s := newTestStore(t)
	edit := func(name string) {
		t.Helper()
		data, err := os.ReadFile(s.agentPath("w1"))
		if err != nil {
			t.Fatal(err)
		}
		a, err := s.readAgent("w1")
		if err != nil {
			t.Fatal(err)
		}
		out := strings.Replace(string(data), `"name": "`+a.Name+`"`, `"name": "`+name+`"`, 1)
		if out == string(data) {
			t.Fatalf("no name field to edit in %s", data)
		}
		if err := os.WriteFile(s.agentPath("w1"), []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, watched := range []bool{false, true} {
		o := reopen(t, s)
		if watched {
			o.Watched()
		}
		o.Warm()
		name := fmt.Sprint("Worker watched=", watched)
		edit(name)
		if watched {
			o.Changed("agents/w1/agent.json")
		}
		if a, err := o.Agent("w1"); err != nil || a.Name != name {
			t.Errorf("watched=%v: Agent after an edit: %+v, %v", watched, a, err)
		}
	}
}

// The tasks' generation stays while nothing changed and moves with any change: a write by
// another process (known from the journal), an edit beside aipm, a new file.
func TestTasksGenerationMovesWithEveryChange(t *testing.T) {
	s := newTestStore(t)
	a := mustTask(t, s, NewTask{Title: "A", Status: StatusTodo, AssigneeID: "w1"})
	for _, watched := range []bool{false, true} {
		o := reopen(t, s)
		if watched {
			o.Watched()
		}
		gen := func() uint64 {
			t.Helper()
			g, err := o.TasksGeneration()
			if err != nil {
				t.Fatal(err)
			}
			return g
		}
		g0 := gen()
		if g := gen(); g != g0 {
			t.Fatalf("watched=%v: generation moved with no change: %d → %d", watched, g0, g)
		}
		steps := []struct {
			what string
			do   func()
		}{
			{"another process's write", func() {
				if _, err := s.AssignTask(human, a.ID, map[bool]string{false: "w2", true: "w1"}[watched]); err != nil {
					t.Fatal(err)
				}
			}},
			{"an edit beside aipm", func() {
				handEdit(t, s, a.ID, func(tk *Task) { tk.Title = fmt.Sprint("A edited, watched=", watched) })
				if watched {
					o.Changed("tasks/" + a.ID + ".json")
				}
			}},
			{"a new task", func() { mustTask(t, s, NewTask{Title: "B"}) }},
		}
		for _, st := range steps {
			before := gen()
			st.do()
			if after := gen(); after == before {
				t.Errorf("watched=%v: %s left the generation at %d", watched, st.what, after)
			}
		}
	}
}

// TasksChangedSince names the tasks changed after a generation, and says when it no longer
// can.
func TestTasksChangedSince(t *testing.T) {
	s := newTestStore(t)
	a := mustTask(t, s, NewTask{Title: "A", Status: StatusTodo, AssigneeID: "w1"})
	o := reopen(t, s)
	o.Watched()
	g0, err := o.TasksGeneration()
	if err != nil {
		t.Fatal(err)
	}
	if ids, g, ok, err := o.TasksChangedSince(g0); err != nil || !ok || len(ids) != 0 || g != g0 {
		t.Fatalf("nothing changed: %v %d %v %v", ids, g, ok, err)
	}
	if _, err := s.AssignTask(human, a.ID, "w2"); err != nil {
		t.Fatal(err)
	}
	b := mustTask(t, s, NewTask{Title: "B"})
	ids, g1, ok, err := o.TasksChangedSince(g0)
	if err != nil || !ok || !slices.Contains(ids, a.ID) || !slices.Contains(ids, b.ID) || g1 == g0 {
		t.Fatalf("after two writes: %v %d %v %v", ids, g1, ok, err)
	}
	o.tasks.mu.Lock()
	o.tasks.gen += recentChanges // as after that many changes
	o.tasks.mu.Unlock()
	if _, _, ok, _ := o.TasksChangedSince(g1); ok {
		t.Error("changes beyond what is remembered told as complete")
	}
}

// The journal's keys are cut apart by hand in their usual form; every input reads as
// encoding/json reads it, whatever its form.
func TestParseJournalKeysAsJSON(t *testing.T) {
	inputs := []string{
		`[]`, `["a"]`, `["tsk_01","in_progress","w1",""]`, `["","",""]`,
		`["é, ü","日本"]`, `["a\"b"]`, `["\u003cx\u003e"]`, `["a\\b","c"]`,
		`[ "a" ]`, `["a" ,"b"]`, `null`, `[null]`, `[1]`, `["a",]`, `["a""b"]`, `["a"`, `"a"]`,
		`[`, `]`, ``, `["a"]x`, `[,]`, `[""`, `["a",""]`, `["a,b"]`, `["[","]"]`,
		"[\"a\x01b\"]", "[\"\xff\"]", "[\"ü\"]",
	}
	for i := range 200 { // keys as json.Marshal writes them, some needing escapes
		var ks []string
		for j := range i % 6 {
			ks = append(ks, strings.Repeat(string(rune('a'+(i+j)%26)), j)+[]string{"", ",", "\"", "<", "\x01", "\t", "ü"}[(i+j)%7])
		}
		b, err := json.Marshal(ks)
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, string(b))
	}
	for _, in := range inputs {
		var want []string
		wantOK := json.Unmarshal([]byte(in), &want) == nil && want != nil
		got, ok := parseJournalKeys(in)
		if ok != wantOK || ok && !slices.Equal(got, want) {
			t.Errorf("parseJournalKeys(%q) = %q, %v; encoding/json reads %q, %v", in, got, ok, want, wantOK)
		}
	}
}
