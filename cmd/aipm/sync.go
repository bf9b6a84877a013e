package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/aipm/aipm/cmd/aipm/internal/clone"
	"github.com/aipm/aipm/cmd/aipm/internal/gitstate"
	"github.com/aipm/aipm/filestore"
)

// defaultSyncInterval is how often `aipm sync` and `aipm run` sync the state branch.
const defaultSyncInterval = 2 * time.Second

// cmdSync is `aipm sync`: commit, fetch, merge and push the state branch, once or in a
// loop.
func (a *app) cmdSync(args []string) error {
	fs := newFlags(a, "sync")
	once := fs.Bool("once", false, "one round, then exit")
	interval := fs.Duration("interval", defaultSyncInterval, "time between rounds")
	restore := fs.Bool("restore", false, "bring back a state deleted from under aipm (git clean -ffdx, files removed by hand) from the last commit of aipm/state, then run one round")
	if _, err := fs.parse(args, 0, 0, "[--once] [--interval 2s] [--restore]"); err != nil {
		return err
	}
	if *interval <= 0 {
		return &usageError{msg: "--interval must be positive, e.g. --interval 2s", path: "sync"}
	}
	if *restore {
		if err := a.restoreState(); err != nil {
			return err
		}
		*once = true
	}
	s, err := a.open()
	if err != nil {
		return err
	}
	sy, err := newSyncer(s, a.stdout)
	if err != nil {
		return err
	}
	if *once {
		r, err := sy.Once(context.Background())
		if err != nil {
			return err
		}
		if fs.json {
			return a.printJSON(r)
		}
		a.printf("%s\n", describeRound(r, sy.Remote))
		return nil
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	wake, stopWatch, err := a.wakeOn(s.Dir(), syncRelevant)
	if err != nil {
		return err
	}
	defer stopWatch()
	a.printf("syncing %s with %s every %s and after local changes (Ctrl-C stops)\n", gitstate.Branch, remoteName(sy.Remote), *interval)
	sy.Loop(ctx, *interval, wake, roundReporter(a.stdout, a.stderr, sy.Remote, false))
	return nil
}

// restoreState brings back the state's working copy, found from the current directory's
// clone (the store itself may be gone), and says what came back.
func (a *app) restoreState() error {
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	w, ok := clone.Find(cwd)
	if !ok {
		return fmt.Errorf("%s is in no Git repository: only a state kept on branch %s can be restored", cwd, gitstate.Branch)
	}
	top := w.Top
	if w.Main != "" {
		top = w.Main
	}
	restored, err := gitstate.Restore(top)
	if err != nil {
		return err
	}
	if len(restored) == 0 {
		a.printf("nothing to restore: every file of %s is there\n", gitstate.Branch)
	} else {
		a.printf("restored from %s: %s\n", gitstate.Branch, strings.Join(restored, ", "))
	}
	// A checkout brings no machine-local runtime area: made again as in a fresh clone.
	if _, _, err := filestore.Prepare(top, filestore.Options{Now: a.now}); err != nil {
		return err
	}
	return nil
}

// syncRelevant tells the changes a sync round commits: not the machine-local runtime
// area, Git's own file, or a write in progress.
func syncRelevant(p string) bool {
	first, _, _ := strings.Cut(p, "/")
	return first != "runtime" && first != ".git" && !strings.HasSuffix(p, ".tmp")
}

// newSyncer returns the syncer of the store's clone, or says what to do when its state
// is not on the state branch.
func newSyncer(s *filestore.Store, out io.Writer) (*gitstate.Syncer, error) {
	if !gitstate.Attached(s.Root()) {
		if gitstate.TrackedOnCode(s.Root()) {
			return nil, fmt.Errorf("%s is tracked on the code branch here: run `aipm migrate` once to move it to branch %s, which aipm syncs itself",
				filestore.DirName, gitstate.Branch)
		}
		return nil, fmt.Errorf("%s is not on branch %s: run `aipm migrate` (in a Git repository) to put it there", s.Dir(), gitstate.Branch)
	}
	return newStateSyncer(s, gitstate.Remote(s.Root()), out), nil
}

// newStateSyncer returns a syncer whose merges keep the rules: after another clone's
// changes are applied, RepairMerged repairs what the two sides broke together (an agent
// over max_parallel_tasks, a task running under a blocked parent, ...), with the history
// and the agents told as for any change, and out names each repair.
func newStateSyncer(s *filestore.Store, remote string, out io.Writer) *gitstate.Syncer {
	return &gitstate.Syncer{Store: s, Remote: remote,
		AfterMerge: func(ctx context.Context, changed []string) error {
			found, err := s.RepairMerged(filestore.SystemSender)
			for _, b := range found {
				if b.Repaired {
					fmt.Fprintf(out, "repaired after the merge: %s\n", b)
				}
			}
			sayHeld(s, changed, out)
			return err
		}}
}

// sayHeld names each agent the merge brought that waits for this machine's approval, with
// the commit and the people it came from.
func sayHeld(s *filestore.Store, changed []string, out io.Writer) {
	var mine bool
	for _, p := range changed {
		if strings.HasPrefix(p, "agents/") && strings.HasSuffix(p, "/agent.json") {
			mine = true
		}
	}
	if !mine {
		return
	}
	held, err := s.HeldAgents()
	if err != nil {
		fmt.Fprintf(out, "cannot read the agents held for an approval: %v\n", err)
		return
	}
	for _, p := range changed {
		id := strings.TrimSuffix(strings.TrimPrefix(p, "agents/"), "/agent.json")
		if h := held[id]; h != nil && p == "agents/"+id+"/agent.json" {
			fmt.Fprintf(out, "held: %s\n", describeHeld(h))
		}
	}
}

// describeHeld says in one line what a held agent is, where it came from and how to let
// it run.
func describeHeld(h *filestore.HeldAgent) string {
	what := "new agent " + h.AgentID + " with"
	if !h.New {
		what = "agent " + h.AgentID + " changed from " + h.Was + " to"
	}
	what += " " + h.Runs()
	by := h.Author
	if h.Committer != "" && h.Committer != h.Author {
		by += ", committed by " + h.Committer
	}
	if by == "" {
		by = "an unknown author"
	}
	commit := h.Commit
	if len(commit) > 10 {
		commit = commit[:10]
	}
	return fmt.Sprintf("%s, from commit %s by %s: not started on this machine until you approve it with `aipm trust --agent %s`",
		what, commit, by, h.AgentID)
}

func remoteName(r string) string {
	if r == "" {
		return "no remote (commits only)"
	}
	return r
}

// maxNamedRefusals is how many of a round's refusals its line names: a push of a hundred
// thousand bad paths is told in a line, not a hundred thousand.
const maxNamedRefusals = 20

// nameRefusals joins the first maxNamedRefusals of refused with "; ", and says how many
// more there are.
func nameRefusals(refused []string) string {
	named := refused[:min(len(refused), maxNamedRefusals)]
	out := strings.Join(named, "; ")
	if n := len(refused) - len(named); n > 0 {
		out += fmt.Sprintf("; and %d more", n)
	}
	return out
}

// describeRound says in one line what a round did.
func describeRound(r *gitstate.Round, remote string) string {
	var parts []string
	if r.Committed {
		parts = append(parts, "committed local changes")
	}
	if n := len(r.Merged); n > 0 {
		parts = append(parts, fmt.Sprintf("merged %d file(s) from %s", n, remote))
	}
	if n := len(r.Conflicts); n > 0 {
		parts = append(parts, fmt.Sprintf("%d conflict(s) to settle (%s; run `aipm doctor`)", n, strings.Join(r.Conflicts, ", ")))
	}
	if r.Rejected > 0 {
		parts = append(parts, fmt.Sprintf("push refused %d time(s), fetched and merged again", r.Rejected))
	}
	if len(r.Refused) > 0 {
		parts = append(parts, fmt.Sprintf("refused from %s what is not the store's to take: %s", remote, nameRefusals(r.Refused)))
	}
	if n := len(r.Suspect); n > 0 {
		parts = append(parts, fmt.Sprintf("took in %d suspect commit(s) from %s: %s", n, remote, strings.Join(r.Suspect, "; ")))
	}
	if r.Rewound != "" {
		parts = append(parts, r.Rewound)
	}
	if len(r.Restored) > 0 {
		parts = append(parts, fmt.Sprintf("restored what a merge made outside aipm dropped: %s", strings.Join(r.Restored, "; ")))
	}
	if r.Left > 0 {
		parts = append(parts, fmt.Sprintf("left %d more changed file(s) from %s for the next round (over the %d files or %d MiB one round takes in): not pushed until they are in",
			r.Left, remote, gitstate.MaxRoundFiles, gitstate.MaxRoundBytes>>20))
	}
	if r.Verifying > 0 {
		parts = append(parts, fmt.Sprintf("%d more commit(s) of %s's %s to verify (at most %d a round): nothing of them taken in and nothing pushed until all are verified",
			r.Verifying, remote, gitstate.Branch, gitstate.MaxVerify))
	}
	if r.Pushed {
		parts = append(parts, "pushed to "+remote)
	}
	if len(parts) == 0 {
		return "up to date"
	}
	return strings.Join(parts, "; ")
}

// roundReporter prints rounds that did something (all of them with verbose) and every
// error, once per distinct message so an unreachable remote does not flood the output.
func roundReporter(out, errw io.Writer, remote string, quiet bool) func(*gitstate.Round, error) {
	last := ""
	return func(r *gitstate.Round, err error) {
		if err != nil {
			if msg := err.Error(); msg != last {
				fmt.Fprintf(errw, "aipm sync: %v\n", err)
				last = msg
			}
			return
		}
		last = ""
		if r == nil || quiet {
			return
		}
		if d := describeRound(r, remote); d != "up to date" {
			fmt.Fprintf(out, "%s sync: %s\n", time.Now().Format("15:04:05"), d)
		}
	}
}

// cmdMigrate is `aipm migrate`: move .ai-pm onto the state branch, keeping its history.
func (a *app) cmdMigrate(args []string) error {
	fs := newFlags(a, "migrate")
	if _, err := fs.parse(args, 0, 0, ""); err != nil {
		return err
	}
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	root := cwd
	if r, ferr := filestore.Find(cwd); ferr == nil {
		root = r
	} else if !errors.Is(ferr, filestore.ErrNoStore) {
		return ferr
	}
	m, err := gitstate.Migrate(root)
	if err != nil {
		return err
	}
	if fs.json {
		return a.printJSON(m)
	}
	if !m.Done() {
		a.printf("%s is already on branch %s: nothing to do\n", filestore.DirName, gitstate.Branch)
		return nil
	}
	if m.Replayed > 0 {
		a.printf("replayed %d commit(s) of %s's history onto branch %s\n", m.Replayed, filestore.DirName, gitstate.Branch)
	} else if m.CreatedBranch {
		a.printf("created branch %s from %s\n", gitstate.Branch, filestore.DirName)
	}
	if m.Untracked != "" {
		a.printf("committed %s on the code branch: %s is no longer tracked there (and is ignored)\n", m.Untracked, filestore.DirName)
	}
	if m.Attached {
		a.printf("%s is now a worktree of branch %s (`git -C %s log` shows its history)\n", filestore.DirName, gitstate.Branch, filestore.DirName)
	}
	if m.Pending {
		a.printf("committed the changes made since the last code commit to branch %s\n", gitstate.Branch)
	}
	a.printf("next: push the code branch, and run `aipm sync --once` to push %s\n", gitstate.Branch)
	return nil
}
