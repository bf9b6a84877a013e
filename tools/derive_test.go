package tools

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/aipm/aipm/filestore"
)

// A session's derivation passes over changes of other agents' tasks, and still tells the
// change of its own task that follows them.
func TestDeriveSkipsOthersChangesNotOwn(t *testing.T) {
	s, st, se, other := taskSessionAndOther(t)
	owner := filestore.Actor{ID: "alice", Via: filestore.ViaCLI}
	for range 3 {
		if _, err := other.CreateTask(owner, filestore.NewTask{Title: "someone else's", Status: filestore.StatusTodo}); err != nil {
			t.Fatal(err)
		}
		if err := s.deriveFor(se); err != nil {
			t.Fatal(err)
		}
	}
	if _, interrupts, err := st.UnreadCounts(se); err != nil || interrupts != 0 {
		t.Fatalf("interrupts after others' changes: %d, %v", interrupts, err)
	}
	if _, err := other.SetTaskStatus(owner, se.TaskID, filestore.StatusBlocked, "waits for a decision"); err != nil {
		t.Fatal(err)
	}
	if err := s.deriveFor(se); err != nil {
		t.Fatal(err)
	}
	if _, interrupts, err := st.UnreadCounts(se); err != nil || interrupts != 1 {
		t.Errorf("interrupts after the session's task was blocked: %d, %v; want 1", interrupts, err)
	}
}

// A derivation that compares only the tasks changed since the last one tells the session
// what a walk of its whole sub-tree tells, and leaves it the same view of its tasks:
// random creations, status changes (with their cascades), reassignments, edits and hand
// edits of the file (a retitle, a status, a new parent) by other processes and by the
// session's agent, derived by two servers, one of which always walks. The two take turns
// going first, so a notice either one tells and the other does not shows as a notice the
// second adds.
func TestDeriveChangedMatchesTheWalk(t *testing.T) {
	a, st := newTestServer(t)
	if out, isErr := invoke(t, a, a.tools["authenticate"], map[string]any{"agent_id": "w1", "passkey": "w1-passkey", "purpose": "task"}); isErr {
		t.Fatalf("authenticate: %v", out)
	}
	se, _ := a.currentSession()
	owner := filestore.Actor{ID: "alice", Via: filestore.ViaCLI}
	if _, _, err := st.AddAgent(owner, filestore.NewAgent{ID: "w2", ParentID: "alice", Passkey: "w2-passkey"}); err != nil {
		t.Fatal(err)
	}
	walker := New(st, Options{PID: os.Getpid(), Logf: t.Logf})
	walker.walkBound = 0
	walker.remember(se)
	other, err := filestore.Open(st.Root(), filestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	actors := []filestore.Actor{owner, {ID: "w1", Via: filestore.ViaTool}, {ID: "w2", Via: filestore.ViaTool}}
	assignees := []string{"w1", "w2", ""}
	ids := []string{se.TaskID}
	rng := rand.New(rand.NewPCG(7, 28))
	unread := func() int {
		n, _, err := st.UnreadCounts(se)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for i := range 400 {
		actor := actors[rng.IntN(len(actors))]
		id := ids[rng.IntN(len(ids))]
		switch r := rng.IntN(10); {
		case r < 3 || len(ids) < 4:
			parent := id // half of them straight below the session's task, as a worker's are
			if rng.IntN(2) == 0 {
				parent = se.TaskID
			}
			tk, err := other.CreateTask(actor, filestore.NewTask{Title: fmt.Sprintf("sub %d", i), Status: filestore.StatusTodo,
				AssigneeID: assignees[rng.IntN(len(assignees))], ParentID: parent})
			if err == nil {
				ids = append(ids, tk.ID)
			}
		case r < 6:
			other.SetTaskStatus(actor, id, filestore.Statuses[rng.IntN(len(filestore.Statuses))], "a reason")
		case r < 7:
			other.AssignTask(actor, id, assignees[rng.IntN(len(assignees))])
		case r < 8:
			title := fmt.Sprintf("edited %d", i)
			other.EditTask(actor, id, filestore.TaskEdit{Title: &title})
		default:
			handEdit(t, st, id, func(m map[string]any) {
				switch rng.IntN(3) {
				case 0:
					m["title"] = fmt.Sprintf("by hand %d", i)
				case 1:
					m["status"] = filestore.Statuses[rng.IntN(len(filestore.Statuses))]
				default:
					if p := ids[rng.IntN(len(ids))]; id != se.TaskID && p != id {
						m["parent_id"] = p
					}
				}
			})
		}
		first, second := a, walker
		if i%2 == 1 {
			first, second = walker, a
		}
		if err := first.deriveFor(se); err != nil {
			t.Fatal(err)
		}
		before := unread()
		if err := second.deriveFor(se); err != nil {
			t.Fatal(err)
		}
		if after := unread(); after != before {
			t.Fatalf("step %d: the second derivation (walking: %v) told %d notice(s) the first did not", i, second == walker, after-before)
		}
		if !maps.Equal(a.seen[se.ID], walker.seen[se.ID]) {
			t.Fatalf("step %d: the session's view differs from the walk's:\n%v\n%v", i, a.seen[se.ID], walker.seen[se.ID])
		}
	}
	if a.derivedChanged < 50 || walker.derivedChanged != 0 {
		t.Errorf("derivations of the changed tasks alone: %d (want ≥ 50), walker %d (want 0)", a.derivedChanged, walker.derivedChanged)
	}
	if unread() == 0 {
		t.Error("no notice told at all: the changes did not reach the session")
	}
}

// taskSessionAndOther is a server with w1's task session, and another process's store
// of the same project to change it from.
func taskSessionAndOther(t *testing.T) (*Server, *filestore.Store, *filestore.Session, *filestore.Store) {
	t.Helper()
	s, st := newTestServer(t)
	if out, isErr := invoke(t, s, s.tools["authenticate"], map[string]any{"agent_id": "w1", "passkey": "w1-passkey", "purpose": "task"}); isErr {
		t.Fatalf("authenticate: %v", out)
	}
	se, _ := s.currentSession()
	other, err := filestore.Open(st.Root(), filestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s, st, se, other
}

// handEdit rewrites a task's file in place, as a human in an editor: no version bump, no
// history event, no journal line.
func handEdit(t *testing.T, st *filestore.Store, id string, edit func(map[string]any)) {
	t.Helper()
	path := filepath.Join(st.Root(), filestore.DirName, "tasks", id+".json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	if data, err = json.MarshalIndent(m, "", "  "); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A block cascades from the deepest sub-task up and writes the blocked task last. A
// derivation that comes between sees a sub-task blocked by a cascade whose cause is not
// blocked yet: it tells nothing of it, looks again at any change, and once the cause is
// written tells the session one interrupt for its task, as when the cascade came whole.
func TestDeriveWaitsForTheCauseOfACascade(t *testing.T) {
	s, st, se, other := taskSessionAndOther(t)
	owner := filestore.Actor{ID: "alice", Via: filestore.ViaCLI}
	sub, err := other.CreateTask(owner, filestore.NewTask{Title: "a step", Status: filestore.StatusTodo, ParentID: se.TaskID, AssigneeID: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.deriveFor(se); err != nil {
		t.Fatal(err)
	}
	unread := func() (int, int) {
		t.Helper()
		n, interrupts, err := st.UnreadCounts(se)
		if err != nil {
			t.Fatal(err)
		}
		return n, interrupts
	}
	base, _ := unread()
	// The cascade's first write, as its writer leaves it: the sub-task blocked from the
	// session's task, which is not blocked yet.
	handEdit(t, st, sub.ID, func(m map[string]any) {
		m["status"], m["cascade_from"], m["status_before_cascade"] = filestore.StatusBlocked, se.TaskID, filestore.StatusTodo
		m["blocked_reason"] = fmt.Sprintf("parent task %s blocked: waits for a decision", se.TaskID)
		m["status_changed_by"], m["status_changed_at"] = "alice", st.Now()
		m["version"] = m["version"].(float64) + 1
	})
	if err := s.deriveFor(se); err != nil {
		t.Fatal(err)
	}
	if n, _ := unread(); n != base {
		t.Fatalf("notices told mid-cascade: %d, want %d", n, base)
	}
	if !s.concerns(se.ID, se.AgentID, se.TaskID, []string{"tsk_unrelated"}) {
		t.Error("a session with a cascade in flight is not concerned by the next change")
	}
	if _, err := other.SetTaskStatus(owner, se.TaskID, filestore.StatusBlocked, "waits for a decision"); err != nil {
		t.Fatal(err)
	}
	if err := s.deriveFor(se); err != nil {
		t.Fatal(err)
	}
	if n, interrupts := unread(); n != base+1 || interrupts != 1 {
		t.Errorf("after the cascade's last write: %d notices (%d interrupts), want %d (1)", n, interrupts, base+1)
	}
	if s.concerns(se.ID, se.AgentID, se.TaskID, []string{"tsk_unrelated"}) {
		t.Error("the session stays concerned by every change once the cascade settled")
	}
}
