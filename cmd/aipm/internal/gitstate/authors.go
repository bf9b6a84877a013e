package gitstate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/aipm/aipm/filestore"
)

// maxSuspects bounds the commits a round names, and the commits it reads line by line.
const maxSuspects = 20

// diffThreshold is the size of a mailbox or history over which a commit's lines in it are
// not read for the check: git's memory for a diff is twice the file.
const diffThreshold = "32m"

// maxSignedLine bounds a line the check reads; a longer one is not a message a person
// wrote (and is bounded elsewhere).
const maxSignedLine = 64 << 10

// suspectCommits names what a round takes in that its author may not have made: commits
// of theirs that ours lacks and that aipm did not make (every commit of a clone's changes
// carries an Aipm-Machine trailer, Syncer.trailers: one without it was made by hand, with
// plain git), and, in aipm's commits, a change that the commit's machine or human may
// not make (commitFindings): a message or a change signed as a human other than the
// commit's (its Aipm-Human trailer) — someone speaking for another —, an approval by
// someone who may not approve the task, an AI agent's line from a machine that does not
// hold its lease. The changes are taken in like any other (they pass the same path, size
// and merge rules); the round names them, one line a commit, with the commit and its
// author, so that a person can look. A trailer is a claim, not proof: a team that needs
// proof signs its commits.
func suspectCommits(g gitCmd, s *filestore.Store, ours, theirs string) ([]string, error) {
	out, err := g.run("log", "--no-merges", "-n", fmt.Sprint(maxSuspects+1),
		"--format=%H%x1f%an <%ae>%x1f%(trailers:key=Aipm-Machine,valueonly,separator=%x2C)%x1f%(trailers:key=Aipm-Human,valueonly,separator=%x2C)%x1f%P%x1f%s",
		ours+".."+theirs)
	if err != nil || out == "" {
		return nil, err
	}
	humans := map[string]bool{}
	if agents, err := s.Agents(); err == nil {
		for _, ag := range agents {
			if ag.Type == filestore.AgentHuman {
				humans[ag.ID] = true
			}
		}
	}
	var found []string
	for _, l := range strings.Split(out, "\n") {
		f := strings.SplitN(l, "\x1f", 6)
		if len(f) != 6 {
			continue
		}
		if len(found) >= maxSuspects {
			found = append(found, "and more (git -C .ai-pm log "+ours+".."+theirs+")")
			break
		}
		id, author, machine, human, root, subject := f[0], f[1], strings.TrimSpace(f[2]), strings.TrimSpace(f[3]), f[4] == "", f[5]
		if machine == "" {
			found = append(found, fmt.Sprintf("commit %.10s by %s (%q) was not made by aipm: look at it with `git -C .ai-pm show %.10s`",
				id, author, clipSubject(subject), id))
			continue
		}
		if what := commitFindings(g, id, machine, human, root, humans); len(what) > 0 {
			whose := ""
			if human != "" {
				whose = ", whose human is " + human + ","
			}
			found = append(found, fmt.Sprintf("commit %.10s from machine %s%s %s: look at it with `git -C .ai-pm show %.10s`",
				id, machine, whose, strings.Join(what, "; "), id))
		}
	}
	return found, nil
}

// commitFindings says what aipm's commit id, from machine (and human, "" when the clone
// had none set), holds that they may not have made: each finding a phrase that follows
// the commit's name. A root commit brings a whole store (`aipm migrate`), with the lines
// every machine wrote before: its agents' lines are not one machine's round.
func commitFindings(g gitCmd, id, machine, human string, root bool, humans map[string]bool) []string {
	a := readAdded(g, id, humans)
	var what []string
	if human != "" {
		for _, who := range a.signed {
			if who != human {
				what = append(what, "holds a message or change signed as "+who)
				break
			}
		}
	}
	what = append(what, approvalFindings(g, id, human, a.approvals)...)
	if !root {
		what = append(what, leaseFindings(g, id, machine, a.agentLines)...)
	}
	return what
}

// added is what one commit adds to the mailboxes and the history, as far as the checks
// need it.
type added struct {
	// signed are the humans its lines are signed as: a message's sender, a change's
	// actor on the command line or the web view.
	signed []string
	// agentLines are, by agent, the latest time of a line it made itself: a message it
	// sent (its own copy) or a change through its tools.
	agentLines map[string]time.Time
	// approvals are its history's approval changes of tasks.
	approvals []approvalEvent
}

type approvalEvent struct {
	actor, task, to string
}

// maxAgentsChecked bounds the agents of one commit whose leases a round reads.
const maxAgentsChecked = 50

// readAdded reads the lines commit adds to the mailboxes and the history, from its diff
// alone (its first parent's, or none for a root commit).
func readAdded(g gitCmd, commit string, humans map[string]bool) added {
	a := added{agentLines: map[string]time.Time{}}
	// A file over diffThreshold is diffed as binary, without its lines: git holds both
	// versions of a file it diffs, and a pushed 200 MiB line cost it 400 MB.
	out, err := g.raw("-c", "core.bigFileThreshold="+diffThreshold, "diff-tree", "-p", "--no-renames", "--no-color", "-U0", "--root", commit, "--", "events.jsonl", ":(glob)agents/*/chat.jsonl")
	if err != nil {
		return a
	}
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), maxSignedLine)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) < 2 || line[0] != '+' || line[1] != '{' {
			continue
		}
		var v struct {
			SenderID   string    `json:"senderId"`
			ReceiverID string    `json:"receiverId"`
			CreatedAt  time.Time `json:"createdAt"`
			Actor      string    `json:"actor"`
			Via        string    `json:"via"`
			At         time.Time `json:"at"`
			Entity     string    `json:"entity"`
			ID         string    `json:"id"`
			Change     string    `json:"change"`
			To         string    `json:"to"`
		}
		if json.Unmarshal(line[1:], &v) != nil {
			continue
		}
		name, agent, at := "", "", time.Time{}
		switch {
		case v.SenderID != "" && v.ReceiverID != "": // the sender's own copy of a message
			name, agent, at = v.SenderID, v.SenderID, v.CreatedAt
		case v.Actor != "" && (v.Via == filestore.ViaCLI || v.Via == filestore.ViaUI):
			name = v.Actor
		case v.Actor != "" && v.Via == filestore.ViaTool:
			agent, at = v.Actor, v.At
		}
		if v.Actor != "" && v.Entity == "task" && v.Change == "approval" && len(a.approvals) < maxApprovalsChecked {
			a.approvals = append(a.approvals, approvalEvent{actor: v.Actor, task: v.ID, to: v.To})
		}
		if name != "" && humans[name] && !seen[name] {
			seen[name] = true
			a.signed = append(a.signed, name)
		}
		if agent != "" && agent != filestore.SystemSender && !humans[agent] {
			if t, ok := a.agentLines[agent]; ok {
				if at.After(t) {
					a.agentLines[agent] = at
				}
			} else if len(a.agentLines) < maxAgentsChecked {
				a.agentLines[agent] = at
			}
		}
	}
	return a
}

func clipSubject(s string) string {
	if r := []rune(s); len(r) > 60 {
		return string(r[:60]) + "…"
	}
	return s
}
