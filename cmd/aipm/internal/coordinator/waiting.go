package coordinator

import (
	"fmt"
	"sort"
	"strings"

	"github.com/aipm/aipm/filestore"
)

// What a running process waits for (see waiting); "" means it works.
const (
	waitIdleChat  = "nothing to talk about"
	waitPartner   = "a conversation partner"
	waitWorkers   = "its workers"
	waitDelegated = "its delegation"
)

// openDelegations counts the unfinished delegations per task, by delegating agent.
func (c *Coordinator) openDelegations() map[workKey]int {
	out := map[workKey]int{}
	ds, err := c.s.Delegations(filestore.DelegationFilter{})
	if err != nil {
		return out
	}
	for _, d := range ds {
		if !d.Finished() {
			out[workKey{d.AgentID, d.TaskID}]++
		}
	}
	return out
}

// toldToWait maps each spawn whose live task session get_next_action told to wait to what
// it waits for.
func (c *Coordinator) toldToWait() map[string]string {
	out := map[string]string{}
	all, err := c.s.Sessions("")
	if err != nil {
		return out
	}
	now := c.s.Now()
	for _, se := range all {
		if se.Waiting != "" && se.SpawnID != "" && se.Live(now) {
			out[se.SpawnID] = se.Waiting
		}
	}
	return out
}

// waiting says what a running process only waits for, or "" when it works (or may: a
// process that just started, a task that changed under it). w is its agent's work now;
// told is what get_next_action told the live sessions to wait for, by spawn.
func (c *Coordinator) waiting(pr *proc, w filestore.Work, tasks []*filestore.Task, open map[workKey]int, told map[string]string) string {
	if pr.key.purpose == filestore.PurposeChat {
		if w.ChatInput() {
			return ""
		}
		if busy, err := c.s.ChatBusy(pr.key.agent); err != nil || busy {
			return waitPartner
		}
		return waitIdleChat
	}
	t := findTask(tasks, pr.taskID)
	if t == nil || t.Status != filestore.StatusInProgress {
		return ""
	}
	if open[workKey{pr.key.agent, pr.taskID}] > 0 {
		return waitDelegated
	}
	if pr.manager && managerHold(tasks, pr.taskID) != "" {
		return waitWorkers
	}
	if what := told[pr.spawn.ID]; what != "" {
		return what // e.g. a worker's wait for a dependency that is someone else's work
	}
	return ""
}

// managerHold says why a manager with task work should not be started now: its sub-work is
// merely in progress with nothing for it to react to (no blocked sub-task, nothing to
// dispatch, not everything finished). Starting it would only make it wait, and restarting
// it each time it exits is the spawn loop the original system suffered.
func managerHold(tasks []*filestore.Task, taskID string) string {
	byID := map[string]*filestore.Task{}
	kids := map[string][]*filestore.Task{}
	for _, t := range tasks {
		byID[t.ID] = t
		kids[t.ParentID] = append(kids[t.ParentID], t)
	}
	children := kids[taskID]
	if len(children) == 0 {
		return ""
	}
	finished := 0
	for _, ch := range children {
		switch ch.Status {
		case filestore.StatusBlocked:
			return ""
		case filestore.StatusDone, filestore.StatusCancelled:
			finished++
		case filestore.StatusTodo, filestore.StatusBacklog:
			ready := true
			for _, d := range ch.Dependencies {
				if !filestore.DependencyMet(byID[d]) {
					ready = false
				}
			}
			if ready {
				return ""
			}
		}
	}
	if finished == len(children) {
		return ""
	}
	running := 0
	var walk func(id string)
	walk = func(id string) {
		for _, t := range kids[id] {
			// A done sub-task whose code the merge queue is landing moves too.
			if t.Status == filestore.StatusInProgress || t.LandingInFlight() {
				running++
			}
			walk(t.ID)
		}
	}
	walk(taskID)
	if running == 0 {
		return "" // nothing moves: the manager must look (e.g. a dependency deadlock)
	}
	return "waiting for workers (sub-tasks in progress, nothing to react to)"
}

// fingerprint summarizes the work a start is for; the same fingerprint after the process
// exits means it made no progress.
func fingerprint(purpose string, w filestore.Work, tasks []*filestore.Task) string {
	if purpose == filestore.PurposeChat {
		return fmt.Sprintf("chat unread=%d delegations=%d requests=%d notices=%d opened=%v",
			w.Unread, w.PendingDelegations, w.ConversationRequests, w.Notices, w.ChatOpened)
	}
	kids := map[string][]*filestore.Task{}
	var root *filestore.Task
	for _, t := range tasks {
		kids[t.ParentID] = append(kids[t.ParentID], t)
		if t.ID == w.TaskID {
			root = t
		}
	}
	if root == nil {
		return "task " + w.TaskID
	}
	var parts []string
	var walk func(t *filestore.Task)
	walk = func(t *filestore.Task) {
		parts = append(parts, fmt.Sprintf("%s:%s:%d", t.ID, t.Status, t.Version))
		for _, k := range kids[t.ID] {
			walk(k)
		}
	}
	walk(root)
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
