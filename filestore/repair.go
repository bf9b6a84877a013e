package filestore

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// The rules every writer keeps inside the lock, which a merge of two clones (or an edit
// made outside aipm) can still break together although each side kept them. Breaches
// finds the states they forbid; RepairMerged applies each rule's own repair where one is
// safe; Check (`aipm doctor`) names every one with its fix.
const (
	// RuleMaxParallel: an agent has at most max_parallel_tasks top-level tasks in
	// progress.
	RuleMaxParallel = "max_parallel_tasks"
	// RuleBlockedParent: the unfinished descendants of a blocked task are blocked by its
	// cascade, so none runs.
	RuleBlockedParent = "blocked_parent"
	// RuleMaxTurns: a conversation whose turns reached max_turns is no longer live.
	RuleMaxTurns = "max_turns"
	// RuleOneLivePair: an unordered pair of agents has at most one pending or active
	// conversation.
	RuleOneLivePair = "one_live_conversation"
	// RuleDoneParent: a done task has no unfinished sub-task.
	RuleDoneParent = "done_parent"
	// RuleDependencyCycle: dependencies never loop.
	RuleDependencyCycle = "dependency_cycle"
)

// ViaMerge is the Via of the history events of a repair applied after a merge (or another
// change made outside aipm) broke a rule: nobody acted, the rule did.
const ViaMerge = "merge"

// EndDuplicate is the end_reason of a conversation ended because its pair had a second
// live conversation after a merge, each clone having started one.
const EndDuplicate = "duplicate"

// Breach is a state no single writer allows, found in the files.
type Breach struct {
	Rule   string `json:"rule"`
	Entity string `json:"entity"` // task or conversation
	ID     string `json:"id"`
	// Key is the field of the entity's file the breach is about, for pointing at a line.
	Key     string `json:"key"`
	Problem string `json:"problem"`
	// Repair says what RepairMerged does about it; "" when no repair is safe and a human
	// must decide (Fix says how).
	Repair string `json:"repair,omitempty"`
	Fix    string `json:"fix"`
	// Repaired is set by RepairMerged once the repair is written.
	Repaired bool `json:"repaired,omitempty"`
}

func (b Breach) String() string {
	if b.Repaired {
		return fmt.Sprintf("%s %s: %s; repaired: %s", b.Entity, b.ID, b.Problem, b.Repair)
	}
	return fmt.Sprintf("%s %s: %s; %s", b.Entity, b.ID, b.Problem, b.Fix)
}

// ruleState is what the rules look at: every task, agent and conversation, and the
// history (nil: none to read).
type ruleState struct {
	tasks  map[string]*Task
	agents map[string]*Agent
	convs  []*Conversation // by id
	s      *Store
}

// missedCascade reports whether task t, in progress under an ancestor blocked at
// blockedAt, was started by a writer that had not seen that block: its history holds the
// block's cascade reaching it (written where the block was made), and its start came
// from anything but blocked (so not a restart after that cascade). In one store, a task
// under a blocked ancestor runs only when it was started on purpose after the block —
// restarted from blocked, or out of backlog (which a block does not cascade to), or made
// after it — and the coordinator must not undo that.
func (st *ruleState) missedCascade(t *Task, blockedAt time.Time) bool {
	if st.s == nil || t.StatusChangedAt == nil {
		return false
	}
	evs, _, err := st.s.EventsTail(t.ID, lastEventScan)
	if err != nil {
		return false
	}
	cascaded, left, from, found := false, false, "", false
	for _, e := range evs {
		if e.Change != "status" {
			continue
		}
		if e.To == StatusBlocked && e.At.Equal(blockedAt) {
			cascaded = true
		}
		// A writer that took the task out of the cascade's block (blocked → todo, say)
		// saw the block: starting it later under the blocked ancestor is something one
		// clone allows, not what a merge made.
		if e.From == StatusBlocked && !e.At.Before(blockedAt) {
			left = true
		}
		if e.To == t.Status && e.At.Equal(*t.StatusChangedAt) {
			from, found = e.From, true
		}
	}
	// No event of the start itself (a writer killed between the task's file and its
	// history line) says nothing of where it started from: a restart out of the cascade's
	// block, which the store allows, must not be undone for it.
	return cascaded && !left && found && from != StatusBlocked
}

// breaches lists the states of st that break a rule, in a stable order: by rule, then by
// entity id. It changes nothing.
func (st *ruleState) breaches() []Breach {
	var out []Breach
	ids := make([]string, 0, len(st.tasks))
	for id := range st.tasks {
		ids = append(ids, id)
	}
	sort.Strings(ids)

	// Too many top-level tasks in progress: the ones started last are over the limit.
	running := map[string][]*Task{}
	for _, id := range ids {
		if t := st.tasks[id]; t.ParentID == "" && t.Status == StatusInProgress && t.AssigneeID != "" {
			running[t.AssigneeID] = append(running[t.AssigneeID], t)
		}
	}
	agents := make([]string, 0, len(running))
	for a := range running {
		agents = append(agents, a)
	}
	sort.Strings(agents)
	for _, a := range agents {
		ag, ok := st.agents[a]
		if !ok || len(running[a]) <= ag.MaxParallel() {
			continue
		}
		list := running[a]
		sort.SliceStable(list, func(i, j int) bool { return startedAt(list[i]).Before(startedAt(list[j])) })
		for _, t := range list[ag.MaxParallel():] {
			out = append(out, Breach{Rule: RuleMaxParallel, Entity: "task", ID: t.ID, Key: "status",
				Problem: fmt.Sprintf("agent %s has %d top-level tasks in progress, over its max_parallel_tasks %d, and this one started last", a, len(list), ag.MaxParallel()),
				Repair:  "blocked, so that the agent keeps the tasks it started first; unblock it when one of them finishes",
				Fix:     fmt.Sprintf("block it (`aipm task status %s blocked`) or raise max_parallel_tasks of %s", t.ID, a)})
		}
	}

	for _, id := range ids {
		t := st.tasks[id]
		if t.Status != StatusInProgress {
			continue
		}
		src, p := blockedAncestor(st.tasks, t)
		if src == nil || !st.missedCascade(t, startedAt(p)) {
			continue
		}
		out = append(out, Breach{Rule: RuleBlockedParent, Entity: "task", ID: id, Key: "status",
			Problem: fmt.Sprintf("in_progress under blocked task %s", p.ID),
			Repair:  fmt.Sprintf("blocked by the cascade of %s, to resume when it is unblocked", src.ID),
			Fix:     fmt.Sprintf("block it too (`aipm task status %s blocked`), or unblock %s", id, p.ID)})
	}

	for _, c := range st.convs {
		if c.Live() && c.MaxTurns > 0 && c.Turns >= c.MaxTurns {
			out = append(out, Breach{Rule: RuleMaxTurns, Entity: "conversation", ID: c.ID, Key: "turns",
				Problem: fmt.Sprintf("%s with %d turns, max_turns %d", c.State, c.Turns, c.MaxTurns),
				Repair:  "ended as the turn that reached max_turns ends it (terminating, end_reason max_turns)",
				Fix:     "set its state to terminating with end_reason max_turns, or raise max_turns in the file"})
		}
	}
	pairs := map[[2]string][]*Conversation{}
	var order [][2]string
	for _, c := range st.convs {
		if !c.Live() || c.MaxTurns > 0 && c.Turns >= c.MaxTurns {
			continue
		}
		pair := [2]string{min(c.InitiatorID, c.ParticipantID), max(c.InitiatorID, c.ParticipantID)}
		if pairs[pair] == nil {
			order = append(order, pair)
		}
		pairs[pair] = append(pairs[pair], c)
	}
	for _, pair := range order {
		list := pairs[pair]
		if len(list) < 2 {
			continue
		}
		// The one kept: the older, whatever its state. Every clone must pick the same one,
		// and clones repair at different moments: one that has already seen a request
		// accepted and one that has not would each keep a different conversation if the
		// state decided, and the next merge would carry both ends, leaving the pair none.
		// An id never changes, so every clone keeps the same one.
		sort.SliceStable(list, func(i, j int) bool { return list[i].ID < list[j].ID })
		for _, c := range list[1:] {
			end := "terminating, end_reason duplicate: both sides are told"
			if c.State == ConvPending {
				end = "expired, end_reason duplicate: its initiator is told"
			}
			out = append(out, Breach{Rule: RuleOneLivePair, Entity: "conversation", ID: c.ID, Key: "state",
				Problem: fmt.Sprintf("second live conversation between %s and %s (also %s)", pair[0], pair[1], list[0].ID),
				Repair:  fmt.Sprintf("ended, %s kept: %s", list[0].ID, end),
				Fix:     "end one of them"})
		}
	}

	// A done task with an unfinished sub-task: found from each unfinished task upward, so
	// the cost is the tasks times their depth, not the sizes of every done sub-tree.
	open := map[string][]*Task{}
	for _, id := range ids {
		t := st.tasks[id]
		if Finished(t.Status) {
			continue
		}
		seen := map[string]bool{id: true}
		for a := st.tasks[t.ParentID]; a != nil && !seen[a.ID]; a = st.tasks[a.ParentID] {
			seen[a.ID] = true
			if a.Status == StatusDone {
				open[a.ID] = append(open[a.ID], t)
			}
		}
	}
	for _, id := range ids {
		for _, d := range open[id] {
			out = append(out, Breach{Rule: RuleDoneParent, Entity: "task", ID: id, Key: "status",
				Problem: fmt.Sprintf("done while sub-task %s is %s", d.ID, d.Status),
				Fix:     fmt.Sprintf("no repair is safe (done is final, and the sub-task's work may matter): finish it or cancel it (`aipm task status %s cancelled`), or edit tasks/%s.json back to in_progress if it was not done after all", d.ID, id)})
		}
	}
	looped := onCycles(st.tasks, ids)
	var set *memTasks // the index depPath needs, built only when there is a cycle to name
	if len(looped) > 0 {
		set = newMemTasks(st.tasks)
	}
	for _, id := range ids {
		t := st.tasks[id]
		if !looped[id] {
			continue
		}
		if p := depPath(set, t.Dependencies, id); p != nil && !slices.Contains(t.Dependencies, id) {
			out = append(out, Breach{Rule: RuleDependencyCycle, Entity: "task", ID: id, Key: "dependencies",
				Problem: "dependency cycle: " + strings.Join(append([]string{id}, p...), " → "),
				Fix:     fmt.Sprintf("no repair is safe (which dependency is wrong is a decision): remove one with `aipm task edit %s --remove-dep %s`", id, p[0])})
		}
	}
	return out
}

// onCycles returns the tasks that lie on a dependency cycle (a self-dependency aside, which
// is reported on its own): the strongly connected components of more than one task, found
// in one pass (Tarjan), so that a store of many tasks with long dependency chains costs
// linear time on every look.
func onCycles(tasks map[string]*Task, ids []string) map[string]bool {
	index := map[string]int{}
	low := map[string]int{}
	on := map[string]bool{}
	var stack []string
	out := map[string]bool{}
	n := 0
	var visit func(id string)
	visit = func(id string) {
		index[id], low[id] = n, n
		n++
		stack = append(stack, id)
		on[id] = true
		for _, d := range tasks[id].Dependencies {
			if d == id || tasks[d] == nil {
				continue
			}
			if _, seen := index[d]; !seen {
				visit(d)
				low[id] = min(low[id], low[d])
			} else if on[d] {
				low[id] = min(low[id], index[d])
			}
		}
		if low[id] != index[id] {
			return
		}
		var comp []string
		for {
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			on[top] = false
			comp = append(comp, top)
			if top == id {
				break
			}
		}
		if len(comp) > 1 {
			for _, c := range comp {
				out[c] = true
			}
		}
	}
	for _, id := range ids {
		if _, seen := index[id]; !seen {
			visit(id)
		}
	}
	return out
}

// startedAt is when a task entered its status (its creation if unknown).
func startedAt(t *Task) time.Time {
	if t.StatusChangedAt != nil {
		return *t.StatusChangedAt
	}
	return t.CreatedAt
}

// blockedAncestor returns, for a task under a blocked ancestor, the task whose block
// cascades to it (the nearest blocked ancestor's own cause) and that nearest blocked
// ancestor; nils when no ancestor is blocked.
func blockedAncestor(tasks map[string]*Task, t *Task) (src, parent *Task) {
	seen := map[string]bool{t.ID: true}
	for cur := tasks[t.ParentID]; cur != nil && !seen[cur.ID]; cur = tasks[cur.ParentID] {
		seen[cur.ID] = true
		if cur.Status == StatusBlocked {
			if c := tasks[cur.CascadeFrom]; cur.CascadeFrom != "" && c != nil && c.Status == StatusBlocked {
				return c, cur
			}
			return cur, cur
		}
	}
	return nil, nil
}

// loadRuleState reads the agents, the live conversations and the tasks: every one when all
// is set, else the work in flight (WorkingTasks); under the lock if the caller holds it.
func (s *Store) loadRuleState(underLock, all bool) (*ruleState, error) {
	tasks, err := s.WorkingTasks()
	if all {
		tasks, err = s.Tasks(TaskFilter{})
	}
	if err != nil {
		return nil, err
	}
	agents, err := s.Agents()
	if err != nil {
		return nil, err
	}
	f := ConversationFilter{States: []string{ConvPending, ConvActive}}
	var convs []*Conversation
	if underLock {
		convs, err = s.conversationsLocked(f)
	} else {
		convs, err = s.Conversations(f)
	}
	if err != nil {
		return nil, err
	}
	st := &ruleState{tasks: map[string]*Task{}, agents: map[string]*Agent{}, convs: convs, s: s}
	for _, t := range tasks {
		st.tasks[t.ID] = t
	}
	for _, a := range agents {
		st.agents[a.ID] = a
	}
	sort.Slice(st.convs, func(i, j int) bool { return st.convs[i].ID < st.convs[j].ID })
	return st, nil
}

// Breaches reads the store and lists the states that break a rule (see the Rule
// constants), with the repair RepairMerged would apply or the fix a human must make. It
// changes nothing.
func (s *Store) Breaches() ([]Breach, error) {
	st, err := s.loadRuleState(false, true)
	if err != nil {
		return nil, err
	}
	return st.breaches(), nil
}

// RepairMerged applies the rules' own repairs to the states a merge (or another change made
// outside aipm) left breaking them, under the store lock, each recorded in the history as
// actor, via "merge", with the rule as the reason; the agents hear of it as of any change
// by someone else (the task interrupts their servers derive, the conversation end
// notices). The repairs:
//   - an agent over max_parallel_tasks: the top-level tasks it started last are blocked
//     (with their cascade), the ones it started first keep running;
//   - a task running under a blocked ancestor: blocked by that ancestor's cascade, so it
//     resumes when the ancestor is unblocked;
//   - a live conversation at max_turns: terminating, end_reason max_turns;
//   - a second live conversation of a pair: the older one is kept (by id, so that every
//     clone keeps the same one), the other ended with end_reason duplicate (expired if it
//     was pending).
//
// A done task with an open sub-task and a dependency cycle have no safe repair: they are
// returned unrepaired for `aipm doctor` to name. It returns every breach found, repaired
// or not. When the files hold none, it takes no lock. Every repair concerns open work, so
// it looks at the work in flight (WorkingTasks), and its cost on every look of aipm run
// and every sync round follows the open work, not the history; Breaches, for doctor,
// reads every task.
func (s *Store) RepairMerged(actor string) ([]Breach, error) {
	st, err := s.loadRuleState(false, false)
	if err != nil {
		return nil, err
	}
	found := st.breaches()
	if !slices.ContainsFunc(found, func(b Breach) bool { return b.Repair != "" }) {
		return found, nil
	}
	err = s.locked(func() error {
		st, err := s.loadRuleState(true, false)
		if err != nil {
			return err
		}
		who := Actor{ID: actor, Via: ViaMerge}
		var out []Breach
		for _, b := range st.breaches() {
			if b.Repair != "" {
				ok, err := s.repairLocked(who, st, &b)
				if err != nil {
					return err
				}
				if !ok {
					continue // an earlier repair settled it (a block's cascade, say)
				}
				b.Repaired = true
			}
			out = append(out, b)
		}
		found = out
		return nil
	})
	return found, err
}

// repairLocked applies b's repair to the files (and to st, so later repairs see it); false
// when the file no longer breaks the rule. The caller holds the lock.
func (s *Store) repairLocked(who Actor, st *ruleState, b *Breach) (bool, error) {
	reason := "after a merge: " + b.Problem
	switch b.Rule {
	case RuleMaxParallel:
		t, err := s.Task(b.ID)
		if err != nil || t.Status != StatusInProgress {
			return false, err
		}
		all, err := s.taskSetLocked()
		if err != nil {
			return false, err
		}
		ch, err := s.applyStatusEvent(who, all, t, StatusBlocked, reason, Event{})
		if err != nil {
			return false, err
		}
		st.tasks[t.ID] = ch.Task
		for _, d := range ch.Cascaded {
			st.tasks[d.ID] = d
		}
		return true, nil
	case RuleBlockedParent:
		t, err := s.Task(b.ID)
		if err != nil || t.Status != StatusInProgress {
			return false, err
		}
		src, p := blockedAncestor(st.tasks, t)
		if src == nil {
			return false, nil
		}
		now := s.Now()
		why := fmt.Sprintf("parent task %s blocked", src.ID)
		if src.BlockedReason != "" {
			why += ": " + src.BlockedReason
		}
		setStatus(t, who, StatusBlocked, why, now)
		t.CascadeFrom, t.StatusBeforeCascade = src.ID, StatusInProgress
		ev := Event{Change: "status", From: StatusInProgress, To: StatusBlocked,
			Reason: fmt.Sprintf("after a merge: in_progress under blocked task %s; %s", p.ID, why)}
		if err := s.commitTask(who, t, now, ev); err != nil {
			return false, err
		}
		st.tasks[t.ID] = t
		return true, nil
	case RuleMaxTurns, RuleOneLivePair:
		c, err := s.conversationLocked(b.ID)
		if err != nil || !c.Live() {
			return false, err
		}
		now := s.Now()
		from := c.State
		switch {
		case b.Rule == RuleMaxTurns:
			at := now
			if c.LastMessageAt != nil {
				at = *c.LastMessageAt
			}
			c.State, c.EndedAt, c.EndedBy, c.EndReason = ConvTerminating, &at, who.ID, EndMaxTurns
		case c.State == ConvPending:
			c.State, c.EndedAt, c.EndedBy, c.EndReason = ConvExpired, &now, who.ID, EndDuplicate
		default:
			c.State, c.EndedAt, c.EndedBy, c.EndReason = ConvTerminating, &now, who.ID, EndDuplicate
		}
		ev := Event{Change: "state", From: from, To: c.State, Reason: reason}
		if err := s.saveConversationLocked(who, c, ev); err != nil {
			return false, err
		}
		for i, o := range st.convs {
			if o.ID == c.ID {
				st.convs[i] = c
			}
		}
		return true, nil
	}
	return false, nil
}
