package gitstate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aipm/aipm/filestore"
)

// maxSuspects bounds the commits a round names, and the commits it reads line by line.
const maxSuspects = 20

// maxSignedLine bounds a line the check reads; a longer one is not a message a person
// wrote (and is bounded elsewhere).
const maxSignedLine = 64 << 10

// suspectCommits names what a round takes in that its author may not have made: commits
// of theirs that ours lacks and that aipm did not make (every commit of a clone's changes
// carries an Aipm-Machine trailer, Syncer.trailers: one without it was made by hand, with
// plain git), and, in aipm's commits, a message or a change signed as a human other than
// the commit's (its Aipm-Human trailer) — someone speaking for another. The changes are
// taken in like any other (they pass the same path, size and merge rules); the round
// names them, with the commit and its author, so that a person can look. A trailer is a
// claim, not proof: a team that needs proof signs its commits.
func suspectCommits(g gitCmd, s *filestore.Store, ours, theirs string) ([]string, error) {
	out, err := g.run("log", "--no-merges", "-n", fmt.Sprint(maxSuspects+1),
		"--format=%H%x1f%an <%ae>%x1f%(trailers:key=Aipm-Machine,valueonly,separator=%x2C)%x1f%(trailers:key=Aipm-Human,valueonly,separator=%x2C)%x1f%s",
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
		f := strings.Split(l, "\x1f")
		if len(f) != 5 {
			continue
		}
		if len(found) >= maxSuspects {
			found = append(found, "and more (git -C .ai-pm log "+ours+".."+theirs+")")
			break
		}
		id, author, machine, human, subject := f[0], f[1], strings.TrimSpace(f[2]), strings.TrimSpace(f[3]), f[4]
		if machine == "" {
			found = append(found, fmt.Sprintf("commit %.10s by %s (%q) was not made by aipm: look at it with `git -C .ai-pm show %.10s`",
				id, author, clipSubject(subject), id))
			continue
		}
		if human == "" {
			continue // a clone with no human set: nothing to compare
		}
		for _, who := range signedAs(g, id, humans) {
			if who != human {
				found = append(found, fmt.Sprintf("commit %.10s from machine %s, whose human is %s, holds a message or change signed as %s: look at it with `git -C .ai-pm show %.10s`",
					id, machine, human, who, id))
				break
			}
		}
	}
	return found, nil
}

// signedAs lists the humans that the lines commit adds to the mailboxes and the history
// are signed as: a message's sender, a change's actor on the command line or the web view.
func signedAs(g gitCmd, commit string, humans map[string]bool) []string {
	out, err := g.raw("diff-tree", "-p", "--no-renames", "--no-color", "-U0", "--root", commit, "--", "events.jsonl", ":(glob)agents/*/chat.jsonl")
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	var who []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), maxSignedLine)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) < 2 || line[0] != '+' || line[1] != '{' {
			continue
		}
		var v struct {
			SenderID   string `json:"senderId"`
			ReceiverID string `json:"receiverId"`
			Actor      string `json:"actor"`
			Via        string `json:"via"`
		}
		if json.Unmarshal(line[1:], &v) != nil {
			continue
		}
		name := ""
		switch {
		case v.SenderID != "" && v.ReceiverID != "": // the sender's own copy of a message
			name = v.SenderID
		case v.Actor != "" && (v.Via == filestore.ViaCLI || v.Via == filestore.ViaUI):
			name = v.Actor
		}
		if name != "" && humans[name] && !seen[name] {
			seen[name] = true
			who = append(who, name)
		}
	}
	return who
}

func clipSubject(s string) string {
	if r := []rune(s); len(r) > 60 {
		return string(r[:60]) + "…"
	}
	return s
}
