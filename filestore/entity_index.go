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

func (x *convIndex) reset() {
	*x = convIndex{byAgent: idIndex{}, byTask: idIndex{}, byState: idIndex{}}
}

func convKeys(c *Conversation) (agents, task, state []string) {
	if c == nil {
		return nil, nil, nil
	}
	return []string{c.InitiatorID, c.ParticipantID}, []string{c.TaskID}, []string{c.State}
}

func (x *convIndex) update(id string, old, cur *Conversation) {
	oa, ot, os := convKeys(old)
	ca, ct, cs := convKeys(cur)
	x.byAgent.move(id, oa, ca)
	x.byTask.move(id, ot, ct)
	x.byState.move(id, os, cs)
}

func newConvCache(s *Store) *dirCache[Conversation] {
	c := newDirCache(s, "conversations", PrefixConversation, s.readConversation)
	c.reset = s.cix.reset
	c.index = s.cix.update
	s.cix.reset()
	return c
}

func cloneConv(c *Conversation) *Conversation {
	d := *c
	d.Notified = slices.Clone(c.Notified)
	return &d
}

type dlgIndex struct{ byAgent, byTask, byStatus idIndex }

func (x *dlgIndex) reset() { *x = dlgIndex{byAgent: idIndex{}, byTask: idIndex{}, byStatus: idIndex{}} }

func dlgKeys(d *Delegation) (agent, task, status []string) {
	if d == nil {
		return nil, nil, nil
	}
	return []string{d.AgentID}, []string{d.TaskID}, []string{d.Status}
}

func (x *dlgIndex) update(id string, old, cur *Delegation) {
	oa, ot, os := dlgKeys(old)
	ca, ct, cs := dlgKeys(cur)
	x.byAgent.move(id, oa, ca)
	x.byTask.move(id, ot, ct)
	x.byStatus.move(id, os, cs)
}

func newDlgCache(s *Store) *dirCache[Delegation] {
	c := newDirCache(s, "delegations", PrefixDelegation, s.readDelegation)
	c.reset = s.dix.reset
	c.index = s.dix.update
	s.dix.reset()
	return c
}

// smallest returns the smallest of the candidate sets that apply (nil, false if none).
func smallest(sets ...map[string]struct{}) (map[string]struct{}, bool) {
	var best map[string]struct{}
	found := false
	for _, s := range sets {
		if s == nil {
			continue
		}
		if !found || len(s) < len(best) {
			best, found = s, true
		}
	}
	return best, found
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
			if e.v != nil {
				ids = append(ids, id)
			}
		}
	}
	sort.Strings(ids)
	return ids
}

// emptySet stands for a filter key with no entity: it narrows to nothing.
var emptySet = map[string]struct{}{}

func keySet(x idIndex, key string) map[string]struct{} {
	if s := x[key]; s != nil {
		return s
	}
	return emptySet
}
