package ui

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/aipm/aipm/filestore"
)

// fakeQueue stands in for land.Queue, which needs a Git clone (the browser test drives
// the real one): its diff is fixed, and Retry and Abandon change the landing in the store
// as the queue does, and record who asked.
type fakeQueue struct {
	s     *filestore.Store
	patch string
	fail  error // what Retry and Abandon answer, when set

	mu    sync.Mutex
	calls []string // "retry tsk_… alice/ui"
}

func (q *fakeQueue) Diff(t *filestore.Task, stat bool) (string, error) {
	if stat {
		return " notes.txt | 1 +\n 1 file changed, 1 insertion(+)\n", nil
	}
	return q.patch, nil
}

func (q *fakeQueue) act(what string, actor filestore.Actor, id, state string) (*filestore.Task, error) {
	q.mu.Lock()
	q.calls = append(q.calls, what+" "+id+" "+actor.ID+"/"+actor.Via)
	q.mu.Unlock()
	if q.fail != nil {
		return nil, q.fail
	}
	t, err := q.s.Task(id)
	if err != nil {
		return nil, err
	}
	give := func(_ *filestore.Task, l *filestore.Landing) error {
		l.State, l.NeedsHuman = state, false
		return nil
	}
	if root := filestore.LandingRoot(t); root != id {
		if _, err := q.s.UpdateLanding(actor, root, give); err != nil {
			return nil, err
		}
	}
	return q.s.UpdateLanding(actor, id, give)
}

func (q *fakeQueue) Retry(actor filestore.Actor, id string) (*filestore.Task, error) {
	return q.act("retry", actor, id, filestore.LandQueued)
}

func (q *fakeQueue) Abandon(actor filestore.Actor, id string) (*filestore.Task, error) {
	return q.act("abandon", actor, id, filestore.LandAbandoned)
}

var queueActor = filestore.Actor{ID: "aipm-land", Via: filestore.ViaCoordinator}

// failLanding gives task id a landing whose check failed, waiting for a person after
// attempts attempts.
func failLanding(t *testing.T, st *filestore.Store, id string, attempts int, detail string) {
	t.Helper()
	if _, err := st.BeginLanding(queueActor, id, filestore.Landing{Target: "main", Branch: "aipm/" + id, Base: "0123456789abcdef0123"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.UpdateLanding(queueActor, id, func(_ *filestore.Task, l *filestore.Landing) error {
		l.State, l.Attempts, l.NeedsHuman, l.Detail = filestore.LandCheckFailed, attempts, true, detail
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func readState(t *testing.T, get func() (int, string)) state {
	t.Helper()
	code, body := get()
	if code != http.StatusOK {
		t.Fatalf("GET /api/state: %d %s", code, body)
	}
	var got state
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestLandingNeedsYou: a landing past its attempts waits for the human once, at the task
// whose worktree holds the code (the last rework, not the original it reworks), with its
// attempts and the first line of what went wrong; the card's row carries the landing;
// Retry and Abandon are the queue's calls by the human via ui, and the item goes.
func TestLandingNeedsYou(t *testing.T) {
	var q *fakeQueue
	ts, st, _, task := newTestServerWith(t, func(st *filestore.Store) Queue {
		q = &fakeQueue{s: st}
		return q
	})
	failLanding(t, st, task, 0, "")
	rw, err := st.CreateRework(queueActor, task, task, "what went wrong")
	if err != nil {
		t.Fatal(err)
	}
	failLanding(t, st, rw.ID, 0, "the check `sh check.sh` failed (exit status 1); the end of its output:\nfound <b>BROKEN</b> in notes.txt")
	if _, err := st.UpdateLanding(queueActor, task, func(_ *filestore.Task, l *filestore.Landing) error {
		l.Attempts = 3
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	get := func() (int, string) { return do(t, ts, "GET", "/api/state", "", testToken, "") }
	got := readState(t, get)
	var items []attention
	for _, a := range got.Attention {
		if a.Kind == "landing" {
			items = append(items, a)
		}
	}
	want := "not landed: Ship it (rework 1) — check failed after 3 attempts: the check `sh check.sh` failed (exit status 1); retry or abandon it"
	if len(items) != 1 || items[0].TaskID != rw.ID || items[0].Text != want {
		t.Errorf("landing items %+v, want one for the rework %s: %q", items, rw.ID, want)
	}
	if !strings.Contains(strings.Join(got.AttentionTasks, " "), rw.ID) {
		t.Errorf("attention tasks %v, want the rework %s (the Needs me filter)", got.AttentionTasks, rw.ID)
	}
	for _, r := range got.Tasks {
		if r.ID == rw.ID && (r.Landing == nil || r.Landing.State != filestore.LandCheckFailed || !r.Landing.NeedsYou) {
			t.Errorf("the rework's row has landing %+v, want check_failed, needs you", r.Landing)
		}
	}

	// A refusal of the queue is the queue's sentence.
	q.fail = errors.New("task " + rw.ID + "'s worktree /x is gone: nothing to retry")
	code, body := do(t, ts, "POST", "/api/tasks/"+rw.ID+"/land/retry", "", testToken, "")
	if code != http.StatusConflict || !strings.Contains(body, `"land_refused"`) || !strings.Contains(body, "worktree /x is gone") {
		t.Errorf("a refused retry: %d %s, want 409 with the queue's words", code, body)
	}
	q.fail = nil
	if code, body := do(t, ts, "POST", "/api/tasks/"+rw.ID+"/land/retry", "", testToken, ""); code != http.StatusOK || !strings.Contains(body, `"state":"queued"`) {
		t.Fatalf("retry: %d %s, want 200 queued", code, body)
	}
	got = readState(t, get)
	for _, a := range got.Attention {
		if a.Kind == "landing" {
			t.Errorf("after Retry, still waiting: %+v", a)
		}
	}
	if code, body := do(t, ts, "POST", "/api/tasks/"+rw.ID+"/land/abandon", "", testToken, ""); code != http.StatusOK || !strings.Contains(body, `"state":"abandoned"`) {
		t.Fatalf("abandon: %d %s, want 200 abandoned", code, body)
	}
	if want := []string{"retry " + rw.ID + " alice/ui", "retry " + rw.ID + " alice/ui", "abandon " + rw.ID + " alice/ui"}; strings.Join(q.calls, ";") != strings.Join(want, ";") {
		t.Errorf("queue calls %q, want %q", q.calls, want)
	}
	evs, err := st.Events(rw.ID)
	if err != nil {
		t.Fatal(err)
	}
	if last := evs[len(evs)-1]; last.Actor != "alice" || last.Via != filestore.ViaUI || last.To != filestore.LandAbandoned {
		t.Errorf("last event %+v, want alice via ui → abandoned", last)
	}
}

// TestLandingActionsNeedToken: Retry and Abandon change state: they need the token in the
// header (a form on another site can send neither), and a refused request calls nothing.
func TestLandingActionsNeedToken(t *testing.T) {
	var q *fakeQueue
	ts, st, _, task := newTestServerWith(t, func(st *filestore.Store) Queue {
		q = &fakeQueue{s: st}
		return q
	})
	failLanding(t, st, task, 3, "conflict in notes.txt")
	for _, action := range []string{"retry", "abandon"} {
		for _, c := range []struct{ path, token string }{
			{"/api/tasks/" + task + "/land/" + action, ""},
			{"/api/tasks/" + task + "/land/" + action, "wrong"},
			{"/api/tasks/" + task + "/land/" + action + "?token=" + testToken, ""},
		} {
			if code, body := do(t, ts, "POST", c.path, "", c.token, ""); code != http.StatusForbidden {
				t.Errorf("POST %s with token %q: %d %s, want 403", c.path, c.token, code, body)
			}
		}
		// GET is not an action.
		if code, _ := do(t, ts, "GET", "/api/tasks/"+task+"/land/"+action, "", testToken, ""); code != http.StatusMethodNotAllowed {
			t.Errorf("GET of the %s action: %d, want 405", action, code)
		}
	}
	if len(q.calls) != 0 {
		t.Errorf("refused requests called the queue: %q", q.calls)
	}
	tk, err := st.Task(task)
	if err != nil {
		t.Fatal(err)
	}
	if !tk.Landing.NeedsHuman || tk.Landing.State != filestore.LandCheckFailed {
		t.Errorf("landing %+v after refused requests, want it untouched", tk.Landing)
	}
}

// TestDiff: the diff endpoint needs the token like every read, answers git's summary and
// the patch as JSON text (markup in a patch stays text: escaped, never HTML), bounded to
// diffMax at a line's end, and says so when cut.
func TestDiff(t *testing.T) {
	var q *fakeQueue
	ts, st, _, task := newTestServerWith(t, func(st *filestore.Store) Queue {
		q = &fakeQueue{s: st}
		return q
	})
	path := "/api/tasks/" + task + "/diff"
	// A task without a branch has nothing to show.
	code, body := do(t, ts, "GET", path, "", testToken, "")
	if code != http.StatusOK || !strings.Contains(body, `"stat":"","diff":""`) {
		t.Errorf("the diff of a task without a branch: %d %s, want empty", code, body)
	}
	failLanding(t, st, task, 1, "")
	line := "+<script>alert('x')</script> & more\n"
	q.patch = "diff --git a/notes.txt b/notes.txt\n" + strings.Repeat(line, diffMax/len(line)+10)
	for _, c := range []struct {
		path, token string
		want        int
	}{
		{path, "", http.StatusForbidden},
		{path, "wrong", http.StatusForbidden},
		{path + "?token=wrong", "", http.StatusForbidden},
		{path + "?token=" + testToken, "", http.StatusOK},
		{path, testToken, http.StatusOK},
	} {
		if code, body := do(t, ts, "GET", c.path, "", c.token, ""); code != c.want {
			t.Errorf("GET %s with token %q: %d %.200s, want %d", c.path, c.token, code, body, c.want)
		}
	}
	code, body = do(t, ts, "GET", path, "", testToken, "")
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, code, body)
	}
	if strings.Contains(body, "<script>") || !strings.Contains(body, `\u003cscript\u003e`) {
		t.Errorf("the patch's markup is not escaped in the answer: %.300s", body)
	}
	var got diffAnswer
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	if !got.Truncated || got.Bytes != len(q.patch) || len(got.Diff) > diffMax || !strings.HasSuffix(got.Diff, "more\n") ||
		!strings.HasPrefix(q.patch, got.Diff) || len(got.Diff) < diffMax-len(line) {
		t.Errorf("a %d-byte patch came as %d bytes (truncated %v, bytes %d, ends %q), want its first whole lines within %d",
			len(q.patch), len(got.Diff), got.Truncated, got.Bytes, got.Diff[max(0, len(got.Diff)-20):], diffMax)
	}
	if !strings.Contains(got.Stat, "1 file changed") {
		t.Errorf("stat %q, want git's summary", got.Stat)
	}
	if code, body := do(t, ts, "GET", "/api/tasks/tsk_nope/diff", "", testToken, ""); code != http.StatusNotFound && code != http.StatusBadRequest {
		t.Errorf("the diff of an unknown task: %d %s, want 404 or 400", code, body)
	}
	// Outside Git: no queue, no diff, and no landing actions.
	ts2, _, _, task2 := newTestServer(t)
	if code, body := do(t, ts2, "GET", "/api/tasks/"+task2+"/diff", "", testToken, ""); code != http.StatusNotFound || !strings.Contains(body, "no_git") {
		t.Errorf("the diff outside Git: %d %s, want 404 no_git", code, body)
	}
	if code, body := do(t, ts2, "POST", "/api/tasks/"+task2+"/land/retry", "", testToken, ""); code != http.StatusNotFound || !strings.Contains(body, "no_git") {
		t.Errorf("retry outside Git: %d %s, want 404 no_git", code, body)
	}
}

// TestLandingElsewhere: a landing whose worktree is in another machine's clone waits for
// the human too, but says that only that machine can retry it.
func TestLandingElsewhere(t *testing.T) {
	ts, st, _, task := newTestServerWith(t, func(st *filestore.Store) Queue { return &fakeQueue{s: st} })
	failLanding(t, st, task, 3, "conflict in notes.txt")
	if _, err := st.UpdateLanding(queueActor, task, func(_ *filestore.Task, l *filestore.Landing) error {
		l.Machine = "other-box"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got := readState(t, func() (int, string) { return do(t, ts, "GET", "/api/state", "", testToken, "") })
	var items []attention
	for _, a := range got.Attention {
		if a.Kind == "landing" {
			items = append(items, a)
		}
	}
	if len(items) != 1 || items[0].Machine != "other-box" || !strings.Contains(items[0].Text, "its worktree is on machine other-box: retry it there") {
		t.Errorf("landing items %+v, want one naming machine other-box", items)
	}
}
