package ui

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aipm/aipm/filestore"
)

// A task file's content is a stranger's commit: an "id" inside it that names another task,
// or a path, must not steer a button. The page gets each task's id from its file name, so
// Approve on "update the changelog" approves that task and nothing else.
func TestTaskIDsComeFromFileNames(t *testing.T) {
	ts, st, _, _ := newTestServer(t)
	w1 := filestore.Actor{ID: "w1", Via: filestore.ViaTool}
	request := func(title string) string {
		t.Helper()
		r, err := st.RequestTask(w1, "", filestore.TaskRequest{Title: title})
		if err != nil {
			t.Fatal(err)
		}
		if r.Task.Approval != filestore.ApprovalPending {
			t.Fatalf("%s: approval %s, want pending", title, r.Task.Approval)
		}
		return r.Task.ID
	}
	changelog := request("update the changelog")
	deploy := request("deploy to production")
	other := request("tidy the docs")
	setID := func(file, id string) {
		t.Helper()
		path := filepath.Join(st.Dir(), "tasks", file+".json")
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		data = []byte(strings.Replace(string(data), `"id": "`+file+`"`, `"id": "`+id+`"`, 1))
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	setID(changelog, deploy)
	setID(other, "../project/paused#")

	code, body := do(t, ts, "GET", "/api/state", "", testToken, "")
	if code != http.StatusOK {
		t.Fatalf("state: %d %s", code, body)
	}
	var state struct {
		Tasks []struct{ ID, Title string } `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(body), &state); err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, tk := range state.Tasks {
		ids[tk.Title] = tk.ID
	}
	if ids["update the changelog"] != changelog || ids["deploy to production"] != deploy || ids["tidy the docs"] != other {
		t.Fatalf("the page's task ids %v, want the file names %s, %s, %s", ids, changelog, deploy, other)
	}
	if code, body := do(t, ts, "POST", "/api/tasks/"+ids["update the changelog"]+"/approve", "", testToken, ""); code != http.StatusOK {
		t.Fatalf("approve: %d %s", code, body)
	}
	if code, body := do(t, ts, "POST", "/api/tasks/"+ids["tidy the docs"]+"/approve", "", testToken, ""); code != http.StatusOK {
		t.Fatalf("approve: %d %s", code, body)
	}
	for id, want := range map[string]string{changelog: filestore.ApprovalApproved, deploy: filestore.ApprovalPending, other: filestore.ApprovalApproved} {
		tk, err := st.Task(id)
		if err != nil {
			t.Fatal(err)
		}
		if tk.Approval != want {
			t.Errorf("task %s (%s): approval %s, want %s", id, tk.Title, tk.Approval, want)
		}
	}
	if p, err := st.Project(); err != nil || p.Status != filestore.ProjectActive {
		t.Errorf("project: %+v %v, want it still active", p, err)
	}
}
