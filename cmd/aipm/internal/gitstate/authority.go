package gitstate

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/aipm/aipm/filestore"
)

// Changes a commit's machine or human may not make (who wrote it: docs/security.md): an approval
// by someone who may not decide on the task, and an AI agent's line from a machine that
// does not hold the agent's lease. Both are read from the commit alone — its diff, and
// the few files of its tree and its parent's that the rule needs — so that what a round
// reads stays bounded whatever the remote holds.

// maxApprovalsChecked bounds the approval lines of one commit that a round checks;
// maxTaskFiles the task files of one commit it reads for approvals: a commit that changes
// more is named as one whose approvals were not checked.
const (
	maxApprovalsChecked = 100
	maxTaskFiles        = 1000
)

// readChunk bounds the bytes of the objects one `git cat-file --batch` reads, and so
// what a check holds at once; maxTaskBytes the bytes of task files one commit's check of
// approvals reads. A lease file is read up to maxLeaseFile (leases.go).
const (
	readChunk    = 4 << 20
	maxTaskBytes = 64 << 20
)

// readEach reads the objects specs name ("<rev>:<path>", a blob id) a chunk at a time
// and hands each to use, in order: nil for one that is missing or larger than limit,
// which is never read. It reads nothing past budget bytes in all (over reports that).
func readEach(g gitCmd, specs []string, limit, budget int64, use func(i int, data []byte)) (over bool, err error) {
	sizes, err := g.catSizes(specs)
	if err != nil {
		return false, err
	}
	var all int64
	for _, n := range sizes {
		if n > 0 && n <= limit {
			all += n
		}
	}
	if all > budget {
		return true, nil
	}
	next := 0 // the first spec not handed to use yet
	var batch []string
	var at []int
	var total int64
	flush := func(upTo int) error {
		var objs []object
		if len(batch) > 0 {
			var err error
			if objs, err = g.catBatch(batch); err != nil {
				return err
			}
		}
		j := 0
		for ; next < upTo; next++ {
			var data []byte
			if j < len(at) && at[j] == next {
				if o := objs[j]; o.ok && o.typ == "blob" {
					data = o.data
				}
				j++
			}
			use(next, data)
		}
		batch, at, total = batch[:0], at[:0], 0
		return nil
	}
	for i, n := range sizes {
		if n < 0 || n > limit {
			continue
		}
		if total+n > readChunk && len(batch) > 0 {
			if err := flush(i); err != nil {
				return false, err
			}
		}
		batch, at = append(batch, specs[i]), append(at, i)
		total += n
	}
	return false, flush(len(specs))
}

// taskApproval is what a task file says of its approval.
type taskApproval struct {
	AssigneeID string `json:"assignee_id"`
	Approval   string `json:"approval"`
	ApprovedBy string `json:"approved_by"`
}

// approvalFindings names the tasks commit id approves or rejects by someone who may not
// decide on them. The rule is ApproveTask's and RejectTask's: only an ancestor of the
// task's assignee decides, and it is named (approved_by, the approval's history line);
// the decision of a human is that human's own, so on a clone whose human is human it is
// theirs. A task that arrives already approved is a request of the assignee that an
// ancestor asked for (RequestTask), approved by that ancestor. The agents' tree is the
// commit's: the hierarchy the change was made in.
func approvalFindings(g gitCmd, id, human string, events []approvalEvent) []string {
	out, err := g.raw("diff-tree", "-r", "--no-renames", "--no-commit-id", "--root", "-z", id, "--", ":(glob)tasks/*.json")
	if err != nil || len(out) == 0 {
		return nil
	}
	type change struct{ path, old, new string }
	var changes []change
	f := strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	for i := 0; i+1 < len(f); i += 2 {
		// ":<old mode> <new mode> <old id> <new id> <status>", then the path.
		h := strings.Fields(strings.TrimPrefix(f[i], ":"))
		if len(h) != 5 || h[4] == "D" {
			continue
		}
		changes = append(changes, change{path: f[i+1], old: h[2], new: h[3]})
	}
	if len(changes) > maxTaskFiles {
		return []string{fmt.Sprintf("changes %d task files, more than a round reads for approvals (%d): they were not checked", len(changes), maxTaskFiles)}
	}
	var specs []string
	for _, c := range changes {
		specs = append(specs, c.old, c.new) // the null id of an added file is missing
	}
	byTask := map[string][]approvalEvent{}
	for _, e := range events {
		byTask[e.task] = append(byTask[e.task], e)
	}
	tree := &agentTree{g: g, rev: id, agents: map[string]*treeAgent{}}
	var what []string
	var oldData []byte
	over, err := readEach(g, specs, filestore.MaxEntityFile, maxTaskBytes, func(i int, data []byte) {
		if i%2 == 0 {
			oldData = data
			return
		}
		if len(what) >= 3 {
			return // enough to make a person look
		}
		task := strings.TrimSuffix(path.Base(changes[i/2].path), ".json")
		if f := tree.decision(task, oldData, data, human, byTask); f != "" {
			what = append(what, f)
		}
	})
	if over {
		return []string{fmt.Sprintf("changes more task data than a round reads for approvals (%d MiB): they were not checked", maxTaskBytes>>20)}
	}
	if err != nil {
		return nil
	}
	return what
}

// decision names what is wrong with the decision on task (its id is its file's name) that
// a commit changed from oldData (nil: the task is new) to data, "" when nothing is (or
// it decided nothing).
func (tree *agentTree) decision(task string, oldData, data []byte, human string, byTask map[string][]approvalEvent) string {
	var old, cur taskApproval
	if data == nil || json.Unmarshal(data, &cur) != nil {
		return "" // a file that does not decode approves nothing: doctor names it
	}
	isNew := oldData == nil || json.Unmarshal(oldData, &old) != nil
	decided := cur.Approval == filestore.ApprovalApproved || cur.Approval == filestore.ApprovalRejected
	if isNew {
		decided = cur.ApprovedBy != ""
	} else {
		decided = decided && (old.Approval != cur.Approval || cur.ApprovedBy != old.ApprovedBy)
	}
	if !decided {
		return ""
	}
	verb := "approves"
	if cur.Approval == filestore.ApprovalRejected {
		verb = "rejects"
	}
	var deciders []string
	if cur.Approval == filestore.ApprovalApproved && cur.ApprovedBy != "" {
		deciders = append(deciders, cur.ApprovedBy)
	}
	for _, e := range byTask[task] {
		if e.to == cur.Approval && !slices.Contains(deciders, e.actor) {
			deciders = append(deciders, e.actor)
		}
	}
	if len(deciders) == 0 {
		return fmt.Sprintf("%s task %s naming no one who decided", verb, clipID(task))
	}
	chain := tree.chain(cur.AssigneeID)
	for _, d := range deciders {
		dec, ok := chain[d]
		switch {
		case cur.AssigneeID == "" || !ok:
			return fmt.Sprintf("%s task %s as %s, who is not an ancestor of its assignee %s and may not decide on it",
				verb, clipID(task), clipID(d), orNone(clipID(cur.AssigneeID)))
		case !isNew && human != "" && dec.Type == filestore.AgentHuman && d != human:
			return fmt.Sprintf("%s task %s as %s, another human than the commit's", verb, clipID(task), clipID(d))
		}
	}
	return ""
}

// treeAgent is what the ancestor rule reads of an agent's file.
type treeAgent struct {
	Type     string `json:"type"`
	ParentID string `json:"parent_id"`
}

// agentTree reads agents' files from one commit's tree, each once.
type agentTree struct {
	g      gitCmd
	rev    string
	agents map[string]*treeAgent // nil: missing or unreadable
}

// maxChain bounds the parent chain the ancestor rule walks.
const maxChain = 64

func (t *agentTree) agent(id string) *treeAgent {
	if a, ok := t.agents[id]; ok {
		return a
	}
	var a *treeAgent
	if filestore.ValidateAgentID(id) == nil {
		readEach(t.g, []string{t.rev + ":agents/" + id + "/agent.json"}, filestore.MaxEntityFile, filestore.MaxEntityFile, func(_ int, data []byte) {
			var v treeAgent
			if data != nil && json.Unmarshal(data, &v) == nil {
				a = &v
			}
		})
	}
	t.agents[id] = a
	return a
}

// chain returns the ancestors of id (its parent, theirs, ...) by id, as filestore's
// IsAncestor walks them.
func (t *agentTree) chain(id string) map[string]*treeAgent {
	out := map[string]*treeAgent{}
	seen := map[string]bool{id: true}
	for range maxChain {
		a := t.agent(id)
		if a == nil || a.ParentID == "" || seen[a.ParentID] {
			break
		}
		seen[a.ParentID] = true
		p := t.agent(a.ParentID)
		if p == nil {
			p = &treeAgent{}
		}
		out[a.ParentID] = p
		id = a.ParentID
	}
	return out
}

// leaseFindings names the AI agents whose lines commit id, from machine, adds although
// another machine holds their lease. The lease that counts is the one of the commit's
// parent or its own: a round commits together what happened since the last one, so a
// machine that took a free lease and ran the agent, or ran it and then let the lease go
// (a move), commits both in one. A line dated before the other machine acquired the
// lease was written while it was not yet theirs (a round that commits a machine's last
// lines after a move it merged). An agent with no lease in either tree — a repository
// without leases — has nothing to compare.
func leaseFindings(g gitCmd, id, machine string, lines map[string]time.Time) []string {
	if len(lines) == 0 {
		return nil
	}
	agents := make([]string, 0, len(lines))
	for a := range lines {
		if filestore.ValidateAgentID(a) == nil {
			agents = append(agents, a)
		}
	}
	slices.Sort(agents)
	var specs []string
	for _, a := range agents {
		specs = append(specs, id+"^:leases/"+a+".json", id+":leases/"+a+".json")
	}
	blobs := make([][]byte, len(specs))
	if _, err := readEach(g, specs, maxLeaseFile, int64(len(specs))*maxLeaseFile, func(i int, data []byte) { blobs[i] = data }); err != nil {
		return nil
	}
	var what []string
	for i, a := range agents {
		var others []string
		ours, any := false, false
		for _, data := range blobs[2*i : 2*i+2] {
			var l filestore.Lease
			if data == nil || json.Unmarshal(data, &l) != nil || l.MachineID == "" {
				continue
			}
			any = true
			if l.MachineID == machine {
				ours = true
				continue
			}
			if at := lines[a]; !at.IsZero() && at.Before(l.AcquiredAt) {
				continue // written before that machine took the lease
			}
			if !slices.Contains(others, l.MachineID) {
				others = append(others, l.MachineID)
			}
		}
		if !any || ours || len(others) == 0 {
			continue
		}
		what = append(what, fmt.Sprintf("holds lines of agent %s, whose lease machine %s holds", a, strings.Join(others, " and ")))
		if len(what) >= 3 {
			break
		}
	}
	return what
}

func clipID(s string) string {
	if r := []rune(s); len(r) > 40 {
		return string(r[:40]) + "…"
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
