package coordinator

import (
	"fmt"
	"strings"
	"time"

	"github.com/aipm/aipm/filestore"
)

// endTalks ends at once the delegations and conversations that wait on an agent that will
// not answer: one made inactive, or one whose chat work this run gave up starting
// (failedStart, or a start that needs a person). They would otherwise wait out their
// timeouts.
//
// agents is the agents as last listed; nil lists them.
func (c *Coordinator) endTalks(agents []*filestore.Agent) {
	if agents == nil {
		var err error
		if agents, err = c.s.Agents(); err != nil {
			c.Say("cannot list agents: %v", err)
			return
		}
	}
	var gone []filestore.Unreachable
	for _, ag := range agents {
		if ag.Status == filestore.AgentInactive {
			gone = append(gone, filestore.Unreachable{AgentID: ag.ID, Reason: filestore.EndAgentInactive})
		} else if why, ok := c.gaveUp[workKey{ag.ID, filestore.PurposeChat}]; ok {
			gone = append(gone, filestore.Unreachable{AgentID: ag.ID, Reason: filestore.EndAgentCannotStart, Detail: clipText(why, 300)})
		}
	}
	if len(gone) == 0 {
		return
	}
	dlgs, convs, err := c.s.EndTalksWith(gone)
	if err != nil {
		c.Say("ending what waits on agents that will not answer: %v", err)
		return
	}
	if len(dlgs)+len(convs) > 0 {
		c.Say("ended what waited on an agent that will not answer (inactive, or never starts): %s", strings.Join(append(dlgs, convs...), ", "))
	}
}

// clipText cuts s to at most n runes, marking the cut.
func clipText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// failedStart backs off a start that failed, never authenticated or was stopped as hung
// (a stopped one at least as long as it held its slot, so that it holds it at most half
// the time); after settings.max_failed_starts of them in a row, with the work still
// there, it gives the work up for this run and ends what waits on it (endWaits).
func (c *Coordinator) failedStart(k workKey, sp *filestore.Spawn, why string, held time.Duration, w filestore.Work, left bool) {
	c.backoff(k, sp, why, held)
	if !left {
		return
	}
	c.broken[k]++
	limit := 5
	if p, err := c.s.Project(); err == nil {
		limit = p.Settings.FailedStarts()
	}
	if c.broken[k] < limit {
		return
	}
	fix := fmt.Sprintf("its last %d starts failed (settings.max_failed_starts), the last one: %s", c.broken[k], why)
	c.gaveUp[k] = fix
	delete(c.until, k)
	c.Say("give up %s: %s; fix its command (settings.agent_commands.%s), then run aipm run again", k, fix, sp.AIType)
	c.endWaits(k, w, fix)
}

// endWaits ends what waits on work this run gave up: the agent's task is blocked with
// the reason (its manager, or a person, decides what next), and the delegations and
// conversations that wait on its chat session end (endTalks, on every look from now on).
func (c *Coordinator) endWaits(k workKey, w filestore.Work, why string) {
	if k.purpose == filestore.PurposeChat {
		c.endTalks(nil)
		return
	}
	if w.TaskID == "" {
		return
	}
	reason := fmt.Sprintf("aipm run cannot start %s for it: %s; once that is mended, set it in progress again", k.agent, why)
	if _, err := c.s.SetTaskStatus(filestore.QueueActor, w.TaskID, filestore.StatusBlocked, reason); err != nil {
		c.Say("%s: blocking task %s: %v", k, w.TaskID, err)
		return
	}
	c.Say("blocked task %s: %s", w.TaskID, reason)
}
