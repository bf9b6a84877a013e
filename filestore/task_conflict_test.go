package filestore

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/aipm/aipm/filestore/internal/engine"
)

// conflictTask leaves t's file as a merge leaves it when both sides retitled the task:
// Git's markers around the title, our side first.
func conflictTask(t *testing.T, s *Store, tk *Task, ours, theirs string) {
	t.Helper()
	o, th := cloneTask(tk), cloneTask(tk)
	o.Title, th.Title = ours, theirs
	od, err := engine.EncodeJSON(o)
	if err != nil {
		t.Fatal(err)
	}
	td, _ := engine.EncodeJSON(th)
	if err := os.WriteFile(s.taskPath(tk.ID), MarkConflicts(od, td), 0o644); err != nil {
		t.Fatal(err)
	}
	s.Changed("tasks/" + tk.ID + ".json")
}

// A conflicted task stays in every listing and count as our side, marked with the field
// in conflict and both values, and is refused any write until it is settled.
func TestConflictedTaskStaysVisible(t *testing.T) {
	s := newTestStore(t)
	tk := mustTask(t, s, NewTask{Title: "Before", Status: StatusTodo, AssigneeID: "w1"})
	conflictTask(t, s, tk, "Named in B", "Named in A")

	for name, st := range map[string]*Store{"this process": s, "another": reopen(t, s)} {
		got, err := st.Task(tk.ID)
		if err != nil {
			t.Fatalf("%s: Task: %v", name, err)
		}
		if got.Title != "Named in B" || got.Conflict == nil || strings.Join(got.Conflict.Fields, ",") != "title" ||
			got.Conflict.Theirs["title"] != `"Named in A"` {
			t.Fatalf("%s: read as %q, conflict %+v", name, got.Title, got.Conflict)
		}
		if want := `title (ours "Named in B", theirs "Named in A")`; got.Conflict.String(got) != want {
			t.Errorf("%s: conflict = %s, want %s", name, got.Conflict.String(got), want)
		}
		all, err := st.Tasks(TaskFilter{AssigneeID: "w1"})
		if err != nil || len(all) != 1 || all[0].Conflict == nil {
			t.Errorf("%s: listing = %v, %v; want the conflicted task, marked", name, all, err)
		}
		if n, _ := st.TaskStatusCounts(); n[StatusTodo] != 1 {
			t.Errorf("%s: counts %v; the conflicted task is not counted", name, n)
		}
	}
	_, err := s.SetTaskStatus(human, tk.ID, StatusInProgress, "")
	var e *Error
	if !errors.As(err, &e) || e.Code != "task_conflicted" || !errors.Is(err, ErrConflict) || !strings.Contains(e.Hint, "aipm resolve .ai-pm/tasks/"+tk.ID+".json --ours") {
		t.Fatalf("a write to a conflicted task: %v", err)
	}
	data, _ := os.ReadFile(s.taskPath(tk.ID))
	if !HasConflictMarkers(data) {
		t.Fatal("the refused write touched the file")
	}
	// Settled (our side kept, as `aipm resolve --ours` writes it): an ordinary task again.
	resolved := cloneTask(tk)
	resolved.Title = "Named in B"
	if err := engine.WriteJSON(s.taskPath(tk.ID), resolved, 0o644); err != nil {
		t.Fatal(err)
	}
	s.Changed("tasks/" + tk.ID + ".json")
	if got, err := s.Task(tk.ID); err != nil || got.Conflict != nil || got.Title != "Named in B" {
		t.Fatalf("settled: %+v, %v", got, err)
	}
	if _, err := s.SetTaskStatus(human, tk.ID, StatusInProgress, ""); err != nil {
		t.Fatalf("a write once settled: %v", err)
	}
}

// A conflicted task held in the index file keeps its mark in the next process, and a
// task file that says "conflict" by hand is not taken for one.
func TestConflictMarkSurvivesTheIndexFile(t *testing.T) {
	s := newTestStore(t)
	tk := mustTask(t, s, NewTask{Title: "Before", Status: StatusTodo})
	conflictTask(t, s, tk, "Ours", "Theirs")
	saveIndex(t, s)
	o := reopen(t, s)
	if !fromIndex(t, o) {
		t.Fatal("the next process did not start from the index file")
	}
	if got, err := o.Task(tk.ID); err != nil || got.Conflict == nil {
		t.Fatalf("from the index file: %+v, %v", got, err)
	}
	plain := mustTask(t, s, NewTask{Title: "Plain"})
	data, _ := os.ReadFile(s.taskPath(plain.ID))
	data = []byte(strings.Replace(string(data), `"version"`, `"conflict": {"fields": ["title"]}, "version"`, 1))
	if err := os.WriteFile(s.taskPath(plain.ID), data, 0o644); err != nil {
		t.Fatal(err)
	}
	s.Changed("tasks/" + plain.ID + ".json")
	if got, err := s.Task(plain.ID); err != nil || got.Conflict != nil {
		t.Fatalf("a file that says conflict: %+v, %v", got, err)
	}
}

// A conflicted project.json or agent file does not stop the clone: both are read as our
// side, marked with the fields in conflict and both values; a change of the project is
// refused until the file is settled (it would settle it by our side without a word), and
// the agent keeps working.
func TestConflictedProjectAndAgentKeepWorking(t *testing.T) {
	s := newTestStore(t)
	p, err := s.Project()
	if err != nil {
		t.Fatal(err)
	}
	o, th := *p, *p
	o.Description, th.Description = "ours", "theirs"
	od, _ := engine.EncodeJSON(&o)
	td, _ := engine.EncodeJSON(&th)
	if err := os.WriteFile(s.path("project.json"), MarkConflicts(od, td), 0o644); err != nil {
		t.Fatal(err)
	}
	ag, err := s.Agent("w1")
	if err != nil {
		t.Fatal(err)
	}
	ao, at := *ag, *ag
	ao.Role, at.Role = "backend", "frontend"
	aod, _ := engine.EncodeJSON(&ao)
	atd, _ := engine.EncodeJSON(&at)
	if err := os.WriteFile(s.agentPath("w1"), MarkConflicts(aod, atd), 0o644); err != nil {
		t.Fatal(err)
	}
	s.Changed("agents/w1/agent.json")
	if _, err := s.SendMessage(human, SendRequest{To: "w1", Content: "still there?"}); err != nil {
		t.Fatalf("a message to a conflicted agent: %v", err)
	}

	for name, st := range map[string]*Store{"this process": s, "another": reopen(t, s)} {
		got, err := st.Project()
		if err != nil || got.Description != "ours" || got.Conflict == nil || got.Conflict.Theirs["description"] != `"theirs"` {
			t.Fatalf("%s: project %+v, %v", name, got, err)
		}
		if want := `description (ours "ours", theirs "theirs")`; got.Conflict.String(got) != want {
			t.Errorf("%s: %s, want %s", name, got.Conflict.String(got), want)
		}
		a, err := st.Agent("w1")
		if err != nil || a.Role != "backend" || a.Conflict == nil || strings.Join(a.Conflict.Fields, ",") != "role" {
			t.Fatalf("%s: agent %+v, %v", name, a, err)
		}
	}
	if _, err := reopen(t, s).Authenticate(AuthRequest{AgentID: "w1", Passkey: "w1-passkey", Purpose: PurposeChat, PID: os.Getpid()}); err != nil {
		t.Errorf("a conflicted agent cannot authenticate: %v", err)
	}
	_, err = s.SetProjectStatus(human, ProjectPaused)
	var e *Error
	if !errors.As(err, &e) || e.Code != "project_conflicted" || !strings.Contains(e.Hint, "aipm resolve .ai-pm/project.json --ours") {
		t.Fatalf("a change of a conflicted project: %v", err)
	}
	if err := s.EditSettings(human, func(*Settings) {}); !errors.As(err, &e) || e.Code != "project_conflicted" {
		t.Fatalf("a settings change of a conflicted project: %v", err)
	}
	// A file that says "conflict" by hand is read without it.
	data, _ := engine.EncodeJSON(&o)
	data = []byte(strings.Replace(string(data), `"version"`, `"conflict": {"fields": ["name"], "theirs": {}}, "version"`, 1))
	if err := os.WriteFile(s.path("project.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := reopen(t, s).Project(); err != nil || got.Conflict != nil {
		t.Fatalf("a hand-written conflict field counts: %+v, %v", got, err)
	}
}
