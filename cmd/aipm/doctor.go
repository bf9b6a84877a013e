package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/aipm/aipm/cmd/aipm/internal/clone"
	"github.com/aipm/aipm/cmd/aipm/internal/gitstate"
	"github.com/aipm/aipm/cmd/aipm/internal/land"
	"github.com/aipm/aipm/filestore"
)

func (a *app) cmdDoctor(args []string) error {
	fs := newFlags(a, "doctor")
	repair := fs.Bool("repair", false, "first apply the repairs of the rules a merge broke (as `aipm run` does) and deliver messages found in their sender's mailbox only, then check")
	ack := fs.String("ack", "", "first stop naming the suspect `COMMIT` a sync round took in (once you have looked at it with git -C .ai-pm show COMMIT), then check")
	if _, err := fs.parse(args, 0, 0, ""); err != nil {
		return err
	}
	s, err := a.open()
	if err != nil {
		return err
	}
	if *ack != "" {
		c, err := gitstate.AckSuspect(s, *ack)
		if err != nil {
			return err
		}
		if !fs.json {
			a.printf("acknowledged suspect commit %s, taken in %s\n", c.Commit, c.At.Local().Format(time.RFC3339))
		}
	}
	if *repair {
		found, err := s.RepairMerged(filestore.SystemSender)
		if err != nil {
			return err
		}
		for _, b := range found {
			if b.Repaired && !fs.json {
				a.printf("repaired %s\n", b)
			}
		}
		restored, err := gitstate.LostMerges(s, true)
		if err != nil {
			return err
		}
		for _, l := range restored {
			if !fs.json {
				a.printf("restored %s (the next `aipm sync` round shares it)\n", l)
			}
		}
		undelivered, err := s.RepairDeliveries()
		if err != nil {
			return err
		}
		for _, u := range undelivered {
			if u.Delivered && !fs.json {
				a.printf("repaired %s\n", u)
			}
		}
	}
	probs, err := s.Check()
	if err != nil {
		return err
	}
	cmdProbs, err := agentCommandProblems(s)
	if err != nil {
		return err
	}
	probs = append(probs, cmdProbs...)
	probs = append(probs, cloneProblems(s)...)
	probs = append(probs, worktreeProblems(s)...)
	probs = append(probs, syncProblems(s)...)
	probs = append(probs, lostProblems(s)...)
	probs = append(probs, suspectProblems(s)...)
	if fs.json {
		if err := a.printJSON(probs); err != nil {
			return err
		}
	} else {
		for _, p := range probs {
			a.printf("%s\n", p)
		}
		if len(probs) == 0 {
			a.printf("ok: every file under %s and every agent command checked, no problems\n", s.Rel(s.Dir()))
		}
	}
	if len(probs) > 0 {
		return exitError(1)
	}
	return nil
}

// cloneProblems reports, for a store in a Git clone, a .gitattributes that names no merge
// driver (a project made before there was one), and a clone whose config lacks the
// driver (every clone needs `aipm init` once) or names an aipm that is gone.
func cloneProblems(s *filestore.Store) []filestore.Problem {
	driver, err := clone.Driver(s.Root())
	if err != nil {
		return nil // not in Git: nothing to merge
	}
	at := s.Rel(s.Dir()) + "/.gitattributes"
	var out []filestore.Problem
	if p := s.GitattributesProblem(); p != "" {
		out = append(out, filestore.Problem{Path: at, Line: 1, Problem: p})
	}
	if driver == "" {
		return append(out, filestore.Problem{Path: at, Line: 1, Problem: "this clone is not prepared: Git has no merge.aipm.driver, so the entity files merge line by line and concurrent edits conflict; run `aipm init` in this clone"})
	}
	if prog := clone.DriverProgram(driver); prog != "" {
		if _, err := os.Stat(prog); err != nil {
			if _, err := exec.LookPath(prog); err != nil {
				return append(out, filestore.Problem{Path: at, Line: 1, Problem: fmt.Sprintf("the merge driver registered in this clone runs %s, which is not there; run `aipm init` again", prog)})
			}
		}
	}
	return out
}

// syncProblems reports a state branch whose last sync round on this machine failed: the
// other clones do not see this one's changes, nor it theirs, until a round succeeds.
func syncProblems(s *filestore.Store) []filestore.Problem {
	if !gitstate.Attached(s.Root()) {
		return nil
	}
	last, err := gitstate.ReadLastRound(s)
	if err != nil || last == nil || last.Error == "" {
		return nil
	}
	return []filestore.Problem{{Path: s.Rel(s.Dir()), Line: 1, Problem: fmt.Sprintf(
		"the last sync of branch %s with %s failed at %s: %s; the other clones see none of this one's changes until a round succeeds: fix the cause and run `aipm sync --once`",
		gitstate.Branch, last.Remote, last.At.Local().Format(time.RFC3339), strings.Join(strings.Fields(last.Error), " "))}}
}

// suspectProblems names the suspect commits this machine's sync rounds took in (made by
// hand, or holding a change their author may not make) that no one acknowledged: a round
// names each once, and status only the last round's for a day.
func suspectProblems(s *filestore.Store) []filestore.Problem {
	list, err := gitstate.ReadSuspects(s)
	if err != nil {
		return []filestore.Problem{{Path: s.Rel(s.Dir()), Line: 1, Problem: fmt.Sprintf("could not read the suspect commits the sync rounds named: %v", err)}}
	}
	var out []filestore.Problem
	for _, c := range list {
		out = append(out, filestore.Problem{Path: s.Rel(s.Dir()), Line: 1, Problem: fmt.Sprintf(
			"suspect commit %s, taken in by a sync round at %s: %s; once you have looked at it, `aipm doctor --ack %s` stops naming it",
			c.Commit, c.At.Local().Format(time.RFC3339), strings.TrimPrefix(c.Why, "commit "+c.Commit+" "), c.Commit)})
	}
	return out
}

// lostProblems names what merges of the state branch that aipm did not make (a forge's
// pull request, `git merge` by hand) dropped and the store still lacks, in the recent
// history: a round restores what arrives after it, so this is what came before, or what
// a round could not write.
func lostProblems(s *filestore.Store) []filestore.Problem {
	losses, err := gitstate.LostMerges(s, false)
	if err != nil {
		return []filestore.Problem{{Path: s.Rel(s.Dir()), Line: 1, Problem: fmt.Sprintf(
			"could not check the merges of branch %s that aipm did not make: %v", gitstate.Branch, err)}}
	}
	var out []filestore.Problem
	for _, l := range losses {
		out = append(out, filestore.Problem{Path: s.Rel(filepath.Join(s.Dir(), filepath.FromSlash(l.Path))), Line: 1, Problem: fmt.Sprintf(
			"merge %s (%q), which aipm did not make, dropped %s, still missing: `aipm doctor --repair` restores it, and the next `aipm sync` round shares it",
			l.Merge, l.Subject, l.What())})
	}
	return out
}

// worktreeProblems reports the tasks' worktrees left behind or deleted under their
// waiting code (package land), and the agents' worktrees deleted by hand that Git still
// registers: harmless to aipm run, which prunes and recreates one at the agent's next
// start, but the agent's uncommitted work there is gone.
func worktreeProblems(s *filestore.Store) []filestore.Problem {
	var out []filestore.Problem
	if q, ok := land.New(s, nil); ok {
		for _, st := range q.Stale() {
			out = append(out, filestore.Problem{Path: s.Rel(s.TaskFile(st.TaskID)), Line: 1,
				Problem: fmt.Sprintf("the worktree %s of task %s: %s", st.Path, st.TaskID, st.Why)})
		}
	}
	stale, err := clone.StaleAgentWorktrees(s.Root())
	if err != nil || len(stale) == 0 {
		return out
	}
	ids := make([]string, 0, len(stale))
	for id := range stale {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		out = append(out, filestore.Problem{Path: s.Rel(filepath.Join(s.Dir(), "agents", id, "agent.json")), Line: 1,
			Problem: fmt.Sprintf("the worktree of agent %s (branch aipm/%s) was deleted but Git still registers it; aipm run recreates it at the agent's next start, or run `git worktree prune` to clear it now", id, id)})
	}
	return out
}
