package coordinator

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/aipm/aipm/filestore"
)

// withoutHeld leaves out of ais the agents another clone brought that this machine has
// not approved (filestore.HeldAgents): nothing takes their lease or starts them. One
// whose process already runs here (changed by a merge since it started) keeps its lease
// while it ends, but its work is withdrawn, so nothing new starts for it. Each held agent
// with work is said once, with the command that approves it, and remembered for the
// summary of an idle run (heldStuck).
func (c *Coordinator) withoutHeld(ais []*filestore.Agent, works map[string]filestore.Work) []*filestore.Agent {
	c.heldWork = map[string]string{}
	held, err := c.s.HeldAgents()
	unknown := err != nil
	if unknown {
		// Whether an agent waits for an approval is unknown: start none of them.
		if !c.warned["held:err"] {
			c.warned["held:err"] = true
			c.Say("cannot read which agents wait for an approval on this machine (%v): starting none", err)
		}
	} else {
		delete(c.warned, "held:err")
		if len(held) == 0 {
			return ais
		}
	}
	return slices.DeleteFunc(ais, func(ag *filestore.Agent) bool {
		h := held[ag.ID]
		if h == nil && !unknown {
			return false
		}
		w := works[ag.ID]
		works[ag.ID] = filestore.Work{}
		if h != nil && (w.TaskID != "" || w.Chat) {
			c.heldWork[ag.ID] = heldWhy(h)
			if key := "held:" + ag.ID + ":" + h.Fingerprint; !c.warned[key] {
				c.warned[key] = true
				c.Say("%s has work but is not started: %s; review it and approve it with `aipm trust --agent %s`", ag.ID, heldWhy(h), ag.ID)
			}
		}
		_, task := c.running[workKey{ag.ID, filestore.PurposeTask}]
		_, chat := c.running[workKey{ag.ID, filestore.PurposeChat}]
		return !task && !chat
	})
}

// heldWhy says why a held agent waits: what came, from which commit and whom.
func heldWhy(h *filestore.HeldAgent) string {
	what := "it is new here"
	if !h.New {
		what = "it was " + h.Was + " here"
	}
	commit := h.Commit
	if len(commit) > 10 {
		commit = commit[:10]
	}
	by := h.Author
	if by == "" {
		by = "an unknown author"
	}
	return fmt.Sprintf("it arrived from another clone with %s (%s), in commit %s by %s, and this machine has not approved it",
		h.Runs(), what, commit, by)
}

// heldStuck says, when a run goes idle, which agents have work that only an approval of
// theirs can start, and returns that as a reason the run is stuck (none when there are none).
func (c *Coordinator) heldStuck() []string {
	if len(c.heldWork) == 0 {
		return nil
	}
	var ids []string
	for id := range c.heldWork {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	c.Say("not started because they came from another clone and wait for an approval on this machine, although they have work: %s; review them with `aipm trust --check` and approve with `aipm trust --agent %s`, then run again",
		strings.Join(ids, ", "), strings.Join(ids, ","))
	return []string{fmt.Sprintf("work for %d agent(s) from another clone not approved here", len(ids))}
}
