package coordinator

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aipm/aipm/filestore"
)

// claimLeases takes or renews the leases of the AI agents this machine may run — those
// with work or a process here that it can start (their command is set and approved here),
// and those whose lease it already holds — and stops the processes of an agent whose
// lease has gone to another machine (a move, or a merge that kept the other machine's
// claim): an agent runs on one machine at a time. It returns the agents this machine
// holds.
//
// With a remote (Options.Remote), holding means the remote holds the lease: a claim
// counts once a sync round has pushed it (the remote accepts one of two racing claims,
// the other side's merge then keeps it), and an agent is stopped a margin before the
// remote's copy of its lease lapses, when renewals stop reaching the remote (fencing:
// another machine may take the lease only once it lapsed). Without a reachable remote
// this machine claims no new agent; after a failure it lets another machine's lapsed
// lease alone for takeoverWait (a lease's length), so that the machine that held it
// renews it first.
func (c *Coordinator) claimLeases(p *filestore.Project, ais []*filestore.Agent, works map[string]filestore.Work) map[string]bool {
	now := c.s.Now()
	local := map[string]*filestore.Lease{}
	if leases, err := c.s.Leases(); err != nil {
		c.Say("cannot read the agent leases: %v", err)
	} else {
		for _, l := range leases {
			local[l.AgentID] = l
		}
	}
	var pub map[string]*filestore.Lease
	var since time.Time
	if c.opt.Remote != nil {
		var err error
		pub, since, err = c.opt.Remote.Published()
		c.noteRemote(since, err)
	}
	var ids, homeward []string
	why := map[string]string{}
	for _, ag := range ais {
		w := works[ag.ID]
		_, task := c.running[workKey{ag.ID, filestore.PurposeTask}]
		_, chat := c.running[workKey{ag.ID, filestore.PurposeChat}]
		own := local[ag.ID] != nil && local[ag.ID].MachineID == c.machine
		// Its own leases it keeps renewing (a move made them its own before any work),
		// so that its agents' presence stays known to their partners elsewhere. A free
		// one it takes only for an agent it can start: another machine may.
		ac, ok := p.Settings.AgentCommands[AIType(ag)]
		startable := ok
		if ok {
			startable, _, _ = c.approved(AIType(ag), ac, c.s.Root())
		}
		// Placed here by a move, and taken over while this machine was away: asked back,
		// and taken as soon as its holder lets it go, work or not (as a move makes it ours).
		home := false
		if l := local[ag.ID]; startable && l != nil && l.Home == c.machine && l.MachineID != c.machine {
			homeward = append(homeward, ag.ID)
			home = !l.Held(now)
		}
		if !(task || chat || c.ours[ag.ID] || own || home || startable && (w.TaskID != "" || w.Chat)) {
			continue
		}
		if c.opt.Remote != nil && !own {
			if wait := c.mayClaim(local[ag.ID], now, since); wait != "" {
				why[ag.ID] = wait
				continue
			}
		}
		ids = append(ids, ag.ID)
	}
	if err := c.s.AskHome(c.machine, homeward); err != nil {
		c.Say("cannot ask for this machine's agents back: %v", err)
	}
	got, err := c.s.ClaimLeases(c.machine, ids)
	if err != nil {
		c.Say("cannot claim agent leases: %v", err)
		got = nil // start nothing: without the leases, another machine may run them
	}
	mine := map[string]bool{}
	c.fenceAt = time.Time{}
	for id, l := range got {
		if l != nil && l.MachineID == c.machine && l.Held(now) && l.HomeWaits(c.machine, now, c.leaseTTL) && !c.runs(id) {
			// Its home machine runs again: it goes back there now that nothing of it runs here.
			if back, err := c.s.ReturnHome(c.machine, id); err != nil {
				c.Say("lease %s: cannot let it go back to machine %s: %v", id, l.Home, err)
			} else if back {
				c.Say("lease %s: back to its home machine %s, which runs again", id, l.Home)
				continue
			}
		}
		if l != nil && l.MachineID == c.machine && l.Held(now) {
			if c.opt.Remote != nil {
				at, wait := c.published(l, pub[id], now)
				if wait != "" {
					why[id] = wait
					continue
				}
				if c.fenceAt.IsZero() || at.Before(c.fenceAt) {
					c.fenceAt = at
				}
			}
			mine[id] = true
			if !c.ours[id] {
				c.Say("lease %s: held by this machine (%s) until %s", id, c.machine, l.ExpiresAt.Format(time.RFC3339))
			}
		} else if c.ours[id] {
			c.Say("lease %s: %s", id, c.leaseHolder(id))
		}
	}
	c.ours, c.leaseWhy = mine, why
	active := map[string]bool{}
	for _, ag := range ais {
		active[ag.ID] = true
	}
	for k, pr := range c.running {
		if !mine[k.agent] && !pr.moved && pr.cmd.Process != nil {
			switch {
			case !active[k.agent]:
				// Made inactive (its lease is let go for that reason, not taken elsewhere).
				c.Say("stop %s: the agent was made inactive", k)
				pr.retired = true
			case why[k.agent] != "":
				c.Say("stop %s: %s", k, why[k.agent])
				pr.fenced = true
			default:
				c.Say("stop %s: its lease is no longer this machine's", k)
			}
			pr.moved = true
			signalGroup(pr.cmd.Process.Pid, false)
		}
	}
	return mine
}

// takeoverWait is how long, after the remote became reachable again (or the run began),
// this machine leaves another machine's lapsed lease alone: the holder, back from the
// same partition, renews it first, so a partition changes no placement.
func (c *Coordinator) takeoverWait() time.Duration { return c.leaseTTL }

// fenceMargin is how long before the remote's copy of a lease lapses this machine stops
// the agent when its renewals no longer reach the remote: the clock skew between two
// machines that it tolerates (10 s with the default lease of 60 s).
func (c *Coordinator) fenceMargin() time.Duration { return c.leaseTTL / 6 }

// mayClaim says why this machine may not claim now an agent whose lease (l, nil if none)
// is not its own, given since when the remote has been reachable ("": it may).
func (c *Coordinator) mayClaim(l *filestore.Lease, now, since time.Time) string {
	remote := c.opt.Remote.Remote()
	switch {
	case since.IsZero():
		return fmt.Sprintf("no claim until a sync round reaches %s: it decides which machine runs an agent", remote)
	case l == nil || l.Held(now):
		return "" // free, or held elsewhere (left alone by the claim)
	}
	if wait := since.Add(c.takeoverWait()); now.Before(wait) {
		return fmt.Sprintf("its lease of machine %s lapsed; left to that machine until %s, %s after %s answered again",
			l.MachineID, wait.Format(time.RFC3339), c.takeoverWait(), remote)
	}
	return ""
}

// published says whether the remote holds this machine's lease l (its copy pub): until
// when this machine may run the agent (the remote's expiry less the fencing margin), or
// why it may not now.
func (c *Coordinator) published(l, pub *filestore.Lease, now time.Time) (until time.Time, wait string) {
	remote := c.opt.Remote.Remote()
	if pub == nil || pub.MachineID != c.machine || !pub.AcquiredAt.Equal(l.AcquiredAt) {
		return time.Time{}, fmt.Sprintf("claimed by this machine; starts once %s holds the claim (the next sync round pushes it)", remote)
	}
	until = pub.ExpiresAt.Add(-c.fenceMargin())
	if !now.Before(until) {
		return time.Time{}, fmt.Sprintf("no renewal has reached %s since %s; stopped before the lease lapses there at %s, so that no other machine runs it meanwhile",
			remote, pub.RenewedAt.Format(time.RFC3339), pub.ExpiresAt.Format(time.RFC3339))
	}
	return until, ""
}

// noteRemote says once when the remote stops or starts answering the sync rounds.
func (c *Coordinator) noteRemote(since time.Time, err error) {
	reachable := !since.IsZero()
	if !reachable && err == nil || reachable == c.remoteUp && c.remoteNoted {
		return // no round yet, or nothing new
	}
	c.remoteUp, c.remoteNoted = reachable, true
	remote := c.opt.Remote.Remote()
	if reachable {
		c.Say("leases: %s answers; claims decided there", remote)
		return
	}
	reason := strings.Join(strings.Fields(err.Error()), " ")
	c.Say("leases: %s does not answer (%s): claiming no agent; this machine's agents run until their leases could lapse there, and messages wait in the files",
		remote, reason)
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

// runs says whether a process of the agent runs here (its task or its chat session).
func (c *Coordinator) runs(agentID string) bool {
	_, task := c.running[workKey{agentID, filestore.PurposeTask}]
	_, chat := c.running[workKey{agentID, filestore.PurposeChat}]
	return task || chat
}
