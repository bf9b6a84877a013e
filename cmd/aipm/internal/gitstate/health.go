package gitstate

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/aipm/aipm/filestore"
)

// A round publishes what the working copy holds, so a working copy that is not a sound
// store must never be committed: `git clean -ffdx` in the code's worktree deletes .ai-pm
// file by file, and a round that committed the deletions as they happened would push them
// to every clone. aipm itself never deletes a shared file of the state except where it
// applies another clone's deletion in a merge, which the merge commit records, not the
// commit of this clone's changes: so any deletion found at commit time is not aipm's.
// Likewise a git operation stopped half-way in .ai-pm (a revert or merge with conflicts)
// leaves markers and unmerged paths that are not the store's.

// UnhealthyError says why a round refused to commit, and how to come back.
type UnhealthyError struct {
	Why string // what is wrong with the working copy
	Fix string // the command that brings it back
}

func (e *UnhealthyError) Error() string {
	return "nothing committed, merged or pushed: " + e.Why + "; " + e.Fix
}

// Healthy reports whether root's state working copy is one a round would commit: no git
// operation under way in it, nothing unmerged, nothing deleted beside aipm.
func Healthy(root string) error { return healthy(gitCmd{dir: stateDir(root)}) }

// healthy checks the state's working copy before a round commits it.
func healthy(g gitCmd) error {
	dir := g.dir
	if _, err := os.Stat(filepath.Join(dir, "project.json")); err != nil {
		return &UnhealthyError{Why: fmt.Sprintf("%s has no project.json: the store was deleted from under aipm", dir),
			Fix: "`aipm sync --restore` brings it back from the last commit of " + Branch}
	}
	if gitdir, err := g.run("rev-parse", "--path-format=absolute", "--git-dir"); err == nil {
		for _, op := range []struct{ file, name, abort string }{
			{"MERGE_HEAD", "a merge", "git -C .ai-pm merge --abort"},
			{"REVERT_HEAD", "a revert", "git -C .ai-pm revert --abort"},
			{"CHERRY_PICK_HEAD", "a cherry-pick", "git -C .ai-pm cherry-pick --abort"},
			{"rebase-merge", "a rebase", "git -C .ai-pm rebase --abort"},
			{"rebase-apply", "a rebase or am", "git -C .ai-pm rebase --abort"},
		} {
			if _, err := os.Stat(filepath.Join(gitdir, op.file)); err == nil {
				return &UnhealthyError{Why: fmt.Sprintf("%s is under way in %s", op.name, dir),
					Fix: fmt.Sprintf("finish it and commit, or `%s`; aipm commits nothing there meanwhile", op.abort)}
			}
		}
	}
	if out, err := g.run("ls-files", "--unmerged"); err == nil && out != "" {
		return &UnhealthyError{Why: fmt.Sprintf("%s has unmerged paths (%s)", dir, sample(pathsOf(out))),
			Fix: "settle them (`aipm resolve`, then `git -C .ai-pm add`) or reset them; aipm commits nothing there meanwhile"}
	}
	if out, err := g.run("ls-files", "--deleted"); err == nil && out != "" {
		deleted := strings.Split(out, "\n")
		return &UnhealthyError{Why: fmt.Sprintf("%d file(s) of the state were deleted outside aipm (%s)", len(deleted), sample(deleted)),
			Fix: "`aipm sync --restore` brings them back from the last commit of " + Branch + " (to drop a file for good: `git -C .ai-pm rm` it and commit)"}
	}
	return nil
}

// pathsOf takes the paths of `git ls-files --unmerged` lines, each once.
func pathsOf(out string) []string {
	var ps []string
	for _, l := range strings.Split(out, "\n") {
		if _, p, ok := strings.Cut(l, "\t"); ok && (len(ps) == 0 || ps[len(ps)-1] != p) {
			ps = append(ps, p)
		}
	}
	return ps
}

func sample(ps []string) string {
	if len(ps) > 3 {
		return strings.Join(ps[:3], ", ") + fmt.Sprintf(" and %d more", len(ps)-3)
	}
	return strings.Join(ps, ", ")
}

// Restore brings back a state deleted from under aipm, from the last commit of the state
// branch (which holds what earlier rounds merged from other clones): files of .ai-pm
// deleted by hand, or the whole worktree (`git clean -ffdx`), made again at the branch.
// It returns what it restored. A state branch this clone lacks is fetched from the remote.
func Restore(root string) (restored []string, err error) {
	top, err := mainTop(root)
	if err != nil {
		return nil, err
	}
	if !Attached(top) {
		g := gitCmd{dir: top}
		g.run("worktree", "prune")
		if !branchExists(top) {
			ok, err := Checkout(top)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, fmt.Errorf("no branch %s here or on a remote to restore %s from", Branch, stateDir(top))
			}
			return []string{filestore.DirName + "/ (checked out from the remote)"}, nil
		}
		if entries, _ := os.ReadDir(stateDir(top)); len(entries) > 0 {
			if err := attach(top); err != nil {
				return nil, err
			}
		} else {
			os.Remove(stateDir(top))
			if _, err := g.run("worktree", "add", "-q", stateDir(top), Branch); err != nil {
				return nil, fmt.Errorf("check out the state branch into %s: %w", stateDir(top), err)
			}
			return []string{filestore.DirName + "/ (checked out at " + Branch + ")"}, nil
		}
	}
	g := gitCmd{dir: stateDir(top)}
	out, err := g.run("diff", "--name-only", "--no-renames", "--diff-filter=D", "HEAD")
	if err != nil || out == "" {
		return nil, err
	}
	restored = strings.Split(out, "\n")
	if _, err := g.run(append([]string{"checkout", "HEAD", "--"}, restored...)...); err != nil {
		return nil, err
	}
	return restored, nil
}
