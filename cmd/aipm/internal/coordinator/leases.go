package coordinator

import (
	"fmt"
	"slices"
	"time"

	"github.com/aipm/aipm/filestore"
)

// claimLeases takes or renews the leases of the AI agents this machine may run — those
// with work or a process here that it can start (their command is set and approved here),
// and those whose lease it already holds — and stops the processes of an agent whose
// lease has gone to another machine (a move, or a merge that kept the other machine's
// claim): an agent runs on one machine at a time. It returns the agents this machine
// holds.
func (c *Coordinator) claimLeases(p *filestore.Project, ais []*filestore.Agent, works map[string]filestore.Work) map[string]bool {
	held := map[string]bool{}
	if leases, err := c.s.Leases(); err != nil {
		c.Say("cannot read the agent leases: %v", err)
	} else {
		for _, l := range leases {
			held[l.AgentID] = l.MachineID == c.machine
		}
	}
	var ids []string
	for _, ag := range ais {
		w := works[ag.ID]
		_, task := c.running[workKey{ag.ID, filestore.PurposeTask}]
		_, chat := c.running[workKey{ag.ID, filestore.PurposeChat}]
		// Its own leases it keeps renewing (a move made them its own before any work),
		// so that its agents' presence stays known to their partners elsewhere. A free
		// one it takes only for an agent it can start: another machine may.
		ac, ok := p.Settings.AgentCommands[AIType(ag)]
		startable := ok
		if ok {
			startable, _, _ = c.approved(AIType(ag), ac, c.s.Root())
		}
		if task || chat || c.ours[ag.ID] || held[ag.ID] || startable && (w.TaskID != "" || w.Chat) {
			ids = append(ids, ag.ID)
		}
	}
	got, err := c.s.ClaimLeases(c.machine, ids)
	if err != nil {
		c.Say("cannot claim agent leases: %v", err)
		got = nil // start nothing: without the leases, another machine may run them
	}
	mine := map[string]bool{}
	for id, l := range got {
		if l != nil && l.MachineID == c.machine && l.Held(c.s.Now()) {
			mine[id] = true
			if !c.ours[id] {
				c.Say("lease %s: held by this machine (%s) until %s", id, c.machine, l.ExpiresAt.Format(time.RFC3339))
			}
		} else if c.ours[id] {
			c.Say("lease %s: %s", id, c.leaseHolder(id))
		}
	}
	c.ours = mine
	active := map[string]bool{}
	for _, ag := range ais {
		active[ag.ID] = true
	}
	for k, pr := range c.running {
		if !mine[k.agent] && !pr.moved && pr.cmd.Process != nil {
			if !active[k.agent] {
				// Made inactive (its lease is let go for that reason, not taken elsewhere).
				c.Say("stop %s: the agent was made inactive", k)
				pr.retired = true
			} else {
				c.Say("stop %s: its lease is no longer this machine's", k)
			}
			pr.moved = true
			signalGroup(pr.cmd.Process.Pid, false)
		}
	}
	return mine
}

// notElsewhere are the tasks not assigned to an agent whose lease another machine holds
// now: the queue starts only what this machine may run, so two machines never start two
// tasks of one agent.
func (c *Coordinator) notElsewhere(tasks []*filestore.Task, now time.Time) []*filestore.Task {
	leases, err := c.s.Leases()
	if err != nil {
		c.Say("cannot read the agent leases: %v", err)
		return nil
	}
	elsewhere := map[string]bool{}
	for _, l := range leases {
		if l.MachineID != c.machine && l.Held(now) {
			elsewhere[l.AgentID] = true
		}
	}
	if len(elsewhere) == 0 {
		return tasks
	}
	return slices.DeleteFunc(slices.Clone(tasks), func(t *filestore.Task) bool { return elsewhere[t.AssigneeID] })
}

// leaseHolder says where an agent runs instead of here.
func (c *Coordinator) leaseHolder(agentID string) string {
	l, err := c.s.Lease(agentID)
	switch {
	case err != nil:
		return fmt.Sprintf("its lease cannot be read: %v", err)
	case l == nil:
		return "no lease could be taken"
	case l.MachineID == c.machine:
		return "this machine's lease lapsed"
	}
	return fmt.Sprintf("leased to machine %s (`aipm agent move %s --to %s` moves it here)", l.MachineID, agentID, c.machine)
}
