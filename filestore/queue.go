package filestore

import (
	"fmt"
	"slices"
	"strings"
)

// QueueActor is who starts a queued task: the system, through the coordinator.
var QueueActor = Actor{ID: "system", Via: ViaCoordinator}

// StartQueued starts the queued tasks whose turn has come: each top-level task that is
// todo, assigned to an active AI agent, not held by an approval and whose dependencies are
// all done, while its assignee has fewer top-level tasks in progress than
// max_parallel_tasks — the highest priority first, then the oldest. Each start is the
// ordinary status change (every rule of SetTaskStatus), recorded in the history with the
// system as its actor and why. tasks is what the caller last read, to find candidates
// without another scan; each is checked again under the lock. Nothing starts while the
// project is not active or settings.manual_task_start is on.
func (s *Store) StartQueued(tasks []*Task) ([]*Task, error) {
	if !slices.ContainsFunc(tasks, func(t *Task) bool { return t.ParentID == "" && t.Status == StatusTodo && t.AssigneeID != "" }) {
		return nil, nil
	}
	p, err := s.ProjectView()
	if err != nil {
		return nil, err
	}
	if p.Status != ProjectActive || p.Settings.ManualTaskStart {
		return nil, nil
	}
	s.warmTasks()
	var started []*Task
	err = s.locked(func() error {
		all, err := s.taskSetLocked()
		if err != nil {
			return err
		}
		byAgent := map[string][]*Task{}
		for _, c := range tasks {
			t := all.task(c.ID)
			if t == nil || !queued(all, t) {
				continue
			}
			byAgent[t.AssigneeID] = append(byAgent[t.AssigneeID], t)
		}
		agents := make([]string, 0, len(byAgent))
		for id := range byAgent {
			agents = append(agents, id)
		}
		slices.Sort(agents)
		for _, id := range agents {
			a, err := s.Agent(id)
			if err != nil || a.Type != AgentAI || a.Status != AgentActive {
				continue
			}
			running := 0
			for _, o := range all.assignedTo(id) {
				if o.ParentID == "" && o.Status == StatusInProgress {
					running++
				}
			}
			queue := byAgent[id]
			slices.SortStableFunc(queue, queueOrder)
			for _, t := range queue {
				if running >= a.MaxParallel() {
					break
				}
				why := fmt.Sprintf("queued for %s: its dependencies are done and %s has room (%d of max_parallel_tasks %d in progress)",
					id, id, running, a.MaxParallel())
				if len(t.Dependencies) == 0 {
					why = fmt.Sprintf("queued for %s: %s has room (%d of max_parallel_tasks %d in progress)", id, id, running, a.MaxParallel())
				}
				t, err := s.Task(t.ID) // the file: a task broken by hand must not start
				if err != nil {
					continue
				}
				if _, err := s.applyStatus(QueueActor, all, t, StatusInProgress, why); err != nil {
					continue // another rule holds it back; it stays queued
				}
				running++
				started = append(started, t)
			}
		}
		return nil
	})
	return started, err
}

// queued reports whether t waits in its assignee's queue and may start now.
func queued(all taskSet, t *Task) bool {
	if t.ParentID != "" || t.Status != StatusTodo || t.AssigneeID == "" {
		return false
	}
	if t.Approval == ApprovalPending || t.Approval == ApprovalRejected {
		return false
	}
	for _, d := range t.Dependencies {
		if !DependencyMet(all.task(d)) {
			return false
		}
	}
	return true
}

// queueOrder puts the higher priority first, then the older task, then the smaller id.
func queueOrder(a, b *Task) int {
	if pa, pb := slices.Index(Priorities, a.Priority), slices.Index(Priorities, b.Priority); pa != pb {
		return pb - pa
	}
	if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// BlockRoots maps each blocked task that has a blocked ancestor to its topmost blocked
// ancestor: the one block a person must look at, whatever blocked the tasks under it (its
// cascade, or their workers stopping because of it). byID holds every task.
func BlockRoots(byID map[string]*Task) map[string]string {
	out := map[string]string{}
	for id, t := range byID {
		if t.Status != StatusBlocked {
			continue
		}
		root := ""
		seen := map[string]bool{id: true}
		for p := byID[t.ParentID]; p != nil && !seen[p.ID]; p = byID[p.ParentID] {
			seen[p.ID] = true
			if p.Status == StatusBlocked {
				root = p.ID
			}
		}
		if root != "" {
			out[id] = root
		}
	}
	return out
}
