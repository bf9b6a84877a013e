package filestore

import (
	"slices"

	"github.com/aipm/aipm/filestore/internal/engine"
)

// The conversation and delegation caches (see cache.go) with the sets their hot paths
// look up: by agent (either side of a conversation; the delegating agent), by task, and
// by state or status.

type convIndex struct{ byAgent, byTask, byState engine.IDIndex }

func (x *convIndex) set(i int) engine.IDIndex {
	return [...]engine.IDIndex{x.byAgent, x.byTask, x.byState}[i]
}

func (x *convIndex) reset() {
	*x = convIndex{byAgent: engine.IDIndex{}, byTask: engine.IDIndex{}, byState: engine.IDIndex{}}
}

// convKeys is what the index files a conversation under: initiator, participant, task,
// state.
func convKeys(c *Conversation) []string {
	return []string{c.InitiatorID, c.ParticipantID, c.TaskID, c.State}
}

// convFinished: ended and expired conversations are read on demand.
func convFinished(c *Conversation) bool { return convStateFinished(c.State) }

// convStateFinished tells a finished conversation by its state.
func convStateFinished(state string) bool { return state == ConvEnded || state == ConvExpired }

// part returns keys[i:j], or nil when there are no keys.
func part(keys []string, i, j int) []string {
	if keys == nil {
		return nil
	}
	return keys[i:j]
}

func (x *convIndex) update(id string, old, cur []string) {
	x.byAgent.Move(id, part(old, 0, 2), part(cur, 0, 2))
	x.byTask.Move(id, part(old, 2, 3), part(cur, 2, 3))
	x.byState.Move(id, part(old, 3, 4), part(cur, 3, 4))
}

func newConvCache(s *Store) *engine.Cache[Conversation] {
	c := engine.NewCache(s.eng, "conversations", isEntityID(PrefixConversation), s.readConversation)
	c.Keys, c.Done, c.Persist = convKeys, convFinished, true
	c.DoneKeys = func(k []string) bool { return convStateFinished(k[3]) }
	c.Reset = s.cix.reset
	c.Index = s.cix.update
	c.Sets, c.NIdx, c.MinKeys = s.cix.set, 3, 4
	c.Slot = func(pos int) int { return [...]int{0, 0, 1, 2}[pos] } // initiator, participant, task, state
	s.cix.reset()
	return c
}

func cloneConv(c *Conversation) *Conversation {
	d := *c
	d.Notified = slices.Clone(c.Notified)
	return &d
}

type dlgIndex struct{ byAgent, byTask, byStatus engine.IDIndex }

func (x *dlgIndex) set(i int) engine.IDIndex {
	return [...]engine.IDIndex{x.byAgent, x.byTask, x.byStatus}[i]
}

func (x *dlgIndex) reset() {
	*x = dlgIndex{byAgent: engine.IDIndex{}, byTask: engine.IDIndex{}, byStatus: engine.IDIndex{}}
}

// dlgKeys is what the index files a delegation under: agent, task, status.
func dlgKeys(d *Delegation) []string { return []string{d.AgentID, d.TaskID, d.Status} }

// dlgFinished: completed and failed delegations are read on demand.
func dlgFinished(d *Delegation) bool { return d.Finished() }

// dlgStatusFinished tells a finished delegation by its status.
func dlgStatusFinished(status string) bool {
	return status == DelegationCompleted || status == DelegationFailed
}

func (x *dlgIndex) update(id string, old, cur []string) {
	x.byAgent.Move(id, part(old, 0, 1), part(cur, 0, 1))
	x.byTask.Move(id, part(old, 1, 2), part(cur, 1, 2))
	x.byStatus.Move(id, part(old, 2, 3), part(cur, 2, 3))
}

func newDlgCache(s *Store) *engine.Cache[Delegation] {
	c := engine.NewCache(s.eng, "delegations", isEntityID(PrefixDelegation), s.readDelegation)
	c.Keys, c.Done, c.Persist = dlgKeys, dlgFinished, true
	c.DoneKeys = func(k []string) bool { return dlgStatusFinished(k[2]) }
	c.Reset = s.dix.reset
	c.Index = s.dix.update
	c.Sets, c.NIdx, c.MinKeys = s.dix.set, 3, 3
	c.Slot = func(pos int) int { return pos } // agent, task, status
	s.dix.reset()
	return c
}

// emptySet stands for a filter key with no entity: it narrows to nothing.
var emptySet = map[string]struct{}{}
