package filestore

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aipm/aipm/filestore/internal/engine"
)

// writeRaw puts an entity on disk as a merge would: around the verbs and their rules.
func writeRaw(t *testing.T, path string, v any) {
	t.Helper()
	if err := engine.WriteJSON(path, v, 0o644); err != nil {
		t.Fatal(err)
	}
}

// repairAll runs RepairMerged and returns its breaches by rule.
func repairAll(t *testing.T, s *Store) map[string][]Breach {
	t.Helper()
	found, err := s.RepairMerged(SystemSender)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]Breach{}
	for _, b := range found {
		out[b.Rule] = append(out[b.Rule], b)
	}
	return out
}

// latestEvent is the entity's latest history event.
func latestEvent(t *testing.T, s *Store, id string) Event {
	t.Helper()
	evs, err := s.Events(id)
	if err != nil || len(evs) == 0 {
		t.Fatalf("events of %s: %v, %v", id, evs, err)
	}
	return evs[len(evs)-1]
}

// problemsOf returns Check's findings as strings.
func problemsOf(t *testing.T, s *Store) []string {
	t.Helper()
	probs, err := s.Check()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range probs {
		out = append(out, p.String())
	}
	return out
}

func hasPrefix(list []string, prefix string) bool {
	return slices.ContainsFunc(list, func(s string) bool { return strings.HasPrefix(s, prefix) })
}

func TestRepairMaxParallel(t *testing.T) {
	s := newTestStore(t)
	first := mustTask(t, s, NewTask{Title: "first", AssigneeID: "w1", Status: StatusTodo})
	second := mustTask(t, s, NewTask{Title: "second", AssigneeID: "w1", Status: StatusTodo})
	sub := mustTask(t, s, NewTask{Title: "second's sub-task", ParentID: second.ID, AssigneeID: "w1", Status: StatusTodo})
	if _, err := s.SetTaskStatus(as("w1"), first.ID, StatusInProgress, ""); err != nil {
		t.Fatal(err)
	}
	// The other clone started the second task: each side had one in progress.
	other, _ := s.Task(second.ID)
	later := s.Now().Add(time.Second)
	other.Status, other.StatusChangedBy, other.StatusChangedAt = StatusInProgress, "w1", &later
	writeRaw(t, s.taskPath(second.ID), other)
	if got := problemsOf(t, s); !hasPrefix(got, ".ai-pm/tasks/"+second.ID+".json:6: agent w1 has 2 top-level tasks in progress, over its max_parallel_tasks 1") {
		t.Errorf("doctor does not name it:\n%s", strings.Join(got, "\n"))
	}

	got := repairAll(t, s)
	if b := got[RuleMaxParallel]; len(b) != 1 || b[0].ID != second.ID || !b[0].Repaired {
		t.Fatalf("breaches %+v", got)
	}
	if tk, _ := s.Task(first.ID); tk.Status != StatusInProgress {
		t.Errorf("the task started first is %s", tk.Status)
	}
	tk, _ := s.Task(second.ID)
	if tk.Status != StatusBlocked || tk.StatusChangedBy != SystemSender || !strings.Contains(tk.BlockedReason, "max_parallel_tasks") {
		t.Errorf("the task started last: %s by %s (%q)", tk.Status, tk.StatusChangedBy, tk.BlockedReason)
	}
	ev := latestEvent(t, s, second.ID)
	if ev.Actor != SystemSender || ev.Via != ViaMerge || ev.From != StatusInProgress || ev.To != StatusBlocked || !strings.HasPrefix(ev.Reason, "after a merge: agent w1 has 2") {
		t.Errorf("history %+v", ev)
	}
	// The block's own cascade came with it.
	if st, _ := s.Task(sub.ID); st.Status != StatusBlocked || st.CascadeFrom != second.ID {
		t.Errorf("sub-task %s, cascade from %q", st.Status, st.CascadeFrom)
	}
	if again := repairAll(t, s); len(again) != 0 {
		t.Errorf("a second repair found %+v", again)
	}
	if got := problemsOf(t, s); len(got) != 0 {
		t.Errorf("doctor after the repair:\n%s", strings.Join(got, "\n"))
	}
}

func TestRepairRunningUnderBlockedParent(t *testing.T) {
	s := newTestStore(t)
	parent := mustTask(t, s, NewTask{Title: "parent", AssigneeID: "mgr", Status: StatusTodo})
	child := mustTask(t, s, NewTask{Title: "child", ParentID: parent.ID, AssigneeID: "w1", Status: StatusTodo})
	grandchild := mustTask(t, s, NewTask{Title: "grandchild", ParentID: child.ID, AssigneeID: "w2", Status: StatusTodo})
	if _, err := s.SetTaskStatus(human, parent.ID, StatusInProgress, ""); err != nil {
		t.Fatal(err)
	}
	waiting := mustTask(t, s, NewTask{Title: "in the backlog", ParentID: parent.ID, AssigneeID: "w2", Status: StatusBacklog})
	// One clone blocks the parent, its cascade blocking the child and the grandchild; the
	// other, not having seen the block, starts them a moment later, and the merge keeps
	// the later status (with the first clone's cascade in the merged history).
	if _, err := s.SetTaskStatus(human, parent.ID, StatusBlocked, "waiting for the API key"); err != nil {
		t.Fatal(err)
	}
	started := s.Now()
	for _, id := range []string{child.ID, grandchild.ID} {
		tk, _ := s.Task(id)
		tk.Status, tk.StatusChangedAt = StatusInProgress, &started
		writeRaw(t, s.taskPath(id), tk)
		// The merged history holds the other clone's start, from todo.
		if err := s.appendEvent(Event{At: started, Actor: tk.AssigneeID, Via: ViaTool, Entity: "task", ID: id,
			Change: "status", From: StatusTodo, To: StatusInProgress}); err != nil {
			t.Fatal(err)
		}
	}
	if got := problemsOf(t, s); !hasPrefix(got, ".ai-pm/tasks/"+child.ID+".json:6: in_progress under blocked task "+parent.ID) ||
		!hasPrefix(got, ".ai-pm/tasks/"+grandchild.ID+".json:6: in_progress under blocked task "+parent.ID) {
		t.Errorf("doctor does not name them:\n%s", strings.Join(got, "\n"))
	}
	got := repairAll(t, s)
	if len(got[RuleBlockedParent]) != 2 {
		t.Fatalf("breaches %+v", got)
	}
	for _, id := range []string{child.ID, grandchild.ID} {
		tk, _ := s.Task(id)
		if tk.Status != StatusBlocked || tk.CascadeFrom != parent.ID || tk.StatusBeforeCascade != StatusInProgress ||
			tk.BlockedReason != "parent task "+parent.ID+" blocked: waiting for the API key" {
			t.Errorf("%s: %s from %q before %q (%q)", id, tk.Status, tk.CascadeFrom, tk.StatusBeforeCascade, tk.BlockedReason)
		}
		if ev := latestEvent(t, s, id); ev.Via != ViaMerge || ev.To != StatusBlocked {
			t.Errorf("history of %s: %+v", id, ev)
		}
	}
	// Started on purpose under the blocked parent, which the rules allow, tasks are left
	// alone: one the block did not reach (it was in the backlog), one made after it.
	for _, to := range []string{StatusTodo, StatusInProgress} {
		if _, err := s.SetTaskStatus(as("w2"), waiting.ID, to, ""); err != nil {
			t.Fatal(err)
		}
	}
	late := mustTask(t, s, NewTask{Title: "started after the block", ParentID: parent.ID, AssigneeID: "w1", Status: StatusTodo})
	if _, err := s.SetTaskStatus(as("w1"), late.ID, StatusInProgress, ""); err != nil {
		t.Fatal(err)
	}
	if again := repairAll(t, s); len(again) != 0 {
		t.Errorf("starts the rules allow were taken for a merge: %+v", again)
	}
	for _, id := range []string{waiting.ID, late.ID} {
		if _, err := s.SetTaskStatus(as("w1"), id, StatusCancelled, ""); err != nil {
			t.Fatal(err)
		}
	}
	// Being the cascade's, the block lifts with the parent's, back to running.
	if _, err := s.SetTaskStatus(human, parent.ID, StatusInProgress, ""); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{child.ID, grandchild.ID} {
		if tk, _ := s.Task(id); tk.Status != StatusInProgress {
			t.Errorf("%s after the unblock: %s", id, tk.Status)
		}
	}
	// Blocked again with its parent, the child is restarted on purpose: left alone.
	if _, err := s.SetTaskStatus(human, parent.ID, StatusBlocked, "again"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetTaskStatus(as("w1"), child.ID, StatusInProgress, ""); err != nil {
		t.Fatal(err)
	}
	if again := repairAll(t, s); len(again) != 0 {
		t.Errorf("a restart from blocked was taken for a merge: %+v", again)
	}
}

func TestRepairTurnsOverMax(t *testing.T) {
	s := newTestStore(t)
	c := mustStart(t, s, "w1", "w2", ConversationRequest{MaxTurns: 6})
	// Each clone counted three messages of its own side, the merge added them up.
	on := mustConv(t, s, c.ID)
	at := s.Now()
	on.State, on.ActivatedAt, on.LastMessageAt, on.Turns = ConvActive, &at, &at, 8
	writeRaw(t, s.conversationPath(c.ID), on)
	if got := problemsOf(t, s); !hasPrefix(got, ".ai-pm/conversations/"+c.ID+".json:9: active with 8 turns, max_turns 6") {
		t.Errorf("doctor does not name it:\n%s", strings.Join(got, "\n"))
	}
	got := repairAll(t, s)
	if b := got[RuleMaxTurns]; len(b) != 1 || !b[0].Repaired {
		t.Fatalf("breaches %+v", got)
	}
	after := mustConv(t, s, c.ID)
	if after.State != ConvTerminating || after.EndReason != EndMaxTurns || !after.EndedAt.Equal(at) {
		t.Errorf("after the repair: %s %s at %v", after.State, after.EndReason, after.EndedAt)
	}
	if ev := latestEvent(t, s, c.ID); ev.Via != ViaMerge || ev.From != ConvActive || ev.To != ConvTerminating {
		t.Errorf("history %+v", ev)
	}
	// Both sides are told it ended, as for any end.
	for _, id := range []string{"w1", "w2"} {
		if !after.needsNotice(id) {
			t.Errorf("%s is not told", id)
		}
	}
}

func TestRepairSecondLiveConversation(t *testing.T) {
	s := newTestStore(t)
	pending := mustStart(t, s, "w1", "w2", ConversationRequest{})
	// The other clone's conversation of the same pair, already picked up there.
	active := *pending
	active.ID = NewID(PrefixConversation, s.Now().Add(time.Second))
	active.InitiatorID, active.ParticipantID = "w2", "w1"
	at := s.Now()
	active.State, active.ActivatedAt = ConvActive, &at
	writeRaw(t, s.conversationPath(active.ID), &active)
	if got := problemsOf(t, s); !hasPrefix(got, ".ai-pm/conversations/"+active.ID+".json:7: second live conversation between w1 and w2 (also "+pending.ID+")") {
		t.Errorf("doctor does not name it:\n%s", strings.Join(got, "\n"))
	}
	// The older is kept, though the younger is the one already picked up: another clone
	// may not have seen that yet, and must keep the same one.
	got := repairAll(t, s)
	if b := got[RuleOneLivePair]; len(b) != 1 || b[0].ID != active.ID || !b[0].Repaired {
		t.Fatalf("breaches %+v", got)
	}
	if c := mustConv(t, s, pending.ID); c.State != ConvPending {
		t.Errorf("the older one is %s", c.State)
	}
	c := mustConv(t, s, active.ID)
	if c.State != ConvTerminating || c.EndReason != EndDuplicate || !c.needsNotice("w1") || !c.needsNotice("w2") {
		t.Errorf("the younger active one: %s %s", c.State, c.EndReason)
	}
	if got := problemsOf(t, s); len(got) != 0 {
		t.Errorf("doctor after the repair:\n%s", strings.Join(got, "\n"))
	}

	// A younger pending one: it expires, and its initiator is told.
	third := *pending
	third.ID = NewID(PrefixConversation, s.Now().Add(2*time.Second))
	writeRaw(t, s.conversationPath(third.ID), &third)
	if b := repairAll(t, s)[RuleOneLivePair]; len(b) != 1 || b[0].ID != third.ID {
		t.Fatalf("breaches %+v", b)
	}
	if c := mustConv(t, s, third.ID); c.State != ConvExpired || c.EndReason != EndDuplicate || !c.needsNotice("w1") {
		t.Errorf("the younger pending one: %s %s", c.State, c.EndReason)
	}
	if c := mustConv(t, s, pending.ID); c.State != ConvPending {
		t.Errorf("the older one after the second repair: %s", c.State)
	}
}

func TestBreachesWithoutSafeRepair(t *testing.T) {
	s := newTestStore(t)
	parent := mustTask(t, s, NewTask{Title: "parent", AssigneeID: "w1", Status: StatusTodo})
	child := mustTask(t, s, NewTask{Title: "child", ParentID: parent.ID, AssigneeID: "w2", Status: StatusTodo})
	a := mustTask(t, s, NewTask{Title: "a", Status: StatusTodo})
	b := mustTask(t, s, NewTask{Title: "b", Status: StatusTodo, Dependencies: []string{a.ID}})
	// One clone finished the parent after cancelling the child; the other reopened... a
	// child added on the other side stays open. And each side added one dependency.
	writeTaskStatus(t, s, parent.ID, StatusDone)
	ta, _ := s.Task(a.ID)
	ta.Dependencies = []string{b.ID}
	writeRaw(t, s.taskPath(a.ID), ta)
	before, _ := s.Task(parent.ID)

	got := repairAll(t, s)
	if d := got[RuleDoneParent]; len(d) != 1 || d[0].ID != parent.ID || d[0].Repaired || d[0].Repair != "" {
		t.Errorf("done parent: %+v", d)
	}
	if c := got[RuleDependencyCycle]; len(c) != 2 || c[0].Repaired {
		t.Errorf("cycle: %+v", c)
	}
	if after, _ := s.Task(parent.ID); after.Version != before.Version {
		t.Errorf("an unsafe repair was written: version %d → %d", before.Version, after.Version)
	}
	if tk, _ := s.Task(child.ID); tk.Status != StatusTodo {
		t.Errorf("child %s", tk.Status)
	}
	probs := problemsOf(t, s)
	for _, want := range []string{
		".ai-pm/tasks/" + parent.ID + ".json:6: done while sub-task " + child.ID + " is todo; no repair is safe",
		".ai-pm/tasks/" + a.ID + ".json:11: dependency cycle: " + a.ID + " → " + b.ID + " → " + a.ID + "; no repair is safe (which dependency is wrong is a decision): remove one with `aipm task edit " + a.ID + " --remove-dep " + b.ID + "`",
	} {
		if !hasPrefix(probs, want) {
			t.Errorf("doctor lacks %q:\n%s", want, strings.Join(probs, "\n"))
		}
	}
}

// TestNoBreachWhenOneWriterLiftedTheCascade: a task the cascade blocked, moved out of that
// block by hand (blocked → todo) and started while its parent stays blocked, is something
// one store allows (its writers saw the block), so neither doctor nor a repair calls it a
// merge's breach.
func TestNoBreachWhenOneWriterLiftedTheCascade(t *testing.T) {
	s := newTestStore(t)
	parent := mustTask(t, s, NewTask{Title: "parent", AssigneeID: "mgr", Status: StatusTodo})
	child := mustTask(t, s, NewTask{Title: "child", ParentID: parent.ID, AssigneeID: "w1", Status: StatusTodo})
	if _, err := s.SetTaskStatus(human, parent.ID, StatusInProgress, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetTaskStatus(human, parent.ID, StatusBlocked, "waiting"); err != nil {
		t.Fatal(err)
	}
	if tk, _ := s.Task(child.ID); tk.Status != StatusBlocked {
		t.Fatalf("the cascade left the child %s", tk.Status)
	}
	for _, to := range []string{StatusTodo, StatusInProgress} {
		if _, err := s.SetTaskStatus(human, child.ID, to, ""); err != nil {
			t.Skipf("the store refuses %s under a blocked parent (%v): nothing to check", to, err)
		}
	}
	if got := problemsOf(t, s); len(got) != 0 {
		t.Errorf("doctor names a state one store allows:\n%s", strings.Join(got, "\n"))
	}
	if got := repairAll(t, s); len(got[RuleBlockedParent]) != 0 {
		t.Errorf("breaches %+v", got)
	}
}

// TestWorkingTasks: the work in flight is every unfinished task and what it reaches through
// parents (up to the root), dependencies and cascade causes, finished ones included; a
// finished task nothing open reaches is left out, so a look costs the open work only.
func TestWorkingTasks(t *testing.T) {
	s := newTestStore(t)
	root := mustTask(t, s, NewTask{Title: "root", Status: StatusTodo})
	mid := mustTask(t, s, NewTask{Title: "mid", ParentID: root.ID, Status: StatusTodo})
	dep := mustTask(t, s, NewTask{Title: "dep", Status: StatusTodo})
	depParent := mustTask(t, s, NewTask{Title: "dep's parent", Status: StatusTodo})
	depKid := mustTask(t, s, NewTask{Title: "dep's own", ParentID: depParent.ID, Status: StatusTodo})
	mustTask(t, s, NewTask{Title: "open", ParentID: mid.ID, Status: StatusTodo, Dependencies: []string{dep.ID, depKid.ID}})
	old := mustTask(t, s, NewTask{Title: "history", Status: StatusTodo})
	oldKid := mustTask(t, s, NewTask{Title: "history's sub-task", ParentID: old.ID, Status: StatusTodo})
	for _, id := range []string{root.ID, mid.ID, dep.ID, depKid.ID, depParent.ID, oldKid.ID, old.ID} {
		writeTaskStatus(t, s, id, StatusDone)
	}
	got, err := s.WorkingTasks()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tk := range got {
		ids = append(ids, tk.Title)
	}
	slices.Sort(ids)
	want := []string{"dep", "dep's own", "dep's parent", "mid", "open", "root"}
	if !slices.Equal(ids, want) {
		t.Errorf("working tasks %q, want %q", ids, want)
	}
}

// TestRepairSeesDoneAncestorsOfOpenWork: the rules RepairMerged checks on the work in
// flight still find a done ancestor of an open task however deep it lies.
func TestRepairSeesDoneAncestorsOfOpenWork(t *testing.T) {
	s := newTestStore(t)
	top := mustTask(t, s, NewTask{Title: "top", Status: StatusTodo})
	mid := mustTask(t, s, NewTask{Title: "mid", ParentID: top.ID, Status: StatusTodo})
	leaf := mustTask(t, s, NewTask{Title: "leaf", ParentID: mid.ID, Status: StatusTodo})
	writeTaskStatus(t, s, mid.ID, StatusDone)
	writeTaskStatus(t, s, top.ID, StatusDone)
	got := repairAll(t, s)
	var named []string
	for _, b := range got[RuleDoneParent] {
		named = append(named, b.ID)
	}
	slices.Sort(named)
	want := []string{mid.ID, top.ID}
	slices.Sort(want)
	if !slices.Equal(named, want) {
		t.Errorf("done parents of %s: %v, want %v", leaf.ID, named, want)
	}
}

// A task restarted out of its cascade's block (which the rules allow), whose writer was
// killed between the task's file and its history line, is not taken for a start that
// missed the block: without the start's event, the history cannot say where it started
// from (TestKillDuringWrites met it).
func TestRestartWithoutItsEventIsNoBreach(t *testing.T) {
	s := newTestStore(t)
	parent := mustTask(t, s, NewTask{Title: "parent", AssigneeID: "mgr", Status: StatusTodo})
	child := mustTask(t, s, NewTask{Title: "child", ParentID: parent.ID, AssigneeID: "w1", Status: StatusTodo})
	for _, id := range []string{parent.ID, child.ID} {
		if _, err := s.SetTaskStatus(human, id, StatusInProgress, ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.SetTaskStatus(human, parent.ID, StatusBlocked, "hold on"); err != nil {
		t.Fatal(err)
	}
	tk, _ := s.Task(child.ID)
	restarted := s.Now().Add(time.Second)
	tk.Status, tk.StatusChangedAt, tk.Version = StatusInProgress, &restarted, tk.Version+1
	writeRaw(t, s.taskPath(child.ID), tk) // the file written, the event not
	for _, p := range problemsOf(t, s) {
		if strings.Contains(p, "in_progress under blocked task") {
			t.Errorf("a restart without its event taken for a breach: %s", p)
		}
	}
	if got := repairAll(t, s); len(got[RuleBlockedParent]) != 0 {
		t.Errorf("repaired %+v", got)
	}
}
