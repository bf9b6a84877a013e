package merge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aipm/aipm/filestore"
	"github.com/aipm/aipm/filestore/internal/engine"
)

// obj is one JSON object (filestore.Object), its values kept raw.
type obj = filestore.Object

// Conflict is a field both sides changed in a way no rule decides: free text, or a
// status neither side reached by the transition table.
type Conflict struct {
	Field  string `json:"field"` // dotted for nested fields: settings.language
	Ours   string `json:"ours"`  // compact JSON of each side's value
	Theirs string `json:"theirs"`
}

// Result is what Merge made of three versions of one entity file.
type Result struct {
	// Data is the merged file, stably formatted; with conflicts it holds, around each
	// conflicting field, Git's conflict markers (ours first), and the rest merged.
	Data      []byte
	Conflicts []Conflict
}

// Merge is the three-way merge of an entity file of the given kind (see EntityKind), the
// one Git runs through `aipm merge-driver` when both sides of a merge or rebase changed
// the same file. base is the common ancestor (empty when both sides added the file).
//
// It merges field by field. A field one side changed is taken from that side. A field
// both sides changed is decided by a rule that keeps the entity valid:
//   - a task's status, with the fields that go with it (status_changed_*, blocked_reason,
//     the cascade fields, completion_*, completed_at): the side whose status is reachable
//     from the base's by the transition table; if both are, the later status_changed_at
//     (then a finished status, then the greater name). Neither reachable is a conflict.
//   - a conversation's state, a delegation's or an execution's status, with their end
//     fields: the side further along (ended or expired past terminating past active past
//     pending; completed or failed past processing past pending); two different ends are
//     decided by the later end time.
//   - dependencies and a conversation's notified list: both sides' additions and
//     removals, sorted; turns: the base plus both sides' increments (each side counted
//     its own messages, so they add up; RepairMerged then ends a live conversation the
//     sum brings to max_turns).
//   - times (*_at): the later.
//   - free text (titles, descriptions, names, roles, prompts, purposes, contexts, results,
//     summaries) and identity fields (id, project_id, created_*): a conflict.
//   - any other field (priority, assignee, settings, …): the side updated later
//     (updated_at), then the greater value — so the result does not depend on which side
//     is "ours".
//
// version becomes one more than the larger of both sides. Merge is symmetric: swapping
// ours and theirs gives the same Data when there is no conflict.
func Merge(kind string, base, ours, theirs []byte) (*Result, error) {
	r, ok := mergeRulesFor[kind]
	if !ok {
		return nil, fmt.Errorf("merge: unknown entity kind %q", kind)
	}
	var b, o, t obj
	if len(bytes.TrimSpace(base)) == 0 {
		b = obj{}
	} else if err := filestore.DecodeObject(base, &b); err != nil {
		return nil, fmt.Errorf("merge base: %w", err)
	}
	if err := filestore.DecodeObject(ours, &o); err != nil {
		return nil, fmt.Errorf("ours: %w", err)
	}
	if err := filestore.DecodeObject(theirs, &t); err != nil {
		return nil, fmt.Errorf("theirs: %w", err)
	}
	m := &merger{rules: r, b: b, o: o, t: t, later: laterSide(o, t)}
	merged, conflicts := m.object("", b, o, t)
	merged["version"] = json.RawMessage(fmt.Sprint(max(intField(o, "version"), intField(t, "version")) + 1))
	if len(conflicts) == 0 {
		data, err := r.encode(merged)
		if err != nil {
			return nil, err
		}
		return &Result{Data: data}, nil
	}
	// Two documents, each with one side's values for the conflicting fields and the merge
	// elsewhere, differ only in those fields: the markers go around them.
	oursDoc, theirsDoc := cloneObj(merged), cloneObj(merged)
	for _, c := range conflicts {
		setPath(oursDoc, c.Field, json.RawMessage(c.Ours))
		setPath(theirsDoc, c.Field, json.RawMessage(c.Theirs))
	}
	od, err := r.encode(oursDoc)
	if err != nil {
		return nil, err
	}
	td, err := r.encode(theirsDoc)
	if err != nil {
		return nil, err
	}
	return &Result{Data: filestore.MarkConflicts(od, td), Conflicts: conflicts}, nil
}

func cloneObj(o obj) obj {
	c := make(obj, len(o))
	for k, v := range o {
		c[k] = v
	}
	return c
}

// setPath sets a dotted field in o, descending into (copies of) nested objects.
func setPath(o obj, field string, v json.RawMessage) {
	head, rest, nested := strings.Cut(field, ".")
	if !nested {
		o[head] = v
		return
	}
	var inner obj
	if json.Unmarshal(o[head], &inner) != nil || inner == nil {
		inner = obj{}
	}
	setPath(inner, rest, v)
	data, _ := json.Marshal(inner)
	o[head] = data
}

// statusGroup is a status field with the fields that change with it: when both sides
// changed any of them, pick decides which side's whole group is taken.
type statusGroup struct {
	members []string // the status field first
	// pick returns -1 for ours, +1 for theirs, 0 to merge the members field by field; or
	// conflict when the status cannot be decided.
	pick func(b, o, t obj) (side int, conflict bool)
}

type mergeRules struct {
	text     []string // both changed: a conflict
	sets     []string // three-way set merge, sorted
	counters []string // counts of events: each side's increments added up
	groups   []statusGroup
	encode   func(obj) ([]byte, error) // through the entity's struct: its field order
}

var mergeRulesFor = map[string]mergeRules{
	filestore.KindTask: {
		text: []string{"title", "description"},
		sets: []string{"dependencies"},
		groups: []statusGroup{
			{members: []string{"status", "status_changed_by", "status_changed_at", "blocked_reason", "cascade_from",
				"status_before_cascade", "completion_result", "completion_summary", "completed_at"}, pick: pickTaskStatus},
			{members: []string{"approval", "approved_by", "rejected_reason"}, pick: pickLaterUpdate},
		},
		encode: encodeAs[filestore.Task],
	},
	filestore.KindConversation: {
		text:     []string{"purpose"},
		sets:     []string{"notified"},
		counters: []string{"turns"},
		groups: []statusGroup{{members: []string{"state", "ended_at", "ended_by", "end_reason"},
			pick: pickByRank("state", "ended_at", map[string]int{filestore.ConvPending: 0, filestore.ConvActive: 1, filestore.ConvTerminating: 2, filestore.ConvEnded: 3, filestore.ConvExpired: 3})}},
		encode: encodeAs[filestore.Conversation],
	},
	filestore.KindDelegation: {
		text: []string{"purpose", "context"},
		groups: []statusGroup{{members: []string{"status", "result", "completed_at"},
			pick: pickByRank("status", "completed_at", map[string]int{filestore.DelegationPending: 0, filestore.DelegationProcessing: 1, filestore.DelegationCompleted: 2, filestore.DelegationFailed: 2})}},
		encode: encodeAs[filestore.Delegation],
	},
	filestore.KindExecution: {
		groups: []statusGroup{{members: []string{"status", "completed_at", "duration_seconds", "exit_code", "summary"},
			pick: pickByRank("status", "completed_at", map[string]int{filestore.ExecRunning: 0, filestore.ExecCompleted: 1, filestore.ExecFailed: 1})}},
		encode: encodeAs[filestore.Execution],
	},
	filestore.KindAgent: {
		text:   []string{"name", "role", "system_prompt"},
		encode: encodeAs[filestore.Agent],
	},
	filestore.KindProject: {
		text:   []string{"name", "description", "settings.agent_commands"},
		encode: encodeAs[filestore.Project],
	},
	// Two machines that each took an agent's lease: the remote decides, as a
	// compare-and-swap would. Theirs (in a sync round: the remote's, which it accepted
	// first) wins whole, so one machine runs the agent and the other never starts it —
	// except against a human's move made since the common version, which no claim or
	// takeover undoes (two moves: the later). The same machine's renewals merge field by
	// field (the later times).
	filestore.KindLease: {
		groups: []statusGroup{{members: []string{"machine_id", "acquired_at", "renewed_at", "expires_at", "chat_live", "chat_seen_at", "moved_by", "home"},
			pick: pickLease}},
		encode: encodeAs[filestore.Lease],
	},
}

func pickLease(b, o, t obj) (int, bool) {
	if filestore.CompactJSON(o["machine_id"]) == filestore.CompactJSON(t["machine_id"]) {
		if c := cmpTime(o["renewed_at"], t["renewed_at"]); c != 0 {
			return -c, false
		}
		return tieBreak(o, t), false
	}
	switch om, tm := leaseMoved(b, o), leaseMoved(b, t); {
	case om && !tm:
		return -1, false
	case tm && !om:
		return 1, false
	case om && tm:
		if c := cmpTime(o["acquired_at"], t["acquired_at"]); c != 0 {
			return -c, false
		}
		return tieBreak(o, t), false
	}
	return 1, false
}

// leaseMoved says side s holds a move made since base: a new taking by a human's move.
func leaseMoved(b, s obj) bool {
	var by string
	if json.Unmarshal(s["moved_by"], &by) != nil || by == "" {
		return false
	}
	return filestore.CompactJSON(b["acquired_at"]) != filestore.CompactJSON(s["acquired_at"]) ||
		filestore.CompactJSON(b["machine_id"]) != filestore.CompactJSON(s["machine_id"])
}

// identity fields never change after creation: both sides changing them is a conflict.
var identityFields = []string{"id", "project_id", "created_at", "created_by"}

// encodeAs writes o through the entity struct T, so the result has the store's key order
// and formatting and reads back to the same bytes.
func encodeAs[T any](o obj) ([]byte, error) {
	data, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	return engine.EncodeJSON(&v)
}

type merger struct {
	rules   mergeRules
	b, o, t obj
	later   int // -1 ours, +1 theirs: the side updated later
}

// object merges one JSON object; prefix is the dotted path to it ("" at the top).
func (m *merger) object(prefix string, b, o, t obj) (obj, []Conflict) {
	out := obj{}
	var conflicts []Conflict
	decided := map[string]bool{}
	if prefix == "" {
		for _, g := range m.rules.groups {
			if !changed(b, o, g.members) || !changed(b, t, g.members) {
				continue // one side or none: field by field takes it
			}
			side, conflict := g.pick(b, o, t)
			if conflict {
				f := g.members[0]
				conflicts = append(conflicts, Conflict{Field: f, Ours: filestore.CompactJSON(o[f]), Theirs: filestore.CompactJSON(t[f])})
				setOrDelete(out, f, o[f])
				decided[f] = true
				continue
			}
			if side == 0 {
				continue
			}
			src := o
			if side > 0 {
				src = t
			}
			for _, f := range g.members {
				setOrDelete(out, f, src[f])
				decided[f] = true
			}
		}
	}
	keys := map[string]bool{}
	for _, x := range []obj{b, o, t} {
		for k := range x {
			keys[k] = true
		}
	}
	for _, k := range filestore.SortedKeys(keys) {
		if decided[k] {
			continue
		}
		field := k
		if prefix != "" {
			field = prefix + "." + k
		}
		bv, ov, tv := b[k], o[k], t[k]
		switch {
		case slices.Contains(m.rules.counters, field) && !filestore.SameJSON(bv, ov) && !filestore.SameJSON(bv, tv):
			// Both counted, the same number or not: both happened.
			v, _ := m.both(field, bv, ov, tv)
			setOrDelete(out, k, v)
		case filestore.SameJSON(ov, tv):
			setOrDelete(out, k, ov)
		case filestore.SameJSON(bv, ov):
			setOrDelete(out, k, tv)
		case filestore.SameJSON(bv, tv):
			setOrDelete(out, k, ov)
		default:
			v, c := m.both(field, bv, ov, tv)
			if c != nil {
				conflicts = append(conflicts, c...)
			}
			setOrDelete(out, k, v)
		}
	}
	return out, conflicts
}

// both decides a field both sides changed differently.
func (m *merger) both(field string, bv, ov, tv json.RawMessage) (json.RawMessage, []Conflict) {
	conflict := []Conflict{{Field: field, Ours: filestore.CompactJSON(ov), Theirs: filestore.CompactJSON(tv)}}
	if slices.Contains(m.rules.text, field) || slices.Contains(identityFields, field) {
		return ov, conflict
	}
	var bo, oo, to obj
	if json.Unmarshal(ov, &oo) == nil && oo != nil && json.Unmarshal(tv, &to) == nil && to != nil {
		if json.Unmarshal(bv, &bo) != nil || bo == nil {
			bo = obj{}
		}
		merged, cs := m.object(field, bo, oo, to)
		data, err := json.Marshal(merged)
		if err != nil {
			return ov, conflict
		}
		return data, cs
	}
	switch {
	case slices.Contains(m.rules.sets, field):
		return mergeSet(bv, ov, tv), nil
	case slices.Contains(m.rules.counters, field):
		// Each side counted its own messages since the base: both happened, so the
		// increments add up (the larger would let a merged conversation run past
		// max_turns unnoticed).
		return json.RawMessage(fmt.Sprint(intOf(ov) + intOf(tv) - intOf(bv))), nil
	case strings.HasSuffix(field, "_at"):
		if cmpTime(ov, tv) >= 0 {
			return ov, nil
		}
		return tv, nil
	}
	if side := m.later; side < 0 || (side == 0 && filestore.CompactJSON(ov) > filestore.CompactJSON(tv)) {
		return ov, nil
	}
	return tv, nil
}

// laterSide is -1 when ours was updated later, +1 when theirs was, 0 on a tie.
func laterSide(o, t obj) int {
	switch c := cmpTime(o["updated_at"], t["updated_at"]); {
	case c > 0:
		return -1
	case c < 0:
		return 1
	}
	return 0
}

// pickLaterUpdate takes the group of the side updated later, then of the greater bytes.
func pickLaterUpdate(b, o, t obj) (int, bool) {
	if side := laterSide(o, t); side != 0 {
		return side, false
	}
	return tieBreak(o, t), false
}

// tieBreak orders the two sides by their bytes, so that a tie is decided the same way
// whichever side is ours.
func tieBreak(o, t obj) int {
	od, _ := json.Marshal(o)
	td, _ := json.Marshal(t)
	switch c := bytes.Compare(od, td); {
	case c > 0:
		return -1
	case c < 0:
		return 1
	}
	return 0
}

// pickTaskStatus decides a task status both sides changed: only a status the table can
// reach from the base's is possible; of two, the later change wins.
func pickTaskStatus(b, o, t obj) (int, bool) {
	bs, sO, sT := str(b["status"]), str(o["status"]), str(t["status"])
	oOK := sO == bs || filestore.Reachable(bs, sO)
	tOK := sT == bs || filestore.Reachable(bs, sT)
	if len(b) == 0 {
		oOK, tOK = slices.Contains(filestore.Statuses, sO), slices.Contains(filestore.Statuses, sT)
	}
	switch {
	case oOK && !tOK:
		return -1, false
	case tOK && !oOK:
		return 1, false
	case !oOK && !tOK:
		return 0, sO != sT
	}
	switch c := cmpTime(o["status_changed_at"], t["status_changed_at"]); {
	case c > 0:
		return -1, false
	case c < 0:
		return 1, false
	}
	if filestore.Finished(sO) != filestore.Finished(sT) {
		if filestore.Finished(sO) {
			return -1, false
		}
		return 1, false
	}
	if sO != sT {
		if sO > sT {
			return -1, false
		}
		return 1, false
	}
	return 0, false // the same status at the same time: merge its fields one by one
}

// pickByRank decides a state both sides changed: the one further along wins; two
// different states at the same rank (completed and failed) by the later end time.
func pickByRank(field, endField string, rank map[string]int) func(b, o, t obj) (int, bool) {
	return func(b, o, t obj) (int, bool) {
		sO, sT := str(o[field]), str(t[field])
		ro, okO := rank[sO]
		rt, okT := rank[sT]
		switch {
		case !okO && !okT:
			return 0, sO != sT
		case !okT || (okO && ro > rt):
			return -1, false
		case !okO || rt > ro:
			return 1, false
		case sO == sT:
			return 0, false
		}
		switch c := cmpTime(o[endField], t[endField]); {
		case c > 0:
			return -1, false
		case c < 0:
			return 1, false
		}
		if sO > sT {
			return -1, false
		}
		return 1, false
	}
}

// changed reports whether side differs from base in any of the fields.
func changed(base, side obj, fields []string) bool {
	for _, f := range fields {
		if !filestore.SameJSON(base[f], side[f]) {
			return true
		}
	}
	return false
}

// mergeSet is the three-way merge of a list of strings as a set: what either side added
// is in, what either side removed is out; sorted.
func mergeSet(bv, ov, tv json.RawMessage) json.RawMessage {
	var b, o, t []string
	json.Unmarshal(bv, &b)
	json.Unmarshal(ov, &o)
	json.Unmarshal(tv, &t)
	out := []string{}
	for _, x := range append(slices.Clone(o), t...) {
		if slices.Contains(out, x) {
			continue
		}
		inB := slices.Contains(b, x)
		removed := inB && (!slices.Contains(o, x) || !slices.Contains(t, x))
		if !removed {
			out = append(out, x)
		}
	}
	slices.Sort(out)
	data, _ := json.Marshal(out)
	return data
}

func setOrDelete(o obj, k string, v json.RawMessage) {
	if v == nil {
		delete(o, k)
		return
	}
	o[k] = v
}

func str(v json.RawMessage) string {
	var s string
	json.Unmarshal(v, &s)
	return s
}

func intOf(v json.RawMessage) int {
	var n int
	json.Unmarshal(v, &n)
	return n
}

func intField(o obj, k string) int { return intOf(o[k]) }

// cmpTime compares two JSON times; null, absent and unparseable sort first.
func cmpTime(a, b json.RawMessage) int {
	ta, oka := timeOf(a)
	tb, okb := timeOf(b)
	switch {
	case !oka && !okb:
		return 0
	case !oka:
		return -1
	case !okb:
		return 1
	}
	return ta.Compare(tb)
}

func timeOf(v json.RawMessage) (time.Time, bool) {
	var t *time.Time
	if v == nil || json.Unmarshal(v, &t) != nil || t == nil {
		return time.Time{}, false
	}
	return *t, true
}

// ResolveConflict takes one side (ours true: the first part of every conflict) of a JSON
// entity file holding conflict markers and returns it stably formatted, with version one
// more than either side's, ready to be written back.
func ResolveConflict(kind string, data []byte, takeOurs bool) ([]byte, error) {
	r, ok := mergeRulesFor[kind]
	if !ok {
		return nil, fmt.Errorf("resolve: unknown entity kind %q", kind)
	}
	ours, theirs, ok := filestore.SplitConflict(data)
	if !ok {
		return nil, fmt.Errorf("the conflict markers are not well nested: edit the file by hand")
	}
	var o, t obj
	if err := filestore.DecodeObject(ours, &o); err != nil {
		return nil, fmt.Errorf("our side is not valid JSON (%v): edit the file by hand", err)
	}
	if err := filestore.DecodeObject(theirs, &t); err != nil {
		return nil, fmt.Errorf("their side is not valid JSON (%v): edit the file by hand", err)
	}
	v := fmt.Sprint(max(intField(o, "version"), intField(t, "version")) + 1)
	pick := t
	if takeOurs {
		pick = o
	}
	pick["version"] = json.RawMessage(v)
	return r.encode(pick)
}

// CheckEntity says whether data, another clone's version of an entity file of kind, is one
// this clone can use: it decodes as that entity (a project names its id and owner). A
// file a merge left with conflict markers passes: `aipm doctor` names it and `aipm
// resolve` settles it. A sync round keeps its own version of a file that fails, so a
// garbage project.json from a remote does not stop every clone.
func CheckEntity(kind string, data []byte) error {
	if filestore.HasConflictMarkers(data) {
		return nil
	}
	var v any
	switch kind {
	case filestore.KindTask:
		v = &filestore.Task{}
	case filestore.KindProject:
		v = &filestore.Project{}
	case filestore.KindAgent:
		v = &filestore.Agent{}
	case filestore.KindConversation:
		v = &filestore.Conversation{}
	case filestore.KindDelegation:
		v = &filestore.Delegation{}
	case filestore.KindExecution:
		v = &filestore.Execution{}
	case filestore.KindLease:
		v = &filestore.Lease{}
	default:
		return nil
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("not a valid %s file: %v", kind, err)
	}
	if p, ok := v.(*filestore.Project); ok && (p.ID == "" || p.OwnerID == "") {
		return fmt.Errorf("a project file with no id or owner_id")
	}
	return nil
}
