package gitstate

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aipm/aipm/filestore"
)

// attacker is a plain clone of the state branch from which commits are pushed with plain
// git, claiming aipm's trailers.
type attacker struct {
	t   *testing.T
	dir string
}

// write sets the file at rel (relative to .ai-pm) to data.
func (x attacker) write(rel string, data []byte) {
	x.t.Helper()
	p := filepath.Join(x.dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		x.t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		x.t.Fatal(err)
	}
}

// edit decodes the JSON file at rel, lets change alter it, and writes it back.
func (x attacker) edit(rel string, change func(map[string]any)) {
	x.t.Helper()
	data, err := os.ReadFile(filepath.Join(x.dir, filepath.FromSlash(rel)))
	if err != nil {
		x.t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		x.t.Fatal(err)
	}
	change(v)
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		x.t.Fatal(err)
	}
	x.write(rel, append(out, '\n'))
}

// appendLine adds v as a line of the JSONL file at rel.
func (x attacker) appendLine(rel string, v any) {
	x.t.Helper()
	line, err := json.Marshal(v)
	if err != nil {
		x.t.Fatal(err)
	}
	p := filepath.Join(x.dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		x.t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		x.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(append(line, '\n')); err != nil {
		x.t.Fatal(err)
	}
}

// push commits everything as aipm would from machine (and human, if not ""), and pushes.
func (x attacker) push(machine, human string) string {
	x.t.Helper()
	msg := "aipm: changed\n\nAipm-Machine: " + machine
	if human != "" {
		msg += "\nAipm-Human: " + human
	}
	mustGit(x.t, x.dir, "pull", "-q", "--no-rebase", "origin", Branch)
	mustGit(x.t, x.dir, "add", "-A", ".")
	mustGit(x.t, x.dir, "commit", "-q", "-m", msg)
	mustGit(x.t, x.dir, "push", "-q", "origin", "HEAD:refs/heads/"+Branch)
	return mustGit(x.t, x.dir, "rev-parse", "HEAD")
}

// suspectsOf runs a round of s and returns what it named as suspect.
func suspectsOf(t *testing.T, s *filestore.Store) []string {
	t.Helper()
	r, err := (&Syncer{Store: s, Remote: "origin"}).Once(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return r.Suspect
}

// wantSuspect checks that the round named commit, and only it, with a line matching want.
func wantSuspect(t *testing.T, got []string, commit, want string) {
	t.Helper()
	t.Logf("named: %q", got)
	if len(got) != 1 || !strings.HasPrefix(got[0], "commit "+commit[:10]+" ") || !regexp.MustCompile(want).MatchString(got[0]) ||
		!strings.Contains(got[0], "git -C .ai-pm show "+commit[:10]) {
		t.Errorf("suspect = %q, want commit %.10s named: %s", got, commit, want)
	}
}

// approvalLine is the history line aipm writes for a decision on a task.
func approvalLine(actor, via, task, to string) filestore.Event {
	return filestore.Event{At: time.Now().UTC(), Actor: actor, Via: via, Entity: "task", ID: task, Change: "approval",
		From: filestore.ApprovalPending, To: to}
}

// TestApprovalByNonAncestorIsSuspect: an approval or a rejection that arrives from another
// clone is named when the one it names as deciding may not decide on the task (not an
// ancestor of its assignee), when it names no one, or when it is a human other than the
// commit's; one made by the rules is not.
func TestApprovalByNonAncestorIsSuspect(t *testing.T) {
	a, _ := twoClones(t)
	for _, n := range []filestore.NewAgent{
		{ID: "bob", Type: filestore.AgentHuman, Hierarchy: filestore.HierarchyManager, ParentID: "owner"},
		{ID: "w1", ParentID: "owner", AIType: "manual"},
	} {
		if _, _, err := a.AddAgent(owner, n); err != nil {
			t.Fatal(err)
		}
	}
	w1 := filestore.Actor{ID: "w1", Via: filestore.ViaTool}
	var pending []string
	for i := range 5 {
		res, err := a.RequestTask(w1, "", filestore.TaskRequest{Title: fmt.Sprintf("Request %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		pending = append(pending, res.Task.ID)
	}
	if got := suspectsOf(t, a); len(got) != 0 {
		t.Fatalf("a round of this clone's own changes names %q", got)
	}
	x := attacker{t, plainClone(t, a)}
	taskFile := func(id string) string { return "tasks/" + id + ".json" }

	// bob, a human but not w1's ancestor, approves w1's request.
	x.edit(taskFile(pending[0]), func(v map[string]any) { v["approval"], v["approved_by"] = "approved", "bob" })
	x.appendLine("events.jsonl", approvalLine("bob", filestore.ViaCLI, pending[0], filestore.ApprovalApproved))
	c := x.push("mb", "bob")
	wantSuspect(t, suspectsOf(t, a), c, `from machine mb, whose human is bob, approves task `+pending[0]+` as bob, who is not an ancestor of its assignee w1 and may not decide on it`)

	// The owner's approval, written into the file on bob's clone without a history line.
	x.edit(taskFile(pending[1]), func(v map[string]any) { v["approval"], v["approved_by"] = "approved", "owner" })
	c = x.push("mb", "bob")
	wantSuspect(t, suspectsOf(t, a), c, `approves task `+pending[1]+` as owner, another human than the commit's`)

	// A rejection that names no one.
	x.edit(taskFile(pending[2]), func(v map[string]any) { v["approval"], v["rejected_reason"] = "rejected", "no" })
	c = x.push("mb", "bob")
	wantSuspect(t, suspectsOf(t, a), c, `rejects task `+pending[2]+` naming no one who decided`)

	// A rejection by w1 of its own request.
	x.edit(taskFile(pending[3]), func(v map[string]any) { v["approval"] = "rejected" })
	x.appendLine("events.jsonl", approvalLine("w1", filestore.ViaTool, pending[3], filestore.ApprovalRejected))
	c = x.push("mb", "bob")
	wantSuspect(t, suspectsOf(t, a), c, `rejects task `+pending[3]+` as w1, who is not an ancestor of its assignee w1`)

	// The owner's approval, on the owner's clone, by the rules: nothing to name.
	x.edit(taskFile(pending[4]), func(v map[string]any) { v["approval"], v["approved_by"] = "approved", "owner" })
	x.appendLine("events.jsonl", approvalLine("owner", filestore.ViaCLI, pending[4], filestore.ApprovalApproved))
	x.push("ma", "owner")
	if got := suspectsOf(t, a); len(got) != 0 {
		t.Errorf("an approval by the assignee's ancestor on their own clone is named: %q", got)
	}

	// A request that an ancestor asked for arrives approved by that ancestor from the
	// assignee's machine (RequestTask): nothing to name. One that names a non-ancestor as
	// its approver is named.
	asked, wrong := filestore.NewID(filestore.PrefixTask, time.Now()), filestore.NewID(filestore.PrefixTask, time.Now())
	for _, c := range []struct{ id, by string }{{asked, "owner"}, {wrong, "bob"}} {
		x.write(taskFile(c.id), fmt.Appendf(nil, `{"id": %q, "title": "asked", "status": "backlog", "assignee_id": "w1", "requester_id": %q, "approval": "approved", "approved_by": %q}`+"\n", c.id, c.by, c.by))
	}
	c = x.push("mb", "bob")
	wantSuspect(t, suspectsOf(t, a), c, `approves task `+wrong+` as bob, who is not an ancestor of its assignee w1`)
}

// TestAgentLineFromAnotherMachineIsSuspect: a message or a change an AI agent made,
// arriving from a machine that does not hold the agent's lease, is named; one from the
// lease's machine, one from a machine that takes the lease in the same commit, one dated
// before the other machine took the lease, and one of an agent with no lease are not.
func TestAgentLineFromAnotherMachineIsSuspect(t *testing.T) {
	a, _ := twoClones(t)
	for _, id := range []string{"w1", "w2"} {
		if _, _, err := a.AddAgent(owner, filestore.NewAgent{ID: id, ParentID: "owner", AIType: "manual"}); err != nil {
			t.Fatal(err)
		}
	}
	suspectsOf(t, a)
	x := attacker{t, plainClone(t, a)}
	took := time.Now().UTC().Add(-time.Minute)
	lease := func(machine string, at time.Time) []byte {
		data, _ := json.Marshal(filestore.Lease{AgentID: "w1", MachineID: machine, AcquiredAt: at, RenewedAt: at, ExpiresAt: at.Add(time.Hour), UpdatedAt: at, Version: 1})
		return data
	}
	x.write("leases/w1.json", lease("ma", took))
	x.push("ma", "owner")
	if got := suspectsOf(t, a); len(got) != 0 {
		t.Fatalf("a lease alone is named: %q", got)
	}
	msg := func(from, to, text string, at time.Time) filestore.Message {
		return filestore.Message{ID: filestore.NewID(filestore.PrefixMessage, at), SenderID: from, ReceiverID: to, Content: text, CreatedAt: at}
	}

	// w1's message, sent from mb while ma holds its lease.
	x.appendLine("agents/w1/chat.jsonl", msg("w1", "owner", "from the wrong machine", time.Now().UTC()))
	c := x.push("mb", "bob")
	wantSuspect(t, suspectsOf(t, a), c, `from machine mb, whose human is bob, holds lines of agent w1, whose lease machine ma holds`)

	// A change through w1's tools from mb: named too.
	x.appendLine("events.jsonl", filestore.Event{At: time.Now().UTC(), Actor: "w1", Via: filestore.ViaTool, Entity: "task", ID: "T-1", Change: "status"})
	c = x.push("mb", "")
	wantSuspect(t, suspectsOf(t, a), c, `from machine mb holds lines of agent w1, whose lease machine ma holds`)

	// From ma, the lease's machine; w2, which has no lease, from mb; a line of w1 dated
	// before ma took the lease: nothing to name.
	x.appendLine("agents/w1/chat.jsonl", msg("w1", "owner", "from its own machine", time.Now().UTC()))
	x.push("ma", "owner")
	x.appendLine("agents/w2/chat.jsonl", msg("w2", "owner", "no lease", time.Now().UTC()))
	x.appendLine("agents/w1/chat.jsonl", msg("w1", "owner", "before the move", took.Add(-time.Minute)))
	x.push("mb", "bob")
	if got := suspectsOf(t, a); len(got) != 0 {
		t.Errorf("lines of the lease's machine, of an agent with no lease or from before the lease moved are named: %q", got)
	}

	// mb takes the lease and sends in the same commit: the lease it leaves is its own.
	x.write("leases/w1.json", lease("mb", time.Now().UTC()))
	x.appendLine("agents/w1/chat.jsonl", msg("w1", "owner", "after taking it", time.Now().UTC()))
	x.push("mb", "bob")
	if got := suspectsOf(t, a); len(got) != 0 {
		t.Errorf("a commit that takes the lease and speaks for the agent is named: %q", got)
	}
}

// TestReadEach: objects come to the callback in order, nil for a missing one or one over
// the limit (never read); reads over the budget read nothing.
func TestReadEach(t *testing.T) {
	gitEnv(t)
	dir := t.TempDir()
	mustGit(t, dir, "init", "-q")
	for name, data := range map[string]string{"a": "aa", "big": strings.Repeat("x", 100), "c": "c"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustGit(t, dir, "add", "-A")
	mustGit(t, dir, "commit", "-q", "-m", "files")
	specs := []string{"HEAD:a", "HEAD:missing", "HEAD:big", "HEAD~1:a", "HEAD:c"}
	var got []string
	over, err := readEach(gitCmd{dir: dir}, specs, 10, 100, func(i int, data []byte) {
		got = append(got, fmt.Sprintf("%d=%s", i, data))
	})
	if err != nil || over {
		t.Fatal(over, err)
	}
	if want := "0=aa 1= 2= 3= 4=c"; strings.Join(got, " ") != want {
		t.Errorf("readEach handed %q, want %q", strings.Join(got, " "), want)
	}
	got = nil
	over, err = readEach(gitCmd{dir: dir}, specs, 1000, 50, func(i int, data []byte) { got = append(got, string(data)) })
	if err != nil || !over || len(got) != 0 {
		t.Errorf("over the budget: over %v, err %v, read %q", over, err, got)
	}
}

// TestTooManyTaskFilesAreNamed: a commit that changes more task files than a round reads
// for approvals is named as not checked, rather than read without bound or let through.
func TestTooManyTaskFilesAreNamed(t *testing.T) {
	gitEnv(t)
	dir := t.TempDir()
	mustGit(t, dir, "init", "-q")
	if err := os.MkdirAll(filepath.Join(dir, "tasks"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range maxTaskFiles + 1 {
		if err := os.WriteFile(filepath.Join(dir, "tasks", fmt.Sprintf("tsk_%04d.json", i)), []byte(`{"approval": "approved", "approved_by": "x"}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustGit(t, dir, "add", "-A")
	mustGit(t, dir, "commit", "-q", "-m", "many")
	got := approvalFindings(gitCmd{dir: dir}, "HEAD", "", nil)
	if len(got) != 1 || !strings.Contains(got[0], fmt.Sprintf("changes %d task files, more than a round reads for approvals", maxTaskFiles+1)) {
		t.Errorf("findings = %q", got)
	}
}

// TestRootCommitLinesAreNotOneMachines: a root commit (a store moved onto the branch)
// holds the lines every machine wrote before; its agents' lines are not checked against
// their leases, while the same commit with a parent would be named.
func TestRootCommitLinesAreNotOneMachines(t *testing.T) {
	gitEnv(t)
	dir := t.TempDir()
	mustGit(t, dir, "init", "-q")
	x := attacker{t, dir}
	now := time.Now().UTC()
	lease, _ := json.Marshal(filestore.Lease{AgentID: "w1", MachineID: "mb", AcquiredAt: now.Add(-time.Hour), ExpiresAt: now.Add(time.Hour)})
	x.write("leases/w1.json", lease)
	x.appendLine("agents/w1/chat.jsonl", filestore.Message{ID: "msg_1", SenderID: "w1", ReceiverID: "owner", Content: "hi", CreatedAt: now})
	mustGit(t, dir, "add", "-A")
	mustGit(t, dir, "commit", "-q", "-m", "aipm: the state\n\nAipm-Machine: ma")
	if got := commitFindings(gitCmd{dir: dir}, "HEAD", "ma", "", true, nil); len(got) != 0 {
		t.Errorf("a root commit: %q", got)
	}
	if got := commitFindings(gitCmd{dir: dir}, "HEAD", "ma", "", false, nil); len(got) != 1 || !strings.Contains(got[0], "holds lines of agent w1, whose lease machine mb holds") {
		t.Errorf("the same lines in a commit with a parent: %q", got)
	}
}
