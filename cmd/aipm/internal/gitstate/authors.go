package gitstate

import (
	"fmt"
	"strings"
)

// maxSuspects bounds the commits a round names as not made by aipm.
const maxSuspects = 20

// foreignCommits names the commits of theirs that ours lacks and that aipm did not make:
// every commit of a clone's changes carries an Aipm-Machine trailer (Syncer.trailers), so
// one without it was made by hand, with plain git — perhaps by someone speaking for
// another. Its changes are taken in like any other (they pass the same path, size and
// merge rules); the round names it, with its author, so that a person can look. A trailer
// is no proof (anyone can write one): settings that need proof sign their commits.
func foreignCommits(g gitCmd, ours, theirs string) ([]string, error) {
	out, err := g.run("log", "--no-merges", "-n", fmt.Sprint(maxSuspects+1),
		"--format=%H%x1f%an <%ae>%x1f%(trailers:key=Aipm-Machine,valueonly,separator=%x2C)%x1f%s", ours+".."+theirs)
	if err != nil || out == "" {
		return nil, err
	}
	var found []string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Split(l, "\x1f")
		if len(f) != 4 || strings.TrimSpace(f[2]) != "" {
			continue
		}
		if len(found) == maxSuspects {
			found = append(found, "and more (git -C .ai-pm log "+ours+".."+theirs+")")
			break
		}
		found = append(found, fmt.Sprintf("commit %.10s by %s (%q) was not made by aipm: look at it with `git -C .ai-pm show %.10s`",
			f[0], f[1], clipSubject(f[3]), f[0]))
	}
	return found, nil
}

func clipSubject(s string) string {
	if r := []rune(s); len(r) > 60 {
		return string(r[:60]) + "…"
	}
	return s
}
