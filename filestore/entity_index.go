package filestore

import (
	"slices"
	"sort"
)

// The conversation and delegation caches (see cache.go) with the sets their hot paths
// look up: by agent (either side of a conversation; the delegating agent), by task, and
// by state or status.

// idIndex maps a key to a set of entity ids.
type idIndex map[string]map[string]struct{}

func (x idIndex) move(id string, old, cur []string) {
	for _, k := range old {
		setDel(x, k, id)
	}
	for _, k := range cur {
		setAdd(x, k, id)
	}
}

type convIndex struct{ byAgent, byTask, byState idIndex }

func (x *convIndex) set(i int) idIndex { return [...]idIndex{x.byAgent, x.byTask, x.byState}[i] }

func (x *convIndex) reset() {
	*x = convIndex{byAgent: idIndex{}, byTask: idIndex{}, byState: idIndex{}}
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
	x.byAgent.move(id, part(old, 0, 2), part(cur, 0, 2))
	x.byTask.move(id, part(old, 2, 3), part(cur, 2, 3))
	x.byState.move(id, part(old, 3, 4), part(cur, 3, 4))
}

func newConvCache(s *Store) *dirCache[Conversation] {
	c := newDirCache(s.eng, "conversations", isEntityID(PrefixConversation), s.readConversation)
	c.keys, c.done, c.persist = convKeys, convFinished, true
	c.doneKeys = func(k []string) bool { return convStateFinished(k[3]) }
	c.reset = s.cix.reset
	c.index = s.cix.update
	c.sets, c.nidx, c.minKeys = s.cix.set, 3, 4
	c.slot = func(pos int) int { return [...]int{0, 0, 1, 2}[pos] } // initiator, participant, task, state
	s.cix.reset()
	return c
}

func cloneConv(c *Conversation) *Conversation {
	d := *c
	d.Notified = slices.Clone(c.Notified)
	return &d
}

type dlgIndex struct{ byAgent, byTask, byStatus idIndex }

func (x *dlgIndex) set(i int) idIndex { return [...]idIndex{x.byAgent, x.byTask, x.byStatus}[i] }

func (x *dlgIndex) reset() { *x = dlgIndex{byAgent: idIndex{}, byTask: idIndex{}, byStatus: idIndex{}} }

// dlgKeys is what the index files a delegation under: agent, task, status.
func dlgKeys(d *Delegation) []string { return []string{d.AgentID, d.TaskID, d.Status} }

// dlgFinished: completed and failed delegations are read on demand.
func dlgFinished(d *Delegation) bool { return d.Finished() }

// dlgStatusFinished tells a finished delegation by its status.
func dlgStatusFinished(status string) bool {
	return status == DelegationCompleted || status == DelegationFailed
}

func (x *dlgIndex) update(id string, old, cur []string) {
	x.byAgent.move(id, part(old, 0, 1), part(cur, 0, 1))
	x.byTask.move(id, part(old, 1, 2), part(cur, 1, 2))
	x.byStatus.move(id, part(old, 2, 3), part(cur, 2, 3))
}

func newDlgCache(s *Store) *dirCache[Delegation] {
	c := newDirCache(s.eng, "delegations", isEntityID(PrefixDelegation), s.readDelegation)
	c.keys, c.done, c.persist = dlgKeys, dlgFinished, true
	c.doneKeys = func(k []string) bool { return dlgStatusFinished(k[2]) }
	c.reset = s.dix.reset
	c.index = s.dix.update
	c.sets, c.nidx, c.minKeys = s.dix.set, 3, 3
	c.slot = func(pos int) int { return pos } // agent, task, status
	s.dix.reset()
	return c
}

// probe is one constraint of a listing: the entities under any of keys in index idx.
type probe struct {
	idx  int
	keys []string
}

// narrowest returns the ids of the smallest of the probes' sets, sizing each first and
// building only that one (a key's set held in the index file is built id by id, and the
// largest, an agent's history, grows with the project); false when there is no probe.
// The caller checks the other probes on each id's keys. The set must not be changed.
func narrowest[T any](c *dirCache[T], probes ...probe) (map[string]struct{}, bool) {
	if len(probes) == 0 {
		return nil, false
	}
	best, bestN := 0, -1
	for i, p := range probes {
		n := 0
		for _, k := range p.keys {
			n += c.lookupSize(p.idx, k)
		}
		if bestN < 0 || n < bestN {
			best, bestN = i, n
		}
	}
	p := probes[best]
	if len(p.keys) == 1 {
		return c.lookup(p.idx, p.keys[0]), true
	}
	set := map[string]struct{}{}
	for _, k := range p.keys {
		for id := range c.lookup(p.idx, k) {
			set[id] = struct{}{}
		}
	}
	return set, true
}

// pick returns the ids of a candidate set, or of every cached entity, sorted.
func pick[T any](c *dirCache[T], set map[string]struct{}, narrowed bool) []string {
	var ids []string
	if narrowed {
		for id := range set {
			ids = append(ids, id)
		}
	} else {
		for id, e := range c.ents {
			if e.readable() {
				ids = append(ids, id)
			}
		}
		c.eachColdLocked(func(id string) { ids = append(ids, id) })
	}
	sort.Strings(ids)
	return ids
}

// emptySet stands for a filter key with no entity: it narrows to nothing.
var emptySet = map[string]struct{}{}
