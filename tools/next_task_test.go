package tools

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aipm/aipm/filestore"
)

// A small world for get_next_action decisions: owner (human) → mgr (manager) → w1, w2.
func members(withWorkers bool) []*filestore.Agent {
	out := []*filestore.Agent{
		{ID: "owner", Type: filestore.AgentHuman, Hierarchy: filestore.HierarchyOwner, Status: filestore.AgentActive},
		{ID: "mgr", Type: filestore.AgentAI, Hierarchy: filestore.HierarchyManager, ParentID: "owner", Status: filestore.AgentActive},
	}
	if withWorkers {
		out = append(out,
			&filestore.Agent{ID: "w1", Type: filestore.AgentAI, Hierarchy: filestore.HierarchyWorker, ParentID: "mgr", Status: filestore.AgentActive},
			&filestore.Agent{ID: "w2", Type: filestore.AgentAI, Hierarchy: filestore.HierarchyWorker, ParentID: "mgr", Status: filestore.AgentActive})
	}
	return out
}

// tk builds a task: id, status, assignee, parent, created_by, then dependencies.
func tk(id, status, assignee, parent, by string, deps ...string) *filestore.Task {
	return &filestore.Task{ID: id, Title: "title of " + id, Status: status, AssigneeID: assignee, ParentID: parent, CreatedBy: by,
		Dependencies: deps, StatusChangedBy: by, Approval: filestore.ApprovalApproved}
}

func changedBy(t *filestore.Task, by, reason string) *filestore.Task {
	t.StatusChangedBy, t.BlockedReason = by, reason
	return t
}

type decideCase struct {
	name     string
	agent    string
	phase    string
	selected string
	baseline string // "now": the fingerprint of the tasks as given
	noStaff  bool
	tasks    []*filestore.Task // the first is the session's task
	dels     []*filestore.Delegation

	action    string
	state     string
	wait      bool
	nextPhase string
	contains  []string // substrings of the instruction
	check     func(t *testing.T, d decision)
}

func (c decideCase) run(t *testing.T) decision {
	t.Helper()
	ms := members(!c.noStaff)
	var agent *filestore.Agent
	for _, m := range ms {
		if m.ID == c.agent {
			agent = m
		}
	}
	se := &filestore.Session{ID: "ses_x", AgentID: c.agent, Purpose: filestore.PurposeTask, TaskID: c.tasks[0].ID, Workflow: c.phase, Selected: c.selected}
	sit, err := newSituation(se, agent, c.tasks, ms)
	if err != nil {
		t.Fatal(err)
	}
	sit.delegations = c.dels
	if c.baseline == "now" {
		se.Baseline = sit.fingerprint()
	} else {
		se.Baseline = c.baseline
	}
	d := sit.decide()
	if d.next.Action != c.action || (c.state != "" && d.next.State != c.state) {
		t.Fatalf("action/state = %s/%s, want %s/%s\ninstruction: %s", d.next.Action, d.next.State, c.action, c.state, d.next.Instruction)
	}
	if d.wait != c.wait {
		t.Errorf("wait = %v, want %v", d.wait, c.wait)
	}
	if c.nextPhase != "" && d.phase != c.nextPhase {
		t.Errorf("phase = %q, want %q", d.phase, c.nextPhase)
	}
	for _, s := range c.contains {
		if !strings.Contains(d.next.Instruction, s) {
			t.Errorf("instruction lacks %q:\n%s", s, d.next.Instruction)
		}
	}
	checkTransitions(t, sit, d.next)
	if c.check != nil {
		c.check(t, d)
	}
	return d
}

var statusCall = regexp.MustCompile(`update_task_status\(task_id="([^"]+)", status="([^"]+)"`)
var selectCall = regexp.MustCompile(`select_action\(action="([^"]+)"\)`)

// checkTransitions fails if an instruction asks for a status change the transition table
// forbids (SPEC §4.3: instructions never ask for a forbidden transition), or offers a
// select_action choice select_action would refuse.
func checkTransitions(t *testing.T, sit *situation, n *nextAction) {
	t.Helper()
	for _, m := range statusCall.FindAllStringSubmatch(n.Instruction, -1) {
		id, to := m[1], m[2]
		var targets []string
		if id == "<id>" { // the instruction applies to every task it lists
			for _, l := range append(append(n.SelfBlocked, n.UserBlocked...), n.OtherBlocked...) {
				targets = append(targets, l.ID)
			}
			for _, l := range n.WaitingSubtasks {
				targets = append(targets, l.ID)
			}
			if strings.Contains(n.Instruction, "You blocked") || strings.Contains(n.Instruction, "by you or your workers") {
				targets = nil
				for _, l := range n.SelfBlocked {
					targets = append(targets, l.ID)
				}
			}
		} else {
			targets = []string{id}
		}
		if len(targets) == 0 {
			t.Errorf("instruction names a status change for no listed task: %s", m[0])
		}
		for _, id := range targets {
			task := sit.all[id]
			if task == nil {
				t.Errorf("instruction names unknown task %s", id)
				continue
			}
			// A backlog task is told to go to todo first.
			from := task.Status
			if from == filestore.StatusBacklog && to == filestore.StatusInProgress && strings.Contains(n.Instruction, `task_id="`+id+`", status="todo"`) {
				from = filestore.StatusTodo
			}
			if !filestore.CanTransition(from, to) {
				t.Errorf("instruction asks for %s: %s → %s, which the table forbids", id, task.Status, to)
			}
		}
	}
	if sel := selectCall.FindAllStringSubmatch(n.Instruction, -1); len(sel) > 0 && len(sit.children) > 0 {
		valid := sit.board().options(len(sit.children))
		for _, m := range sel {
			if !slices.Contains(valid, m[1]) {
				t.Errorf("instruction offers select_action %s; valid now: %v", m[1], valid)
			}
		}
	}
}

const (
	ip  = filestore.StatusInProgress
	td  = filestore.StatusTodo
	bl  = filestore.StatusBacklog
	blk = filestore.StatusBlocked
	dn  = filestore.StatusDone
	cn  = filestore.StatusCancelled
)

func TestWorkerNextAction(t *testing.T) {
	fetched := filestore.WorkflowTaskFetched
	main := func() *filestore.Task { return tk("tsk_m", ip, "w1", "", "mgr") }
	cases := []decideCase{
		{name: "first call asks for get_my_task", agent: "w1", tasks: []*filestore.Task{main()}, action: "get_task", contains: []string{"get_my_task"}},
		{name: "delegated task without sub-tasks is decomposed", agent: "w1", phase: fetched, tasks: []*filestore.Task{main()},
			action: "create_subtasks", nextPhase: filestore.WorkflowCreatingSubtasks, contains: []string{`create_tasks_batch(parent_task_id="tsk_m"`}},
		{name: "a worker that created nothing does it directly", agent: "w1", phase: filestore.WorkflowCreatingSubtasks, tasks: []*filestore.Task{main()},
			action: "work", contains: []string{`report_completed(result="success"`}},
		{name: "own task is never decomposed", agent: "w1", phase: fetched, tasks: []*filestore.Task{tk("tsk_m", ip, "w1", "", "w1")}, action: "work"},
		{name: "first startable sub-task in dependency order", agent: "w1", phase: fetched,
			tasks:  []*filestore.Task{main(), tk("tsk_b", td, "w1", "tsk_m", "w1", "tsk_a"), tk("tsk_a", td, "w1", "tsk_m", "w1")},
			action: "start_subtask", check: func(t *testing.T, d decision) {
				if d.next.NextSubtask.ID != "tsk_a" {
					t.Errorf("next = %s, want tsk_a (tsk_b waits for it)", d.next.NextSubtask.ID)
				}
			}},
		{name: "backlog sub-task goes through todo", agent: "w1", phase: fetched, tasks: []*filestore.Task{main(), tk("tsk_a", bl, "w1", "tsk_m", "w1")},
			action: "start_subtask", contains: []string{`status="todo"), then update_task_status(task_id="tsk_a", status="in_progress")`}},
		{name: "running sub-task is executed; its finish starts the next", agent: "w1", phase: fetched,
			tasks:  []*filestore.Task{main(), tk("tsk_a", ip, "w1", "tsk_m", "w1"), tk("tsk_b", td, "w1", "tsk_m", "w1", "tsk_a")},
			action: "execute_subtask", contains: []string{`update_task_status(task_id="tsk_a", status="done", start_next=true)`},
			check: func(t *testing.T, d decision) {
				if c := d.next.Call; c == nil || c.Arguments["task_id"] != "tsk_a" || c.Arguments["start_next"] != true {
					t.Errorf("call = %+v", c)
				}
			}},
		{name: "the last sub-task's finish starts nothing", agent: "w1", phase: fetched,
			tasks:  []*filestore.Task{main(), tk("tsk_a", dn, "w1", "tsk_m", "w1"), tk("tsk_b", ip, "w1", "tsk_m", "w1", "tsk_a")},
			action: "execute_subtask", contains: []string{`update_task_status(task_id="tsk_b", status="done")`},
			check: func(t *testing.T, d decision) {
				if c := d.next.Call; c == nil || c.Arguments["start_next"] != nil {
					t.Errorf("call = %+v", c)
				}
			}},
		{name: "next after the dependency is done", agent: "w1", phase: fetched,
			tasks:  []*filestore.Task{main(), tk("tsk_a", dn, "w1", "tsk_m", "w1"), tk("tsk_b", td, "w1", "tsk_m", "w1", "tsk_a")},
			action: "start_subtask", contains: []string{`task_id="tsk_b"`}},
		{name: "all finished (cancelled counts)", agent: "w1", phase: fetched,
			tasks:  []*filestore.Task{main(), tk("tsk_a", dn, "w1", "tsk_m", "w1"), tk("tsk_b", cn, "w1", "tsk_m", "w1")},
			action: "report_completion", state: "needs_completion", contains: []string{`report_completed(result="success"`}},
		{name: "self-blocked sub-task can be resumed", agent: "w1", phase: fetched,
			tasks:  []*filestore.Task{main(), changedBy(tk("tsk_a", blk, "w1", "tsk_m", "w1"), "w1", "waiting for input"), tk("tsk_b", td, "w1", "tsk_m", "w1", "tsk_a")},
			action: "review_and_resolve_blocks", check: func(t *testing.T, d decision) {
				if len(d.next.SelfBlocked) != 1 || len(d.next.UserBlocked) != 0 {
					t.Errorf("self=%v user=%v", d.next.SelfBlocked, d.next.UserBlocked)
				}
			}},
		{name: "human-blocked sub-task is left to the human", agent: "w1", phase: fetched,
			tasks:  []*filestore.Task{main(), changedBy(tk("tsk_a", blk, "w1", "tsk_m", "w1"), "owner", "wrong approach")},
			action: "review_and_resolve_blocks", contains: []string{"may not unblock", `report_completed(result="blocked"`}, check: func(t *testing.T, d decision) {
				if len(d.next.UserBlocked) != 1 || d.next.UserBlocked[0].BlockedBy != "owner" {
					t.Errorf("user blocked = %v", d.next.UserBlocked)
				}
			}},
		{name: "dependency on a cancelled task is a deadlock", agent: "w1", phase: fetched,
			tasks:  []*filestore.Task{main(), tk("tsk_x", cn, "w1", "", "owner"), tk("tsk_a", td, "w1", "tsk_m", "w1", "tsk_x")},
			action: "dependency_deadlock", check: func(t *testing.T, d decision) {
				if len(d.next.WaitingSubtasks) != 1 || d.next.WaitingSubtasks[0].WaitingFor[0] != "tsk_x (cancelled)" {
					t.Errorf("waiting = %+v", d.next.WaitingSubtasks)
				}
			}},
		{name: "hand-edited dependency loop is a deadlock", agent: "w1", phase: fetched,
			tasks:  []*filestore.Task{main(), tk("tsk_a", td, "w1", "tsk_m", "w1", "tsk_b"), tk("tsk_b", td, "w1", "tsk_m", "w1", "tsk_a")},
			action: "dependency_deadlock"},
		{name: "dependency someone else is working on is a wait", agent: "w1", phase: fetched,
			tasks:  []*filestore.Task{main(), tk("tsk_x", ip, "w2", "", "mgr"), tk("tsk_a", td, "w1", "tsk_m", "w1", "tsk_x")},
			action: "wait", wait: true},
		{name: "open delegation: wait for it instead of working", agent: "w1", phase: filestore.WorkflowCreatingSubtasks, tasks: []*filestore.Task{main()},
			dels:   []*filestore.Delegation{{ID: "dlg_1", AgentID: "w1", TaskID: "tsk_m", TargetAgentID: "w2", Status: filestore.DelegationProcessing}},
			action: "wait_for_delegation", wait: true},
		{name: "sub-task step waits for its open delegation", agent: "w1", phase: fetched,
			tasks:  []*filestore.Task{main(), tk("tsk_a", ip, "w1", "tsk_m", "w1"), tk("tsk_b", td, "w1", "tsk_m", "w1", "tsk_a")},
			dels:   []*filestore.Delegation{{ID: "dlg_1", AgentID: "w1", TaskID: "tsk_m", TargetAgentID: "w2", Status: filestore.DelegationPending}},
			action: "wait_for_delegation", wait: true},
		{name: "a finished delegation lets the step go on", agent: "w1", phase: fetched,
			tasks:  []*filestore.Task{main(), tk("tsk_a", ip, "w1", "tsk_m", "w1")},
			dels:   []*filestore.Delegation{{ID: "dlg_1", AgentID: "w1", TaskID: "tsk_m", TargetAgentID: "w2", Status: filestore.DelegationCompleted}},
			action: "execute_subtask"},
		{name: "open delegation: sub-tasks go on", agent: "w1", phase: fetched, tasks: []*filestore.Task{main(), tk("tsk_a", td, "w1", "tsk_m", "w1")},
			dels:   []*filestore.Delegation{{ID: "dlg_1", AgentID: "w1", TaskID: "tsk_m", TargetAgentID: "w2", Status: filestore.DelegationPending}},
			action: "start_subtask"},
		{name: "finished delegation: its result comes with the work", agent: "w1", phase: filestore.WorkflowCreatingSubtasks, tasks: []*filestore.Task{main()},
			dels:   []*filestore.Delegation{{ID: "dlg_1", AgentID: "w1", TaskID: "tsk_m", TargetAgentID: "w2", Status: filestore.DelegationCompleted, Result: "w2 says 42"}},
			action: "work", check: func(t *testing.T, d decision) {
				if len(d.next.Delegations) != 1 || d.next.Delegations[0].Result != "w2 says 42" {
					t.Errorf("delegations = %+v", d.next.Delegations)
				}
			}},
		{name: "blocked by the owner stops the worker", agent: "w1", phase: fetched,
			tasks:  []*filestore.Task{changedBy(tk("tsk_m", blk, "w1", "", "mgr"), "owner", "priorities changed")},
			action: "report_completion", state: "task_blocked", contains: []string{"owner", "priorities changed", `result="blocked"`}},
		{name: "cancelled task: exit", agent: "w1", phase: fetched, tasks: []*filestore.Task{changedBy(tk("tsk_m", cn, "w1", "", "mgr"), "owner", "")},
			action: "exit", state: "task_cancelled", contains: []string{"owner", "logout"}},
		{name: "reassigned task: exit, even back in progress", agent: "w1", phase: fetched, tasks: []*filestore.Task{tk("tsk_m", ip, "w2", "", "mgr")},
			action: "exit", state: "task_reassigned", contains: []string{"w2", "logout"}},
		{name: "moved back to todo: exit", agent: "w1", phase: fetched, tasks: []*filestore.Task{changedBy(tk("tsk_m", td, "w1", "", "mgr"), "owner", "")},
			action: "exit", contains: []string{"logout"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t) })
	}
}

func TestManagerNextAction(t *testing.T) {
	fetched := filestore.WorkflowTaskFetched
	main := func() *filestore.Task { return tk("tsk_m", ip, "mgr", "", "owner") }
	gen := func(status, who string) *filestore.Task { return tk("tsk_g", status, who, "tsk_m", "mgr") }
	calc := func(status, who string) *filestore.Task { return tk("tsk_c", status, who, "tsk_m", "mgr", "tsk_g") }
	cases := []decideCase{
		{name: "decompose first", agent: "mgr", phase: fetched, tasks: []*filestore.Task{main()},
			action: "create_subtasks", nextPhase: filestore.WorkflowCreatingSubtasks},
		{name: "dispatch is offered as one call when nothing runs, and never wait", agent: "mgr", phase: fetched,
			tasks:  []*filestore.Task{main(), gen(td, ""), calc(td, "")},
			action: "dispatch_task", contains: []string{`dispatch_subtasks(assignments=[{"assignee_id":"w1","task_id":"tsk_c"},{"assignee_id":"w2","task_id":"tsk_g"}], timeout_seconds=50)`},
			check: func(t *testing.T, d decision) {
				if !slices.Equal(d.next.Options, []string{selectDispatch, selectAdjust}) {
					t.Errorf("options = %v", d.next.Options)
				}
				if len(d.next.AvailableWorkers) != 2 {
					t.Errorf("workers = %v", d.next.AvailableWorkers)
				}
				// The call spelled out, each unassigned sub-task to the least loaded worker in turn.
				c := d.next.Call
				if c == nil || c.Tool != "dispatch_subtasks" {
					t.Fatalf("call = %+v", c)
				}
				if got := callText(c); got != `dispatch_subtasks(assignments=[{"assignee_id":"w1","task_id":"tsk_c"},{"assignee_id":"w2","task_id":"tsk_g"}], timeout_seconds=50)` {
					t.Errorf("call = %s", got)
				}
				// Rows carry real statuses and no sentinel in an id field.
				for _, l := range d.next.DispatchableSubtasks {
					if l.Status != td || l.AssigneeID != "" {
						t.Errorf("row %+v: want status todo and no assignee", l)
					}
				}
			}},
		{name: "an assigned sub-task whose dependencies are done is offered with its real status and assignee", agent: "mgr", phase: fetched,
			tasks:  []*filestore.Task{main(), gen(dn, "w1"), calc(td, "w2")},
			action: "dispatch_task", check: func(t *testing.T, d decision) {
				if len(d.next.DispatchableSubtasks) != 1 || d.next.DispatchableSubtasks[0] != (subtaskLine{ID: "tsk_c", Title: "title of tsk_c", Status: td, AssigneeID: "w2", DepsMet: true}) {
					t.Errorf("rows = %+v", d.next.DispatchableSubtasks)
				}
			}},
		{name: "dispatch lists unassigned sub-tasks and consumes the selection", agent: "mgr", phase: fetched, selected: selectDispatch,
			tasks:  []*filestore.Task{main(), gen(td, ""), calc(td, "")},
			action: "dispatch_task", check: func(t *testing.T, d decision) {
				if len(d.next.DispatchableSubtasks) != 2 || d.selected != "" {
					t.Errorf("dispatchable=%v selected=%q", d.next.DispatchableSubtasks, d.selected)
				}
				for _, l := range d.next.DispatchableSubtasks {
					if l.DepsMet != (l.ID == "tsk_g") {
						t.Errorf("deps_met wrong (only calc waits for gen): %+v", l)
					}
				}
			}},
		{name: "running work with nothing to dispatch: the answer waits", agent: "mgr", phase: fetched,
			tasks:  []*filestore.Task{main(), gen(ip, "w1"), calc(td, "w2")},
			action: "wait", state: "waiting_for_workers", wait: true, check: func(t *testing.T, d decision) {
				if !slices.Equal(d.next.Options, []string{selectAdjust, selectWait}) {
					t.Errorf("options = %v", d.next.Options)
				}
				if d.selected != "" || d.baseline != "tsk_c=todo/w2,tsk_g=in_progress/w1" {
					t.Errorf("selected %q, baseline %q: want none and the board now", d.selected, d.baseline)
				}
			}},
		{name: "the answer's wait goes on through changes that ask nothing of the manager", agent: "mgr", phase: fetched, baseline: "tsk_g=todo/w1,tsk_c=todo/w2",
			tasks:  []*filestore.Task{main(), gen(ip, "w1"), calc(td, "w2")},
			action: "wait", wait: true, check: func(t *testing.T, d decision) {
				if d.baseline != "tsk_g=todo/w1,tsk_c=todo/w2" {
					t.Errorf("baseline %q: the wait's start is kept", d.baseline)
				}
			}},
		{name: "the answer's wait ends when there is something to do, with what changed", agent: "mgr", phase: fetched, baseline: "tsk_g=in_progress/w1,tsk_c=todo/w2",
			tasks:  []*filestore.Task{main(), gen(dn, "w1"), calc(dn, "w2")},
			action: "completion_check", check: func(t *testing.T, d decision) {
				if len(d.next.Changes) != 2 || d.baseline != "" {
					t.Errorf("changes = %v, baseline %q", d.next.Changes, d.baseline)
				}
			}},
		{name: "wait holds while nothing changed", agent: "mgr", phase: fetched, selected: selectWait, baseline: "now",
			tasks:  []*filestore.Task{main(), gen(ip, "w1"), calc(td, "w2")},
			action: "wait", state: "waiting_for_workers", wait: true, check: func(t *testing.T, d decision) {
				if d.selected != selectWait {
					t.Errorf("selection dropped while waiting")
				}
			}},
		{name: "wait ends when a sub-task changed", agent: "mgr", phase: fetched, selected: selectWait, baseline: "tsk_g=in_progress/w1,tsk_c=todo/w2",
			tasks:  []*filestore.Task{main(), gen(dn, "w1"), calc(td, "w2")},
			action: "dispatch_task", check: func(t *testing.T, d decision) {
				if len(d.next.Changes) != 1 || !strings.Contains(d.next.Changes[0], "in_progress → done") {
					t.Errorf("changes = %v", d.next.Changes)
				}
				if d.selected != "" || d.baseline != "" {
					t.Errorf("selection kept after the wait ended")
				}
				if !slices.Contains(d.next.Options, selectDispatch) {
					t.Errorf("calc is ready to start, options = %v", d.next.Options)
				}
			}},
		{name: "a wait chosen with select_action ends at any change, even one that asks nothing", agent: "mgr", phase: fetched, selected: selectWait,
			baseline: "tsk_c=todo/w2,tsk_g=todo/w1",
			tasks:    []*filestore.Task{main(), gen(ip, "w1"), calc(td, "w2")},
			action:   "situational_awareness", check: func(t *testing.T, d decision) {
				if d.wait || d.selected != "" || len(d.next.Changes) != 1 {
					t.Errorf("wait=%v selected=%q changes=%v", d.wait, d.selected, d.next.Changes)
				}
			}},
		{name: "grandchildren count", agent: "mgr", phase: fetched,
			tasks:  []*filestore.Task{main(), gen(ip, "w1"), tk("tsk_g1", ip, "w1", "tsk_g", "w1"), tk("tsk_g2", dn, "w1", "tsk_g", "w1")},
			action: "wait", wait: true, check: func(t *testing.T, d decision) {
				p := d.next.SubtaskProgress
				if p.Total != 3 || p.InProgress != 2 || p.Done != 1 {
					t.Errorf("progress = %+v", p)
				}
			}},
		{name: "all finished: completion check", agent: "mgr", phase: fetched,
			tasks:  []*filestore.Task{main(), gen(dn, "w1"), calc(dn, "w2")},
			action: "completion_check", contains: []string{`report_completed(result="success"`, `select_action(action="adjust")`}, check: func(t *testing.T, d decision) {
				if !slices.Equal(d.next.Options, []string{selectComplete, selectAdjust}) {
					t.Errorf("options = %v: select_action still takes complete", d.next.Options)
				}
			}},
		{name: "only held and nothing running: situational awareness, without an invitation to explore", agent: "mgr", phase: fetched,
			// (what tsk_c waits for is outside the manager's tree: a missing one is dead)
			tasks:  []*filestore.Task{main(), calc(td, "w2"), tk("tsk_g", td, "w1", "", "owner")},
			action: "situational_awareness", check: func(t *testing.T, d decision) {
				if strings.Contains(d.next.Instruction, "list_tasks") {
					t.Errorf("instruction invites exploration: %s", d.next.Instruction)
				}
			}},
		{name: "complete selected: report", agent: "mgr", phase: fetched, selected: selectComplete,
			tasks:  []*filestore.Task{main(), gen(dn, "w1"), calc(cn, "w2")},
			action: "report_completion", contains: []string{`report_completed(result="success"`}},
		{name: "blocked by a worker: manager may put it back to todo", agent: "mgr", phase: fetched,
			tasks:  []*filestore.Task{main(), changedBy(gen(blk, "w1"), "w1", "missing input"), calc(td, "w2")},
			action: "review_and_resolve_blocks", contains: []string{`status="todo"`,
				// every sub-task left, and why: the blocked one and the one waiting for it
				"tsk_g (title of tsk_g) blocked by w1: missing input; tsk_c (title of tsk_c, todo) waits for tsk_g (blocked)"}, check: func(t *testing.T, d decision) {
				if len(d.next.SelfBlocked) != 1 {
					t.Errorf("a subordinate's block counts as the manager's own: %+v", d.next)
				}
			}},
		{name: "blocked by the owner: the manager waits for the owner", agent: "mgr", phase: fetched,
			tasks:  []*filestore.Task{main(), changedBy(gen(blk, "w1"), "owner", "hold"), calc(td, "w2")},
			action: "wait", state: "waiting_for_unblock", wait: true, contains: []string{"do not unblock them", "do not report your task blocked",
				"tsk_g (title of tsk_g) blocked by owner: hold; tsk_c (title of tsk_c, todo) waits for tsk_g (blocked)"},
			check: func(t *testing.T, d decision) {
				if !d.wait || len(d.next.UserBlocked) != 1 || len(d.next.Subtasks) != 2 {
					t.Errorf("wait=%v user=%v subtasks=%v", d.wait, d.next.UserBlocked, d.next.Subtasks)
				}
			}},
		{name: "a dependency on a cancelled task is named, with the ways out", agent: "mgr", phase: fetched,
			tasks:  []*filestore.Task{main(), gen(cn, "w1"), calc(td, "w2")},
			action: "resolve_dead_dependencies", state: "dead_dependencies",
			contains: []string{"tsk_c (title of tsk_c) depends on tsk_g, which is cancelled", `update_task_dependencies(task_id="tsk_c", remove=["tsk_g"])`, "cancel the sub-task"},
			check: func(t *testing.T, d decision) {
				if len(d.next.DeadDependencies) != 1 || d.next.DeadDependencies[0].DependsOnStatus != "cancelled" {
					t.Errorf("dead = %+v", d.next.DeadDependencies)
				}
			}},
		{name: "a rejected request is not waited for", agent: "mgr", phase: fetched,
			tasks:  []*filestore.Task{main(), rejected(gen(td, "w1"), "owner", "not now")},
			action: "review_and_resolve_blocks", contains: []string{"tsk_g (title of tsk_g) rejected: not now", `report_completed(result="blocked"`}},
		{name: "no workers", agent: "mgr", phase: fetched, noStaff: true,
			tasks:  []*filestore.Task{main(), gen(td, "")},
			action: "no_available_workers", contains: []string{`report_completed(result="blocked"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t) })
	}
}

func rejected(t *filestore.Task, by, reason string) *filestore.Task {
	t.Approval, t.ApprovedBy, t.RejectedReason = filestore.ApprovalRejected, by, reason
	return t
}

// A manager's board counts each worker's running tasks across the project, from the
// index: work outside the manager's task counts too.
func TestLoadCountsRunningWorkEverywhere(t *testing.T) {
	st, err := filestore.Init(t.TempDir(), filestore.InitOptions{OwnerID: "alice"}, filestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	owner := filestore.Actor{ID: "alice", Via: filestore.ViaCLI}
	if _, _, err := st.AddAgent(owner, filestore.NewAgent{ID: "m", ParentID: "alice", Hierarchy: filestore.HierarchyManager}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.AddAgent(owner, filestore.NewAgent{ID: "w1", ParentID: "m", MaxParallelTasks: 3}); err != nil {
		t.Fatal(err)
	}
	start := func(title, who string) *filestore.Task {
		tk, err := st.CreateTask(owner, filestore.NewTask{Title: title, Status: filestore.StatusTodo, AssigneeID: who})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.SetTaskStatus(owner, tk.ID, filestore.StatusInProgress, ""); err != nil {
			t.Fatal(err)
		}
		return tk
	}
	mine := start("plan", "m")
	start("elsewhere", "w1")
	start("also elsewhere", "w1")
	a, err := st.Agent("m")
	if err != nil {
		t.Fatal(err)
	}
	sit, err := loadSituation(st, st.Subtree, &filestore.Session{ID: "ses_x", AgentID: "m", Purpose: filestore.PurposeTask, TaskID: mine.ID}, a, "en")
	if err != nil {
		t.Fatal(err)
	}
	b := sit.board()
	if len(b.workers) != 1 || b.workers[0].ID != "w1" || b.workers[0].ActiveTasks != 2 {
		t.Errorf("workers on the board: %+v, want w1 with 2 active tasks", b.workers)
	}
}

// A manager that does what each answer says — the next_action a result carries, else
// get_next_action — dispatches two sub-tasks in five calls (2.5 a sub-task): authenticate
// (its answer carries the first step), get_my_task, create_tasks_batch, the
// dispatch_subtasks the answer spells out (which waits for the workers), and
// report_completed. No answer asks for a get_next_action the work does not need.
func TestManagerFollowingTheAnswersReachesTheFloor(t *testing.T) {
	_, st := newTestServer(t)
	owner := filestore.Actor{ID: "alice", Via: filestore.ViaCLI}
	for _, a := range []filestore.NewAgent{{ID: "m1", ParentID: "alice", Hierarchy: filestore.HierarchyManager}, {ID: "w2", ParentID: "m1"}, {ID: "w3", ParentID: "m1"}} {
		if _, _, err := st.AddAgent(owner, a); err != nil {
			t.Fatal(err)
		}
	}
	tk, err := st.CreateTask(owner, filestore.NewTask{Title: "Write hello twice", Status: filestore.StatusTodo, AssigneeID: "m1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetTaskStatus(owner, tk.ID, filestore.StatusInProgress, ""); err != nil {
		t.Fatal(err)
	}
	_, ticket, err := st.CreateSpawn(filestore.NewSpawn{AgentID: "m1", Purpose: filestore.PurposeTask, TaskID: tk.ID, AIType: "codex"})
	if err != nil {
		t.Fatal(err)
	}
	lc := newListClient(t, New(st, Options{Logf: t.Logf, SpawnTicket: ticket}), true)
	// the workers: each sub-task m1 starts is done a moment later
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			kids, _ := st.Tasks(filestore.TaskFilter{ParentID: tk.ID, Status: filestore.StatusInProgress})
			for _, k := range kids {
				// a failure leaves the sub-task running, and the test fails with no report
				st.SetTaskStatus(filestore.Actor{ID: k.AssigneeID, Via: filestore.ViaTool}, k.ID, filestore.StatusDone, "")
			}
		}
	}()
	var calls []string
	step := func(name string, args map[string]any) map[string]any {
		calls = append(calls, name)
		ans := lc.call(name, args)
		var m map[string]any
		if err := json.Unmarshal([]byte(ans), &m); err != nil || m["error"] != nil {
			t.Fatalf("%s: %s", name, ans)
		}
		return m
	}
	ans := step("authenticate", map[string]any{"agent_id": "m1"})
	for len(calls) < 10 {
		next, _ := ans["next_action"].(map[string]any)
		if next == nil {
			if ans["action"] == nil {
				ans = step("get_next_action", nil)
				continue
			}
			next = ans
		}
		switch action, _ := next["action"].(string); action {
		case "get_task":
			ans = step("get_my_task", nil)
		case "create_subtasks":
			ans = step("create_tasks_batch", map[string]any{"parent_task_id": tk.ID, "tasks": []any{
				map[string]any{"local_id": "a", "title": "first"}, map[string]any{"local_id": "b", "title": "second"}}})
		case "dispatch_task":
			call := next["call"].(map[string]any)
			ans = step(call["tool"].(string), call["arguments"].(map[string]any))
		case "wait":
			ans = step("get_next_action", nil)
		case "completion_check", "report_completion":
			step("report_completed", map[string]any{"result": "success", "summary": "both written"})
			if want := []string{"authenticate", "get_my_task", "create_tasks_batch", "dispatch_subtasks", "report_completed"}; !slices.Equal(calls, want) {
				t.Errorf("calls %v, want %v", calls, want)
			}
			return
		default:
			t.Fatalf("unexpected action %q after %v", action, calls)
		}
	}
	t.Fatalf("no report after %v", calls)
}
