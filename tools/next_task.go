package tools

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/aipm/aipm/filestore"
	"github.com/aipm/aipm/filestore/msg"
)

// nextAction is get_next_action's answer: what to do now (action), why (state), a
// plain-language instruction, and the facts the instruction refers to.
type nextAction struct {
	Action      string `json:"action"`
	State       string `json:"state"`
	Instruction string `json:"instruction"`
	Reason      string `json:"reason,omitempty"`

	Task           *taskBrief `json:"task,omitempty"`
	CurrentSubtask *taskBrief `json:"current_subtask,omitempty"`
	NextSubtask    *taskBrief `json:"next_subtask,omitempty"`
	Progress       *progress  `json:"progress,omitempty"`
	// SubtaskProgress is the manager's count: the whole sub-tree, grandchildren included.
	SubtaskProgress *progress `json:"subtask_progress,omitempty"`

	Subtasks             []subtaskLine `json:"subtasks,omitempty"`
	CompletedSubtasks    []taskBrief   `json:"completed_subtasks,omitempty"`
	DispatchableSubtasks []subtaskLine `json:"dispatchable_subtasks,omitempty"`
	InProgressSubtasks   []subtaskLine `json:"in_progress_subtasks,omitempty"`
	WaitingSubtasks      []waitingLine `json:"waiting_subtasks,omitempty"`
	// DeadDependencies are sub-tasks waiting for a task that will never be done.
	DeadDependencies []deadDependency `json:"dead_dependencies,omitempty"`
	SelfBlocked      []blockedLine    `json:"self_blocked_subtasks,omitempty"`
	UserBlocked      []blockedLine    `json:"user_blocked_subtasks,omitempty"`
	OtherBlocked     []blockedLine    `json:"other_blocked_subtasks,omitempty"`
	AvailableWorkers []workerLine     `json:"available_workers,omitempty"`
	// Changes lists what happened to the sub-tasks while a manager waited.
	Changes []string `json:"changes,omitempty"`
	// Options are the select_action choices valid now.
	Options []string `json:"options,omitempty"`
	// Delegations are the session task's delegations to the agent's chat session, with
	// their results once finished.
	Delegations []delegationView `json:"delegations,omitempty"`
	// Call is the one call the instruction asks for next, with its literal arguments,
	// when they are known: the agent may make it as it stands.
	Call *nextCall `json:"call,omitempty"`
}

// nextCall is a tool call spelled out: its name and arguments.
type nextCall struct {
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments"`
}

type taskBrief struct {
	ID           string   `json:"id"`
	Title        string   `json:"title"`
	Description  string   `json:"description,omitempty"`
	Status       string   `json:"status"`
	AssigneeID   string   `json:"assignee_id,omitempty"`
	Dependencies []string `json:"dependencies,omitempty"`
	Summary      string   `json:"completion_summary,omitempty"`
}

func brief(t *filestore.Task) *taskBrief {
	return &taskBrief{ID: t.ID, Title: t.Title, Description: t.Description, Status: t.Status, AssigneeID: t.AssigneeID,
		Dependencies: t.Dependencies, Summary: t.CompletionSummary}
}

type subtaskLine struct {
	ID         string `json:"id"`
	Title      string `json:"title"`
	Status     string `json:"status"`
	AssigneeID string `json:"assignee_id,omitempty"` // absent when nobody has it
	DepsMet    bool   `json:"deps_met"`
}

type waitingLine struct {
	ID         string   `json:"id"`
	Title      string   `json:"title"`
	WaitingFor []string `json:"waiting_for"` // "id (status)"
}

// deadDependency is a sub-task that depends on a cancelled (or missing) task.
type deadDependency struct {
	ID              string `json:"id"`
	Title           string `json:"title"`
	DependsOn       string `json:"depends_on"`
	DependsOnStatus string `json:"depends_on_status"` // cancelled, or missing
}

type blockedLine struct {
	ID            string `json:"id"`
	Title         string `json:"title"`
	BlockedReason string `json:"blocked_reason,omitempty"`
	BlockedBy     string `json:"blocked_by,omitempty"` // absent when nobody is recorded
}

type workerLine struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Role        string `json:"role"`
	ActiveTasks int    `json:"active_tasks"` // tasks in progress assigned to it
}

// progress counts tasks by status.
type progress struct {
	Total      int `json:"total"`
	Done       int `json:"done"`
	InProgress int `json:"in_progress"`
	Todo       int `json:"todo"`
	Backlog    int `json:"backlog"`
	Blocked    int `json:"blocked"`
	Cancelled  int `json:"cancelled"`
}

func count(ts []*filestore.Task) *progress {
	p := &progress{Total: len(ts)}
	for _, t := range ts {
		switch t.Status {
		case filestore.StatusDone:
			p.Done++
		case filestore.StatusInProgress:
			p.InProgress++
		case filestore.StatusTodo:
			p.Todo++
		case filestore.StatusBacklog:
			p.Backlog++
		case filestore.StatusBlocked:
			p.Blocked++
		case filestore.StatusCancelled:
			p.Cancelled++
		}
	}
	return p
}

// Manager selections (select_action).
const (
	selectDispatch = "dispatch_task"
	selectAdjust   = "adjust"
	selectWait     = "wait"
	selectComplete = "complete"
)

// situation is everything a task session's next step is decided from, read once per
// evaluation.
type situation struct {
	agent   *filestore.Agent
	session *filestore.Session
	main    *filestore.Task
	all     map[string]*filestore.Task
	agents  map[string]*filestore.Agent

	children []*filestore.Task // direct sub-tasks of main, oldest first
	subtree  []*filestore.Task // every descendant of main
	// delegations are the agent's delegations for the session's task, oldest first.
	delegations []*filestore.Delegation
	// lang is the language of the instructions (settings.language).
	lang string
	// load counts every agent's in-progress tasks.
	load map[string]int
}

// text is the catalog's text for key in the situation's language.
func (s *situation) text(key string, args ...any) string {
	return msg.Text(s.lang, key, args...)
}

// loadSituation reads what the session's decisions look at, and no more: its task and
// sub-tree, the tasks they depend on, and the tasks in progress (the workers' load). The
// sub-tree comes from subtree (a Server's Server.subtreeOf, or Store.Subtree): the tasks
// it hands out may be shared, and are only read.
func loadSituation(st *filestore.Store, subtree func(root string) ([]*filestore.Task, error), se *filestore.Session, a *filestore.Agent, lang string) (*situation, error) {
	main, err := st.Task(se.TaskID)
	if err != nil {
		return nil, err
	}
	sub, err := subtree(main.ID)
	if err != nil {
		return nil, err
	}
	// Every agent's running work is counted from the index, not read.
	load, err := st.InProgressByAssignee()
	if err != nil {
		return nil, err
	}
	tasks := append([]*filestore.Task{main}, sub...)
	var deps []string
	for _, t := range tasks {
		deps = append(deps, t.Dependencies...)
	}
	more, err := st.TasksByID(deps)
	if err != nil {
		return nil, err
	}
	tasks = append(tasks, more...)
	members, err := st.Agents()
	if err != nil {
		return nil, err
	}
	s, err := newSituation(se, a, tasks, members)
	if err != nil {
		return nil, err
	}
	s.lang, s.load = lang, load
	s.delegations, err = st.Delegations(filestore.DelegationFilter{AgentID: a.ID, TaskID: se.TaskID})
	return s, err
}

// newSituation indexes the tasks and members for the session's decisions.
func newSituation(se *filestore.Session, a *filestore.Agent, tasks []*filestore.Task, members []*filestore.Agent) (*situation, error) {
	s := &situation{agent: a, session: se, all: make(map[string]*filestore.Task, len(tasks)),
		agents: make(map[string]*filestore.Agent, len(members))}
	for _, t := range tasks {
		if s.all[t.ID] == nil {
			s.all[t.ID] = t
		}
	}
	for _, m := range members {
		s.agents[m.ID] = m
	}
	// The load of what is at hand; loadSituation counts the whole project's.
	s.load = map[string]int{}
	for _, t := range s.all {
		if t.Status == filestore.StatusInProgress {
			s.load[t.AssigneeID]++
		}
	}
	s.main = s.all[se.TaskID]
	if s.main == nil {
		return nil, fmt.Errorf("task %s of session %s not found", se.TaskID, se.ID)
	}
	byParent := map[string][]*filestore.Task{}
	for _, t := range s.all {
		if t.ParentID != "" {
			byParent[t.ParentID] = append(byParent[t.ParentID], t)
		}
	}
	for _, list := range byParent {
		slices.SortFunc(list, func(a, b *filestore.Task) int { return strings.Compare(a.ID, b.ID) })
	}
	s.children = byParent[s.main.ID]
	s.subtree = make([]*filestore.Task, 0, len(s.all)-1)
	queue := []string{s.main.ID}
	for len(queue) > 0 {
		for _, c := range byParent[queue[0]] {
			s.subtree = append(s.subtree, c)
			queue = append(queue, c.ID)
		}
		queue = queue[1:]
	}
	return s, nil
}

// decision is one evaluation's outcome: the answer, the session's workflow state after it,
// and whether the honest answer is "wait" (the caller long-polls and evaluates again).
type decision struct {
	next                      *nextAction
	phase, selected, baseline string
	wait                      bool
}

func (s *situation) keep(n *nextAction) decision {
	return decision{next: n, phase: s.session.Workflow, selected: s.session.Selected, baseline: s.session.Baseline}
}

// decide is the task session's get_next_action (SPEC §6.1–6.2). The main task is always
// the session's own task, so the answer is deterministic.
func (s *situation) decide() decision {
	m := s.main
	if d, ok := s.mainNotRunning(); ok {
		return d
	}
	if s.session.Workflow == "" {
		return s.keep(&nextAction{Action: "get_task", State: "needs_task", Task: brief(m),
			Instruction: s.text("next.get_task")})
	}
	if s.agent.Hierarchy == filestore.HierarchyManager {
		return s.manager()
	}
	return s.worker()
}

// mainNotRunning answers when someone else moved the session's task out of in_progress,
// or gave it to another agent: a task no longer the agent's (reassigned or cancelled)
// gets exit, since every task-changing tool now refuses the session.
func (s *situation) mainNotRunning() (decision, bool) {
	m := s.main
	by := m.StatusChangedBy
	if m.AssigneeID != s.agent.ID {
		return s.keep(&nextAction{Action: "exit", State: "task_reassigned", Task: brief(m),
			Instruction: s.text("next.task_reassigned", m.ID, orAssignee(s.lang, m.AssigneeID))}), true
	}
	switch m.Status {
	case filestore.StatusInProgress:
		return decision{}, false
	case filestore.StatusBlocked:
		return s.keep(&nextAction{Action: "report_completion", State: "task_blocked", Task: brief(m), Reason: m.BlockedReason,
			Instruction: s.text("next.task_blocked", m.ID, by, s.orNone(m.BlockedReason))}), true
	case filestore.StatusCancelled:
		return s.keep(&nextAction{Action: "exit", State: "task_cancelled", Task: brief(m),
			Instruction: s.text("next.task_cancelled", m.ID, by)}), true
	case filestore.StatusDone:
		return s.keep(&nextAction{Action: "report_completion", State: "task_done", Task: brief(m),
			Instruction: s.text("next.task_done", m.ID, by)}), true
	default:
		return s.keep(&nextAction{Action: "exit", State: "task_not_in_progress", Task: brief(m),
			Instruction: s.text("next.task_not_in_progress", m.ID, m.Status, by)}), true
	}
}

// orNone is a reason, or says that none was given.
func orNone(lang, reason string) string {
	if reason == "" {
		return msg.Text(lang, "next.no_reason")
	}
	return reason
}

func (s *situation) orNone(reason string) string { return orNone(s.lang, reason) }

func pending(t *filestore.Task) bool {
	return t.Status == filestore.StatusTodo || t.Status == filestore.StatusBacklog
}

// depsMet reports whether every dependency of t is done.
func (s *situation) depsMet(t *filestore.Task) bool {
	for _, d := range t.Dependencies {
		if !filestore.DependencyMet(s.all[d]) {
			return false
		}
	}
	return true
}

// unmet lists t's dependencies that are not done, as "id (status)".
func (s *situation) unmet(t *filestore.Task) []string {
	var out []string
	for _, d := range t.Dependencies {
		dt := s.all[d]
		switch {
		case dt == nil:
			out = append(out, s.text("next.dep_missing", d))
		case !filestore.DependencyMet(dt):
			out = append(out, filestore.DependencyState(d, dt))
		}
	}
	return out
}

// startable: a pending, approved task whose dependencies are done.
func (s *situation) startable(t *filestore.Task) bool {
	return pending(t) && t.Approval != filestore.ApprovalPending && t.Approval != filestore.ApprovalRejected && s.depsMet(t)
}

// startSteps is the allowed way from t's status to in_progress, as tool calls.
func (s *situation) startSteps(t *filestore.Task) string {
	call := fmt.Sprintf("update_task_status(task_id=%q, status=\"in_progress\")", t.ID)
	if t.Status == filestore.StatusBacklog {
		return s.text("next.start_from_backlog", t.ID, call)
	}
	return call
}

// blockedBy sorts blocked sub-tasks by who blocked them: the agent itself (or, for a
// manager, its subordinates), a human, or someone else.
func (s *situation) blockedBy(ts []*filestore.Task) (self, user, other []blockedLine) {
	for _, t := range ts {
		by := t.StatusChangedBy
		line := blockedLine{ID: t.ID, Title: t.Title, BlockedReason: t.BlockedReason, BlockedBy: by}
		if t.Status != filestore.StatusBlocked { // a rejected request
			line.BlockedReason = s.text("next.request_rejected", s.orNone(t.RejectedReason))
			line.BlockedBy = t.ApprovedBy
			other = append(other, line)
			continue
		}
		a := s.agents[by]
		switch {
		case by == "" || by == s.agent.ID:
			self = append(self, line)
		case a != nil && a.Type == filestore.AgentHuman:
			user = append(user, line)
		case a != nil && a.ParentID == s.agent.ID && s.agent.Hierarchy == filestore.HierarchyManager:
			self = append(self, line)
		default:
			other = append(other, line)
		}
	}
	return self, user, other
}

func ids(ts []*filestore.Task) string {
	var out []string
	for _, t := range ts {
		out = append(out, t.ID)
	}
	return strings.Join(out, ", ")
}

// worker is the worker flow (SPEC §6.1): get_task → create_subtasks → start_subtask /
// execute_subtask / work → review_and_resolve_blocks / dependency_deadlock →
// report_completion, and wait_for_delegation while a delegation it handed to its chat
// session is open and the step in progress (or the report) waits for it.
func (s *situation) worker() decision {
	d := s.workerFlow()
	var views []delegationView
	open := 0
	for _, dl := range s.delegations {
		views = append(views, viewDelegation(dl))
		if !dl.Finished() {
			open++
		}
	}
	// Mid-step (execute_subtask, work) or about to report, an open delegation is what the
	// agent waits for; starting the next sub-task needs no answer from it.
	act := d.next.Action
	if act != "work" && act != "execute_subtask" && act != "report_completion" && !d.wait {
		return d
	}
	if open > 0 {
		w := s.keep(&nextAction{Action: "wait_for_delegation", State: "waiting_for_delegation", Task: brief(s.main), Delegations: views,
			Instruction: s.text("next.worker.delegation")})
		w.wait = true
		return w
	}
	d.next.Delegations = views
	return d
}

func (s *situation) workerFlow() decision {
	m, me := s.main, s.agent.ID
	if len(s.children) == 0 {
		delegated := m.CreatedBy != me
		if delegated && s.session.Workflow == filestore.WorkflowTaskFetched {
			d := s.keep(&nextAction{Action: "create_subtasks", State: "needs_subtask_creation", Task: brief(m),
				Instruction: s.text("next.worker.create_subtasks", m.ID)})
			d.phase = filestore.WorkflowCreatingSubtasks
			return d
		}
		return s.keep(&nextAction{Action: "work", State: "execute_task", Task: brief(m),
			Instruction: s.text("next.worker.work", m.ID)})
	}
	var finished, running, mine, blocked, others []*filestore.Task
	for _, t := range s.children {
		switch {
		case filestore.Finished(t.Status):
			finished = append(finished, t)
		case t.Status == filestore.StatusInProgress && t.AssigneeID == me:
			running = append(running, t)
		case t.Status == filestore.StatusBlocked, pending(t) && t.Approval == filestore.ApprovalRejected:
			blocked = append(blocked, t)
		case pending(t) && t.AssigneeID == me:
			mine = append(mine, t)
		default: // running or pending for someone else, or awaiting approval
			others = append(others, t)
		}
	}
	prog := count(s.subtree)
	// The finished sub-tasks are listed only in the answers that report on them: a task
	// with hundreds of them decides every other step without copying them out.
	completed := func() []taskBrief {
		var out []taskBrief
		for _, t := range finished {
			out = append(out, *brief(t))
		}
		return out
	}
	if len(finished) == len(s.children) {
		return s.keep(&nextAction{Action: "report_completion", State: "needs_completion", Task: brief(m), Progress: prog, CompletedSubtasks: completed(),
			Instruction: s.text("next.worker.report_completion", m.ID)})
	}
	if len(running) > 0 {
		t := running[0]
		n := &nextAction{Action: "execute_subtask", State: "executing_subtask", Task: brief(m), CurrentSubtask: brief(t), Progress: prog,
			Instruction: s.text("next.worker.execute_subtask", t.ID, t.Title, t.ID, t.ID),
			Call:        &nextCall{Tool: "update_task_status", Arguments: map[string]any{"task_id": t.ID, "status": filestore.StatusDone}}}
		if len(running) == 1 && len(mine) > 0 {
			// Another of its own sub-tasks waits: finishing this one can start it.
			n.Instruction = s.text("next.worker.execute_subtask.start_next", t.ID, t.Title, t.ID, t.ID)
			n.Call.Arguments["start_next"] = true
		}
		return s.keep(n)
	}
	for _, t := range mine {
		if s.startable(t) {
			first := filestore.StatusInProgress
			if t.Status == filestore.StatusBacklog {
				first = filestore.StatusTodo
			}
			return s.keep(&nextAction{Action: "start_subtask", State: "start_next_subtask", Task: brief(m), NextSubtask: brief(t), Progress: prog,
				Instruction: s.text("next.worker.start_subtask", t.ID, t.Title, s.startSteps(t)),
				Call:        &nextCall{Tool: "update_task_status", Arguments: map[string]any{"task_id": t.ID, "status": first}}})
		}
	}
	if len(blocked) > 0 && !s.othersCanProgress(mine, others) {
		self, user, other := s.blockedBy(blocked)
		n := &nextAction{Action: "review_and_resolve_blocks", State: "needs_review", Task: brief(m), Progress: prog,
			SelfBlocked: self, UserBlocked: user, OtherBlocked: other, CompletedSubtasks: completed()}
		var b strings.Builder
		b.WriteString(s.text("next.worker.blocks"))
		if len(self) > 0 {
			b.WriteString(s.text("next.worker.blocks.self", blockedIDs(self)))
		}
		if len(user)+len(other) > 0 {
			b.WriteString(s.text("next.worker.blocks.others", blockedIDs(append(user, other...))))
		}
		b.WriteString(s.text("next.worker.blocks.give_up"))
		n.Instruction = b.String()
		return s.keep(n)
	}
	if len(mine) > 0 && !s.othersCanProgress(mine, others) {
		n := &nextAction{Action: "dependency_deadlock", State: "dependency_deadlock", Task: brief(m), Progress: prog, CompletedSubtasks: completed()}
		for _, t := range mine {
			n.WaitingSubtasks = append(n.WaitingSubtasks, waitingLine{ID: t.ID, Title: t.Title, WaitingFor: s.unmet(t)})
		}
		n.Instruction = s.text("next.worker.deadlock")
		return s.keep(n)
	}
	n := &nextAction{Action: "wait", State: "waiting_for_dependencies", Task: brief(m), Progress: prog,
		Instruction: s.text("next.worker.wait")}
	for _, t := range append(append([]*filestore.Task{}, mine...), others...) {
		n.WaitingSubtasks = append(n.WaitingSubtasks, waitingLine{ID: t.ID, Title: t.Title, WaitingFor: s.waitingFor(t)})
	}
	d := s.keep(n)
	d.wait = true
	return d
}

func blockedIDs(ls []blockedLine) string {
	var out []string
	for _, l := range ls {
		out = append(out, l.ID)
	}
	return strings.Join(out, ", ")
}

// waitingFor says what a sub-task that is not the worker's to run waits for.
func (s *situation) waitingFor(t *filestore.Task) []string {
	switch {
	case t.Approval == filestore.ApprovalPending:
		return []string{s.text("next.waiting.approval")}
	case t.Status == filestore.StatusInProgress:
		return []string{s.text("next.waiting.working", t.AssigneeID)}
	case t.AssigneeID != s.agent.ID && !s.depsMet(t):
		return s.unmet(t)
	case t.AssigneeID != s.agent.ID:
		return []string{s.text("next.waiting.to_start", orAssignee(s.lang, t.AssigneeID))}
	}
	return s.unmet(t)
}

// orAssignee is an assignee's id, or a word for the one a task does not have yet.
func orAssignee(lang, id string) string {
	if id == "" {
		return msg.Text(lang, "next.waiting.assignee")
	}
	return id
}

// othersCanProgress reports whether anyone else's work can still unblock the worker's
// pending sub-tasks: a sub-task of someone else that is running or waiting for approval,
// or a dependency that somebody is working on.
func (s *situation) othersCanProgress(mine, others []*filestore.Task) bool {
	for _, t := range others {
		if t.Status == filestore.StatusInProgress || t.Approval == filestore.ApprovalPending || (pending(t) && t.AssigneeID != "") {
			return true
		}
	}
	for _, t := range mine {
		if t.Approval == filestore.ApprovalPending {
			return true
		}
		for _, d := range t.Dependencies {
			dt := s.all[d]
			if dt != nil && dt.LandingInFlight() {
				return true // the merge queue lands it
			}
			if dt == nil || dt.Status == filestore.StatusDone {
				continue
			}
			if dt.Status == filestore.StatusInProgress || (pending(dt) && dt.AssigneeID != "" && dt.AssigneeID != s.agent.ID) {
				return true
			}
		}
	}
	return false
}

// board is a manager's view of its direct sub-tasks.
type board struct {
	finished, running, blocked, unassigned, ready, held []*filestore.Task
	workers                                             []workerLine
	subtreeRunning                                      int
}

func (s *situation) board() *board {
	b := &board{}
	me := s.agent.ID
	for _, t := range s.children {
		switch {
		case filestore.Finished(t.Status):
			b.finished = append(b.finished, t)
		case t.Status == filestore.StatusInProgress:
			b.running = append(b.running, t)
		case t.Status == filestore.StatusBlocked, t.Approval == filestore.ApprovalRejected:
			b.blocked = append(b.blocked, t)
		case t.AssigneeID == "" || t.AssigneeID == me:
			b.unassigned = append(b.unassigned, t)
		case s.startable(t):
			b.ready = append(b.ready, t)
		default:
			b.held = append(b.held, t) // assigned, waiting for dependencies or approval
		}
	}
	for _, t := range s.subtree {
		// A sub-task whose code the merge queue is landing still moves: its dependents
		// start once it lands.
		if t.Status == filestore.StatusInProgress || t.LandingInFlight() {
			b.subtreeRunning++
		}
	}
	var subs []*filestore.Agent
	for _, a := range s.agents {
		if a.ParentID == me && a.Type == filestore.AgentAI && a.Status == filestore.AgentActive {
			subs = append(subs, a)
		}
	}
	sort.Slice(subs, func(i, j int) bool { return subs[i].ID < subs[j].ID })
	for _, a := range subs {
		b.workers = append(b.workers, workerLine{ID: a.ID, Name: a.Name, Role: a.Role, ActiveTasks: s.load[a.ID]})
	}
	return b
}

// options are the select_action choices that are valid on this board, so an instruction
// never offers one select_action would refuse.
func (b *board) options(total int) []string {
	if len(b.finished) == total {
		return []string{selectComplete, selectAdjust}
	}
	var out []string
	if b.dispatchable() > 0 {
		out = append(out, selectDispatch)
	}
	out = append(out, selectAdjust)
	if b.subtreeRunning > 0 {
		out = append(out, selectWait)
	}
	return out
}

func (b *board) dispatchable() int {
	if len(b.workers) == 0 {
		return len(b.ready)
	}
	return len(b.unassigned) + len(b.ready)
}

// fingerprint is the state of the direct sub-tasks a manager's wait compares against.
func (s *situation) fingerprint() string {
	var parts []string
	for _, t := range s.children {
		parts = append(parts, t.ID+"="+t.Status+"/"+t.AssigneeID)
	}
	return strings.Join(parts, ",")
}

func (s *situation) lines(ts []*filestore.Task) []subtaskLine {
	out := []subtaskLine{}
	for _, t := range ts {
		a := t.AssigneeID
		if a == s.agent.ID {
			a = "" // the manager's own sub-task: nobody runs it until it is dispatched
		}
		out = append(out, subtaskLine{ID: t.ID, Title: t.Title, Status: t.Status, AssigneeID: a, DepsMet: s.depsMet(t)})
	}
	return out
}

// manager is the manager flow (SPEC §6.2): create_subtasks → situational_awareness →
// select_action → dispatch_task | adjust | wait | completion_check → report_completion,
// with review_and_resolve_blocks and no_available_workers.
func (s *situation) manager() decision {
	m := s.main
	if len(s.children) == 0 {
		d := s.keep(&nextAction{Action: "create_subtasks", State: "needs_subtask_creation", Task: brief(m),
			Instruction: s.text("next.manager.create_subtasks", m.ID)})
		d.phase = filestore.WorkflowCreatingSubtasks
		return d
	}
	b := s.board()
	prog := count(s.subtree)
	sel := s.session.Selected
	if sel == selectWait {
		if s.fingerprint() != s.session.Baseline || len(b.finished) == len(s.children) {
			d := s.withSelection("", "").manager()
			if d.wait && d.next.State != "waiting_for_unblock" {
				// A wait the manager chose ends at any change, and says what it was. (A
				// wait for a block someone else holds is said as such.)
				d = s.keep(s.awareness(b, prog))
				d.selected, d.baseline = "", ""
			}
			d.next.Changes = s.changes()
			// The wait ended: say what changed at once, even when the answer is to wait
			// again (for a block someone else holds); the next call waits.
			d.wait = false
			return d
		}
		n := &nextAction{Action: "wait", State: "waiting_for_workers", Task: brief(m), SubtaskProgress: prog, InProgressSubtasks: s.lines(b.running),
			Instruction: s.text("next.manager.wait")}
		d := s.keep(n)
		d.wait = true
		return d
	}
	clear := func(n *nextAction) decision {
		d := s.keep(n)
		d.selected, d.baseline = "", ""
		return d
	}
	if len(b.finished) == len(s.children) {
		n := &nextAction{Task: brief(m), SubtaskProgress: prog, CompletedSubtasks: briefs(b.finished)}
		switch sel {
		case selectComplete:
			n.Action, n.State = "report_completion", "report_completion"
			n.Instruction = s.text("next.manager.report_completion", m.ID)
		case selectAdjust:
			return clear(s.adjust(b, prog))
		default:
			n.Action, n.State = "completion_check", "completion_check"
			n.Instruction = s.text("next.manager.completion_check", m.ID)
			n.Options = []string{selectComplete, selectAdjust}
			n.Changes = s.sinceWait()
		}
		return clear(n)
	}
	// A sub-task that waits for a cancelled (or missing) task would wait for ever: say so,
	// and the ways out, before anything else.
	if dead := s.deadDependencies(); len(dead) > 0 {
		var lines []string
		for _, d := range dead {
			lines = append(lines, s.text("next.dead_dependency", d.ID, d.Title, d.DependsOn, d.DependsOnStatus))
		}
		return clear(&nextAction{Action: "resolve_dead_dependencies", State: "dead_dependencies", Task: brief(m), SubtaskProgress: prog,
			DeadDependencies: dead, Instruction: s.text("next.manager.dead_dependencies", strings.Join(lines, "; "), dead[0].ID, dead[0].DependsOn)})
	}
	// Only blocked sub-tasks left (held ones may wait on them): nothing moves without a fix.
	if len(b.blocked) > 0 && len(b.running)+len(b.unassigned)+len(b.ready) == 0 && b.subtreeRunning == 0 {
		self, user, other := s.blockedBy(b.blocked)
		left := s.leftLines(b)
		if len(self) == 0 && !slices.ContainsFunc(b.blocked, func(t *filestore.Task) bool { return t.Status != filestore.StatusBlocked }) {
			// Every block is someone else's to lift (none is a rejected request): wait for
			// them, as wait does, instead of giving the team's task up.
			n := &nextAction{Action: "wait", State: "waiting_for_unblock", Task: brief(m), SubtaskProgress: prog,
				UserBlocked: user, OtherBlocked: other, Subtasks: s.lines(append(append([]*filestore.Task{}, b.blocked...), b.held...)),
				Instruction: s.text("next.manager.wait_unblock", left)}
			d := clear(n)
			d.wait = true
			return d
		}
		n := &nextAction{Action: "review_and_resolve_blocks", State: "needs_review", Task: brief(m), SubtaskProgress: prog,
			SelfBlocked: self, UserBlocked: user, OtherBlocked: other, CompletedSubtasks: briefs(b.finished), AvailableWorkers: b.workers}
		var ins strings.Builder
		ins.WriteString(s.text("next.manager.blocks", left))
		if len(self) > 0 {
			ins.WriteString(s.text("next.manager.blocks.self", blockedIDs(self)))
		}
		if len(user)+len(other) > 0 {
			ins.WriteString(s.text("next.manager.blocks.others", blockedIDs(append(user, other...))))
		}
		ins.WriteString(s.text("next.manager.blocks.give_up"))
		n.Instruction = ins.String()
		return clear(n)
	}
	if len(b.workers) == 0 && len(b.unassigned) > 0 {
		return clear(&nextAction{Action: "no_available_workers", State: "no_available_workers", Reason: "no_available_workers", Task: brief(m),
			SubtaskProgress: prog, Subtasks: s.lines(b.unassigned),
			Instruction: s.text("next.manager.no_workers", ids(b.unassigned), s.agent.ID)})
	}
	switch sel {
	case selectDispatch:
		return clear(s.dispatch(b, prog))
	case selectAdjust:
		return clear(s.adjust(b, prog))
	}
	opts := b.options(len(s.children))
	// A decision with one sensible choice is made (or offered, call and all) in the answer
	// itself: what can be dispatched is offered as one dispatch_subtasks call; with nothing
	// to dispatch and work running, the answer is to wait. select_action still takes every
	// choice in opts.
	if b.dispatchable() > 0 {
		n := s.dispatch(b, prog)
		n.Options = opts
		n.Changes = s.sinceWait()
		return clear(n)
	}
	if b.subtreeRunning > 0 && len(b.blocked) == 0 {
		baseline := s.session.Baseline
		if baseline == "" {
			baseline = s.fingerprint()
		}
		d := s.keep(&nextAction{Action: "wait", State: "waiting_for_workers", Task: brief(m), SubtaskProgress: prog, InProgressSubtasks: s.lines(b.running),
			Options: opts, Instruction: s.text("next.manager.wait_for_work")})
		d.selected, d.baseline, d.wait = "", baseline, true
		return d
	}
	return clear(s.awareness(b, prog))
}

// awareness is the manager's situation with the select_action choices valid now.
func (s *situation) awareness(b *board, prog *progress) *nextAction {
	opts := b.options(len(s.children))
	n := &nextAction{Action: "situational_awareness", State: "situational_awareness", Task: brief(s.main), SubtaskProgress: prog,
		Subtasks: s.lines(s.children), AvailableWorkers: b.workers, Options: opts, Changes: s.sinceWait()}
	var ins strings.Builder
	ins.WriteString(s.text("next.manager.choose"))
	for i, o := range opts {
		if i > 0 {
			ins.WriteString(s.text("next.manager.choose.sep"))
		}
		switch o {
		case selectDispatch:
			ins.WriteString(s.text("next.manager.choose.dispatch", b.dispatchable()))
		case selectAdjust:
			ins.WriteString(s.text("next.manager.choose.adjust"))
		case selectWait:
			ins.WriteString(s.text("next.manager.choose.wait", b.subtreeRunning))
		}
	}
	ins.WriteString(s.text("next.manager.choose.then"))
	n.Instruction = ins.String()
	return n
}

// sinceWait is what changed while the manager waited without a selection (the wait the
// answer itself chose), for the answer that ends it.
func (s *situation) sinceWait() []string {
	if s.session.Selected != "" || s.session.Baseline == "" {
		return nil
	}
	return s.changes()
}

// deadDependencies lists the unfinished direct sub-tasks' dependencies on a cancelled or
// missing task.
func (s *situation) deadDependencies() []deadDependency {
	var out []deadDependency
	for _, t := range s.children {
		if filestore.Finished(t.Status) {
			continue
		}
		for _, d := range t.Dependencies {
			dt := s.all[d]
			switch {
			case dt == nil:
				out = append(out, deadDependency{ID: t.ID, Title: t.Title, DependsOn: d, DependsOnStatus: "missing"})
			case dt.Status == filestore.StatusCancelled:
				out = append(out, deadDependency{ID: t.ID, Title: t.Title, DependsOn: d, DependsOnStatus: dt.Status})
			}
		}
	}
	return out
}

// leftLines names every unfinished direct sub-task of a board where only blocks are left,
// and why each cannot move: who blocked it and why, a rejected request, or which of its
// dependencies it waits for.
func (s *situation) leftLines(b *board) string {
	var parts []string
	for _, t := range b.blocked {
		if t.Status != filestore.StatusBlocked {
			parts = append(parts, s.text("next.left.rejected", t.ID, t.Title, s.orNone(t.RejectedReason)))
			continue
		}
		parts = append(parts, s.text("next.left.blocked", t.ID, t.Title, s.orNone(t.StatusChangedBy), s.orNone(t.BlockedReason)))
	}
	for _, t := range b.held {
		open := s.unmet(t)
		if len(open) == 0 {
			parts = append(parts, s.text("next.left.approval", t.ID, t.Title, t.Status))
			continue
		}
		parts = append(parts, s.text("next.left.waits", t.ID, t.Title, t.Status, strings.Join(open, ", ")))
	}
	return strings.Join(parts, "; ")
}

func (s *situation) withSelection(sel, baseline string) *situation {
	c := *s
	se := *s.session
	se.Selected, se.Baseline = sel, baseline
	c.session = &se
	return &c
}

func briefs(ts []*filestore.Task) []taskBrief {
	var out []taskBrief
	for _, t := range ts {
		out = append(out, *brief(t))
	}
	return out
}

// changes describes how the direct sub-tasks differ from the wait's baseline.
func (s *situation) changes() []string {
	before := map[string]string{}
	for _, part := range strings.Split(s.session.Baseline, ",") {
		if id, st, ok := strings.Cut(part, "="); ok {
			before[id] = st
		}
	}
	var out []string
	for _, t := range s.children {
		now := t.Status + "/" + t.AssigneeID
		was, ok := before[t.ID]
		switch {
		case !ok:
			out = append(out, s.text("next.change.new", t.ID, t.Title, t.Status))
		case was != now:
			wasStatus, _, _ := strings.Cut(was, "/")
			line := s.text("next.change.moved", t.ID, t.Title, wasStatus, t.Status)
			if t.StatusChangedBy != "" && wasStatus != t.Status {
				line += s.text("next.change.by", t.StatusChangedBy)
			}
			if t.Status == filestore.StatusBlocked && t.BlockedReason != "" {
				line += s.text("next.change.reason", t.BlockedReason)
			}
			out = append(out, line)
		}
	}
	return out
}

func (s *situation) dispatch(b *board, prog *progress) *nextAction {
	n := &nextAction{Action: "dispatch_task", State: "dispatch_task", Task: brief(s.main), SubtaskProgress: prog, AvailableWorkers: b.workers}
	n.DispatchableSubtasks = s.lines(append(append([]*filestore.Task{}, b.unassigned...), b.ready...))
	n.Call = s.proposal(b)
	n.Instruction = s.text("next.manager.dispatch", callText(n.Call))
	return n
}

// proposal is a dispatch of every dispatchable sub-task: an unassigned one to the least
// loaded worker (ties by id, each assignment counted), an assigned one as it is.
func (s *situation) proposal(b *board) *nextCall {
	load := map[string]int{}
	for _, w := range b.workers {
		load[w.ID] = w.ActiveTasks
	}
	var items []any
	for _, t := range append(append([]*filestore.Task{}, b.unassigned...), b.ready...) {
		who := t.AssigneeID
		if who == "" || who == s.agent.ID {
			who = ""
			for _, w := range b.workers {
				if who == "" || load[w.ID] < load[who] {
					who = w.ID
				}
			}
			load[who]++
		}
		items = append(items, map[string]any{"task_id": t.ID, "assignee_id": who})
	}
	// The wait that follows is made in the same call: the next answer is what needs the
	// manager, not a "wait" to ask for once more.
	return &nextCall{Tool: "dispatch_subtasks", Arguments: map[string]any{"assignments": items, "timeout_seconds": maxWaitSeconds}}
}

// callText spells a call out as the instructions do: tool(arg=<JSON>, ...).
func callText(c *nextCall) string {
	keys := make([]string, 0, len(c.Arguments))
	for k := range c.Arguments {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		v, _ := marshal(c.Arguments[k])
		parts = append(parts, k+"="+string(v))
	}
	return c.Tool + "(" + strings.Join(parts, ", ") + ")"
}

func (s *situation) adjust(b *board, prog *progress) *nextAction {
	return &nextAction{Action: "adjust", State: "adjust", Task: brief(s.main), SubtaskProgress: prog, Subtasks: s.lines(s.children), AvailableWorkers: b.workers,
		Instruction: s.text("next.manager.adjust")}
}
