package sim

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aipm/aipm/filestore"
)

// taskRound does the next step: the one the last result named (next_action), or else
// the one get_next_action names. A wait is get_next_action's to do.
func (s *simAgent) taskRound() error {
	n := s.next
	s.next = nil
	if n != nil && n.Action != "wait" && n.Action != "wait_for_delegation" {
		s.logf("next_action → %s", n.describe())
	} else {
		var err error
		if n, err = s.nextAction(); err != nil {
			return err
		}
	}
	return s.taskAction(n)
}

func (s *simAgent) taskAction(n *simNext) error {
	switch n.Action {
	case "get_task":
		var r struct {
			Task        simTask `json:"task"`
			ExecutionID string  `json:"execution_id"`
		}
		if err := s.call("get_my_task", nil, &r); err != nil {
			return err
		}
		s.logf("task %s (%s), execution %s", r.Task.ID, r.Task.Title, r.ExecutionID)
		return nil
	case "create_subtasks":
		if n.Task == nil {
			return errors.New("create_subtasks without a task")
		}
		if s.hierarchy == filestore.HierarchyManager {
			return s.createPlan(n.Task)
		}
		return s.decompose(n.Task)
	case "start_subtask":
		if n.NextSubtask == nil {
			return errors.New("start_subtask without next_subtask")
		}
		if err := s.start(n.NextSubtask.ID, n.NextSubtask.Status); err != nil {
			return err
		}
		if s.next != nil && s.next.Action == "execute_subtask" {
			return nil // the result says to do it now: the next round does
		}
		return s.runSubtask(n.NextSubtask, false)
	case "execute_subtask":
		if n.CurrentSubtask == nil {
			return errors.New("execute_subtask without current_subtask")
		}
		// The finish the answer spells out, with its start of the next sub-task if it
		// offers one.
		startNext := n.Call != nil && n.Call.Tool == "update_task_status" && n.Call.Arguments["start_next"] == true
		return s.runSubtask(n.CurrentSubtask, startNext)
	case "work":
		if n.Task == nil {
			return errors.New("work without a task")
		}
		summary, err := s.perform(n.Task.Description)
		var se *simStepError
		if errors.As(err, &se) {
			return s.report(filestore.ResultBlocked, se.msg+s.didSoFar())
		}
		if err != nil {
			return err
		}
		return s.report(filestore.ResultSuccess, summary)
	case "report_completion":
		switch n.State {
		case "task_blocked":
			return s.report(filestore.ResultBlocked, "stopped: the task was blocked"+s.didSoFar())
		case "task_cancelled":
			return s.report(filestore.ResultFailed, "cancelled"+s.didSoFar())
		}
		return s.report(filestore.ResultSuccess, s.completionSummary(n))
	case "review_and_resolve_blocks":
		var parts []string
		for _, b := range slices.Concat(n.SelfBlocked, n.UserBlocked, n.OtherBlocked) {
			parts = append(parts, fmt.Sprintf("%s blocked by %s (%s)", b.ID, simOr(b.BlockedBy, "?"), simOr(b.BlockedReason, "no reason")))
		}
		return s.report(filestore.ResultBlocked, "cannot resolve: "+strings.Join(parts, "; "))
	case "dependency_deadlock":
		var parts []string
		for _, w := range n.WaitingSubtasks {
			parts = append(parts, w.ID+" waits for "+strings.Join(w.WaitingFor, ", "))
		}
		return s.report(filestore.ResultBlocked, "dependencies stuck: "+strings.Join(parts, "; "))
	case "no_available_workers":
		return s.report(filestore.ResultBlocked, "no available workers")
	case "resolve_dead_dependencies":
		// The simplest way out: go on without what will never be done.
		for _, d := range n.DeadDependencies {
			if err := s.call("update_task_dependencies", map[string]any{"task_id": d.ID, "remove": []string{d.DependsOn}}, nil); err != nil {
				return err
			}
			s.logf("dropped %s's dependency on %s (%s)", d.ID, d.DependsOn, d.DependsOnStatus)
		}
		return nil
	case "wait", "wait_for_delegation", "adjust":
		return nil // get_next_action again: it long-polls
	case "situational_awareness":
		for _, want := range []string{"dispatch_task", "wait", "complete"} {
			if slices.Contains(n.Options, want) {
				return s.selectAction(want)
			}
		}
		return s.report(filestore.ResultBlocked, "nothing to dispatch and nothing running (options: "+strings.Join(n.Options, ", ")+")")
	case "dispatch_task":
		return s.dispatch(n)
	case "completion_check":
		// The instruction: review, then report_completed.
		return s.report(filestore.ResultSuccess, s.completionSummary(n))
	case "exit":
		return s.logout()
	}
	return fmt.Errorf("sim-agent %s: unexpected action %q (state %s)", s.id, n.Action, n.State)
}

func (s *simAgent) completionSummary(n *simNext) string {
	if len(s.did) > 0 {
		return strings.Join(s.did, "; ")
	}
	var parts []string
	for _, t := range n.CompletedSubtasks {
		p := t.Title + " (" + t.Status + ")"
		if t.Summary != "" {
			p += ": " + t.Summary
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return "done"
	}
	return strings.Join(parts, "; ")
}

func (s *simAgent) didSoFar() string {
	if len(s.did) == 0 {
		return ""
	}
	return "; done so far: " + strings.Join(s.did, "; ")
}

// report calls report_completed, which ends the task session, and ends the run.
func (s *simAgent) report(result, summary string) error {
	summary = simClip(summary, simMaxReply)
	var r struct {
		NewStatus string `json:"new_status"`
	}
	if err := s.call("report_completed", map[string]any{"result": result, "summary": summary}, &r); err != nil {
		var te *simToolError
		if errors.As(err, &te) && result != filestore.ResultSuccess {
			s.logf("report_completed(%s) refused: %s; logging out", result, te.Message)
			return s.logout()
		}
		return err
	}
	s.logf("reported %s (%s): %s", result, r.NewStatus, summary)
	return errSimDone
}

func (s *simAgent) selectAction(action string) error {
	var r struct {
		Moot string `json:"moot"`
	}
	if err := s.call("select_action", map[string]any{"action": action}, &r); err != nil {
		return err
	}
	if r.Moot != "" {
		s.logf("%s no longer fits: %s", action, r.Moot)
		return nil
	}
	s.logf("selected %s", action)
	return nil
}

// setStatus moves a task of the session's tree.
func (s *simAgent) setStatus(id, status, reason string) error {
	args := map[string]any{"task_id": id, "status": status}
	if reason != "" {
		args["reason"] = simClip(reason, simMaxReply)
	}
	if err := s.call("update_task_status", args, nil); err != nil {
		return err
	}
	s.logf("%s → %s", id, status)
	return nil
}

// start moves a pending task to in_progress (a backlog one through todo).
func (s *simAgent) start(id, status string) error {
	if status == filestore.StatusBacklog {
		if err := s.setStatus(id, filestore.StatusTodo, ""); err != nil {
			return err
		}
	}
	err := s.setStatus(id, filestore.StatusInProgress, "")
	var te *simToolError
	if errors.As(err, &te) && te.Code == "invalid_status_transition" && status != filestore.StatusBacklog {
		// Dispatch lines show "ready", not the real status: a backlog task needs todo first.
		if err := s.setStatus(id, filestore.StatusTodo, ""); err != nil {
			return err
		}
		err = s.setStatus(id, filestore.StatusInProgress, "")
	}
	return err
}

func (s *simAgent) runSubtask(t *simTask, startNext bool) error {
	summary, err := s.perform(t.Description)
	var se *simStepError
	if errors.As(err, &se) {
		s.logf("%s failed: %s", t.ID, se.msg)
		return s.setStatus(t.ID, filestore.StatusBlocked, se.msg)
	}
	if err != nil {
		return err
	}
	if !startNext {
		return s.setStatus(t.ID, filestore.StatusDone, summary)
	}
	var r struct {
		Started string `json:"started_task_id"`
	}
	if err := s.call("update_task_status", map[string]any{"task_id": t.ID, "status": filestore.StatusDone,
		"reason": simClip(summary, simMaxReply), "start_next": true}, &r); err != nil {
		return err
	}
	s.logf("%s → %s", t.ID, filestore.StatusDone)
	if r.Started != "" {
		s.logf("%s → %s", r.Started, filestore.StatusInProgress)
	}
	return nil
}

// decompose splits a worker's task into one sub-task per step, in a chain, when it has
// at least two steps; otherwise the next get_next_action says to do it directly.
func (s *simAgent) decompose(t *simTask) error {
	steps := simSteps(simParseScript(t.Description))
	if len(steps) < 2 {
		s.logf("%s has %d step(s): doing it directly", t.ID, len(steps))
		return s.taskAction(&simNext{Action: "work", Task: t})
	}
	return s.createBatch(simStepItems(steps))
}

// createPlan turns a manager's plan lines into sub-tasks; without plan lines each step
// becomes a sub-task, and without steps the task itself is handed down whole.
func (s *simAgent) createPlan(t *simTask) error {
	ds := simParseScript(t.Description)
	var items []map[string]any
	for _, d := range ds {
		if d.verb == "plan" {
			items = append(items, map[string]any{"local_id": d.plan.localID, "title": d.plan.title,
				"description": strings.Join(d.plan.steps, "\n"), "dependencies": d.plan.after})
		}
	}
	if len(items) == 0 {
		if steps := simSteps(ds); len(steps) > 0 {
			items = simStepItems(steps)
		} else {
			items = []map[string]any{{"local_id": "all", "title": t.Title, "description": t.Description}}
		}
	}
	return s.createBatch(items)
}

func (s *simAgent) createBatch(items []map[string]any) error {
	var r struct {
		Tasks []simTask `json:"tasks"`
	}
	if err := s.call("create_tasks_batch", map[string]any{"tasks": items}, &r); err != nil {
		return err
	}
	var names []string
	for _, t := range r.Tasks {
		names = append(names, t.ID+" ("+t.Title+")")
	}
	s.logf("created %d sub-tasks: %s", len(r.Tasks), strings.Join(names, ", "))
	return nil
}

// simStepItems are create_tasks_batch items for steps, each depending on the one before.
func simStepItems(steps []simDirective) []map[string]any {
	var items []map[string]any
	seen := map[string]bool{}
	for i, d := range steps {
		title := d.title()
		if seen[title] { // titles are unique under a parent
			title = fmt.Sprintf("%s (step %d)", title, i+1)
		}
		seen[title] = true
		it := map[string]any{"local_id": fmt.Sprintf("s%d", i+1), "title": title, "description": d.line}
		if i > 0 {
			it["dependencies"] = []string{fmt.Sprintf("s%d", i)}
		}
		items = append(items, it)
	}
	return items
}

// dispatchPlan is what a dispatch goes by: the agent the task's script plans each
// sub-task for (by title), and the available workers' loads and ids, sorted.
func dispatchPlan(n *simNext) (forAgent map[string]string, load map[string]int, workers []string) {
	forAgent = map[string]string{}
	if n.Task != nil {
		for _, d := range simParseScript(n.Task.Description) {
			if d.verb == "plan" && d.plan.agent != "" {
				forAgent[d.plan.title] = d.plan.agent
			}
		}
	}
	load = map[string]int{}
	for _, w := range n.AvailableWorkers {
		load[w.ID] = w.ActiveTasks
		workers = append(workers, w.ID)
	}
	slices.Sort(workers)
	return forAgent, load, workers
}

// dispatch assigns each unassigned dispatchable sub-task (to the plan's `for` agent, else
// the least loaded subordinate, ties by id) and starts those whose dependencies are done.
func (s *simAgent) dispatch(n *simNext) error {
	if n.Call != nil && n.Call.Tool == "dispatch_subtasks" {
		return s.dispatchCall(n)
	}
	forAgent, load, workers := dispatchPlan(n)
	leastLoaded := func() string {
		best := ""
		for _, w := range workers {
			if best == "" || load[w] < load[best] {
				best = w
			}
		}
		return best
	}
	for _, t := range n.DispatchableSubtasks {
		if t.AssigneeID == "" || t.AssigneeID == "unassigned" {
			who := forAgent[t.Title]
			if who == "" {
				who = leastLoaded()
			}
			if who == "" {
				return fmt.Errorf("sim-agent %s: nobody to assign %s to", s.id, t.ID)
			}
			err := s.call("assign_task", map[string]any{"task_id": t.ID, "assignee_id": who}, nil)
			var te *simToolError
			if errors.As(err, &te) && forAgent[t.Title] != "" && leastLoaded() != "" {
				s.logf("cannot assign %s to %s (%s): taking the least loaded worker", t.ID, who, te.Code)
				who = leastLoaded()
				err = s.call("assign_task", map[string]any{"task_id": t.ID, "assignee_id": who}, nil)
			}
			if err != nil {
				return err
			}
			load[who]++
			s.logf("assigned %s (%s) to %s", t.ID, t.Title, who)
		}
		if t.DepsMet {
			if err := s.start(t.ID, t.Status); err != nil {
				return err
			}
		}
	}
	return nil
}

// dispatchCall makes the dispatch_subtasks call the answer spells out, choosing as the
// legacy dispatch does where it has a view of its own: the plan's `for` agent, else for
// an unassigned sub-task the least loaded worker counting its own choices (ties by id).
// Refused, it makes the call as offered.
func (s *simAgent) dispatchCall(n *simNext) error {
	forAgent, load, workers := dispatchPlan(n)
	unassigned := map[string]string{} // id → title
	for _, l := range n.DispatchableSubtasks {
		if l.AssigneeID == "" {
			unassigned[l.ID] = l.Title
		}
	}
	offered, _ := n.Call.Arguments["assignments"].([]any)
	var mine []any
	changed := false
	for _, it := range offered {
		a, _ := it.(map[string]any)
		id, _ := a["task_id"].(string)
		who, _ := a["assignee_id"].(string)
		if title, ok := unassigned[id]; ok {
			pick := forAgent[title]
			for _, w := range workers {
				if pick == "" || (forAgent[title] == "" && load[w] < load[pick]) {
					pick = w
				}
			}
			if pick != "" && pick != who {
				who, changed = pick, true
			}
			load[who]++
		}
		mine = append(mine, map[string]any{"task_id": id, "assignee_id": who})
	}
	var r struct {
		Dispatched []struct {
			TaskID     string `json:"task_id"`
			AssigneeID string `json:"assignee_id"`
			Status     string `json:"status"`
			Queued     bool   `json:"queued"`
		} `json:"dispatched"`
	}
	err := s.call("dispatch_subtasks", map[string]any{"assignments": mine}, &r)
	var te *simToolError
	if errors.As(err, &te) && changed {
		s.logf("cannot dispatch as planned (%s): taking the offered assignees", te.Code)
		err = s.call("dispatch_subtasks", n.Call.Arguments, &r)
	}
	if err != nil {
		return err
	}
	for _, d := range r.Dispatched {
		how := d.Status
		if d.Queued {
			how = "queued until its dependencies are done"
		}
		s.logf("dispatched %s to %s: %s", d.TaskID, d.AssigneeID, how)
	}
	return nil
}

// delegate hands a conversation to the agent's own chat session and waits for the result.
func (s *simAgent) delegate(target, purpose string) (string, error) {
	// The step needs the answer: the call waits for it (at most its 50 s; then
	// get_next_action waits on).
	var r simDelegation
	err := s.call("delegate_to_chat_session", map[string]any{"target_agent_id": target, "purpose": purpose, "timeout_seconds": 50}, &r)
	var te *simToolError
	if errors.As(err, &te) {
		return "", simStepErrorf("cannot delegate to the chat session: %s", te.Message)
	}
	if err != nil {
		return "", err
	}
	s.logf("delegated %s to my chat session: %s", r.DelegationID, purpose)
	d := &r
	if !d.finished() {
		if d, err = s.awaitDelegation(r.DelegationID); err != nil {
			return "", err
		}
	}
	if d.Status != filestore.DelegationCompleted {
		return "", simStepErrorf("delegation %s %s: %s", d.DelegationID, d.Status, d.Result)
	}
	return d.Result, nil
}

// awaitDelegation waits for a delegation to finish: get_next_action answers
// wait_for_delegation, long-polling, while the step in progress waits for it, and lists
// the delegation with its result once it is done. Any other answer (an interrupt, a block)
// goes back to the main loop.
func (s *simAgent) awaitDelegation(id string) (*simDelegation, error) {
	deadline := time.Now().Add(simDelegationWait)
	for time.Now().Before(deadline) {
		n, err := s.nextAction()
		if err != nil {
			return nil, err
		}
		for i := range n.Delegations {
			if d := &n.Delegations[i]; d.DelegationID == id && d.finished() {
				return d, nil
			}
		}
		if n.Action != "wait_for_delegation" {
			return nil, &simDivert{next: n}
		}
	}
	return nil, fmt.Errorf("sim-agent %s: delegation %s not finished after %s", s.id, id, simDelegationWait)
}
