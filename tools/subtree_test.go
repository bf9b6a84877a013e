package tools

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aipm/aipm/filestore"
)

// A session's sub-tree brought up to date from the tasks changed since it was copied is
// the sub-tree a walk finds, task for task and field for field, through
// random creations at every depth, status changes (with their cascades), reassignments,
// edits, hand edits of the files (a retitle, a status, a new parent, which may move a
// whole branch in or out or into a loop) and removals, by other processes. A hand edit
// reaches the server as a watcher would tell it.
func TestSubtreeMemoMatchesTheWalk(t *testing.T) {
	s, st := newTestServer(t)
	owner := filestore.Actor{ID: "alice", Via: filestore.ViaCLI}
	if _, _, err := st.AddAgent(owner, filestore.NewAgent{ID: "w2", ParentID: "alice", Passkey: "w2-passkey"}); err != nil {
		t.Fatal(err)
	}
	roots, err := st.Tasks(filestore.TaskFilter{})
	if err != nil || len(roots) != 1 {
		t.Fatalf("tasks: %v, %v", roots, err)
	}
	root := roots[0].ID
	outside, err := st.CreateTask(owner, filestore.NewTask{Title: "elsewhere", Status: filestore.StatusTodo})
	if err != nil {
		t.Fatal(err)
	}
	other, err := filestore.Open(st.Root(), filestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	actors := []filestore.Actor{owner, {ID: "w1", Via: filestore.ViaTool}, {ID: "w2", Via: filestore.ViaTool}}
	assignees := []string{"w1", "w2", ""}
	ids := []string{root, outside.ID}
	rng := rand.New(rand.NewPCG(11, 3))
	text := func(ts []*filestore.Task) string {
		ts = slices.Clone(ts)
		slices.SortFunc(ts, func(a, b *filestore.Task) int { return strings.Compare(a.ID, b.ID) })
		var b strings.Builder
		for _, tk := range ts {
			data, err := json.Marshal(tk)
			if err != nil {
				t.Fatal(err)
			}
			b.Write(data)
			b.WriteByte('\n')
		}
		return b.String()
	}
	for i := range 500 {
		actor := actors[rng.IntN(len(actors))]
		id := ids[rng.IntN(len(ids))]
		switch r := rng.IntN(12); {
		case r < 4 || len(ids) < 5:
			parent := id
			if rng.IntN(2) == 0 {
				parent = root // most straight below the session's task, as a worker's are
			}
			tk, err := other.CreateTask(actor, filestore.NewTask{Title: fmt.Sprintf("sub %d", i), Status: filestore.StatusTodo,
				AssigneeID: assignees[rng.IntN(len(assignees))], ParentID: parent})
			if err == nil {
				ids = append(ids, tk.ID)
			}
		case r < 7:
			other.SetTaskStatus(actor, id, filestore.Statuses[rng.IntN(len(filestore.Statuses))], "a reason")
		case r < 8:
			other.AssignTask(actor, id, assignees[rng.IntN(len(assignees))])
		case r < 9:
			title := fmt.Sprintf("edited %d", i)
			other.EditTask(actor, id, filestore.TaskEdit{Title: &title})
		case r < 10 && id != root:
			os.Remove(filepath.Join(st.Root(), filestore.DirName, "tasks", id+".json"))
			st.Changed("tasks/" + id + ".json")
			ids = slices.DeleteFunc(ids, func(x string) bool { return x == id })
		default:
			if id == root {
				break
			}
			handEdit(t, st, id, func(m map[string]any) {
				switch rng.IntN(4) {
				case 0:
					m["title"] = fmt.Sprintf("by hand %d", i)
				case 1:
					m["status"] = filestore.Statuses[rng.IntN(len(filestore.Statuses))]
				default:
					if p := ids[rng.IntN(len(ids))]; p != id {
						m["parent_id"] = p
					}
				}
			})
			st.Changed("tasks/" + id + ".json")
		}
		got, err := s.subtreeOf(root)
		if err != nil {
			t.Fatal(err)
		}
		walked, err := st.Subtree(root)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := text(got), text(walked); g != w {
			t.Fatalf("step %d: the sub-tree brought up to date:\n%s\nthe walk:\n%s", i, g, w)
		}
	}
	if s.patchedSubtrees < 100 {
		t.Errorf("sub-trees brought up to date from the changes alone: %d of 500, want ≥ 100", s.patchedSubtrees)
	}
}
