package land

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/aipm/aipm/filestore"
)

// Workdir returns the directory a task's agent works in: its worktree (made now, from the
// target's tip, when made is true), or "" when the task works without a branch (task
// branches off, or not a repository with a commit).
func (q *Queue) Workdir(t *filestore.Task) (dir string, made bool, err error) {
	p, err := q.s.ProjectView()
	if err != nil {
		return "", false, err
	}
	if !q.Enabled(p.Settings) {
		return "", false, nil
	}
	wt := q.Worktree(t.ID)
	dir = filepath.Join(wt, q.rel)
	g := git{dir: q.top}
	if l := t.Landing; l != nil {
		if l.State != filestore.LandWorking && l.State != filestore.LandQueued && l.State != filestore.LandChecking {
			return "", false, fmt.Errorf("task %s's code is %s already; it cannot work on its branch again", t.ID, l.State)
		}
		if isWorktree(wt) {
			return dir, false, nil
		}
		// Deleted by hand: back on its branch, if the branch is still there.
		if g.ok("rev-parse", "-q", "--verify", "refs/heads/"+l.Branch) {
			g.run("worktree", "prune")
			if _, err := g.run("worktree", "add", "-q", wt, l.Branch); err != nil {
				return "", false, err
			}
			return dir, true, nil
		}
		return "", false, fmt.Errorf("task %s's branch %s and its worktree %s are gone: cancel the task, or `aipm land abandon %s`", t.ID, l.Branch, wt, t.ID)
	}
	target, err := q.Target(p.Settings)
	if err != nil {
		return "", false, err
	}
	tip, err := q.tip(target, q.remote(target))
	if err != nil {
		return "", false, err
	}
	if _, err := os.Lstat(wt); err == nil && !isWorktree(wt) {
		return "", false, fmt.Errorf("%s exists but is not a Git worktree: move it away", wt)
	}
	if !isWorktree(wt) {
		g.run("worktree", "prune")
		// -B: a branch left by a start that never recorded its landing is made anew.
		if _, err := g.run("worktree", "add", "-q", "-B", Branch(t.ID), wt, tip); err != nil {
			return "", false, err
		}
	}
	if _, err := q.s.BeginLanding(Actor, t.ID, filestore.Landing{Target: target, Branch: Branch(t.ID), Base: tip, Machine: q.machine}); err != nil {
		return "", false, err
	}
	return dir, true, nil
}

func isWorktree(dir string) bool {
	fi, err := os.Lstat(filepath.Join(dir, ".git"))
	return err == nil && fi.Mode().IsRegular()
}

// tasksWithWorktree are the tasks that have a worktree in this clone, for which keep
// says yes.
func (q *Queue) tasksWithWorktree(keep func(t *filestore.Task) bool) ([]*filestore.Task, error) {
	des, err := os.ReadDir(filepath.Dir(q.Worktree("x")))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var out []*filestore.Task
	for _, de := range des {
		if filestore.ValidateEntityID(filestore.PrefixTask, de.Name()) != nil {
			continue
		}
		t, err := q.s.Task(de.Name())
		if err != nil || t.Landing == nil || t.Landing.Machine != "" && t.Landing.Machine != q.machine {
			continue
		}
		if keep(t) {
			out = append(out, t)
		}
	}
	return out, nil
}

// remove deletes a task's worktree, and its branch when dropBranch (its code is on the
// target, or given up).
func (q *Queue) remove(id string, dropBranch bool) {
	g := git{dir: q.top}
	if isWorktree(q.Worktree(id)) {
		if _, err := g.run("worktree", "remove", "--force", q.Worktree(id)); err != nil {
			q.say("land %s: removing its worktree: %v", id, err)
		}
	}
	if dropBranch {
		g.run("branch", "-q", "-D", Branch(id))
	}
}

// Stale is a task worktree that should not be there, or a task whose worktree is gone.
type Stale struct {
	TaskID, Path, Why string
}

// Stale lists the task worktrees left behind (their task's code landed or was given up,
// or the task is gone) and the queued tasks whose worktree was deleted by hand: what
// `aipm doctor` reports.
func (q *Queue) Stale() []Stale {
	var out []Stale
	des, _ := os.ReadDir(filepath.Dir(q.Worktree("x")))
	for _, de := range des {
		id := de.Name()
		if filestore.ValidateEntityID(filestore.PrefixTask, id) != nil {
			continue
		}
		t, err := q.s.Task(id)
		switch {
		case err != nil:
			out = append(out, Stale{id, q.Worktree(id), "its task is gone (" + err.Error() + "): remove it with `git worktree remove --force " + q.Worktree(id) + "`"})
		case t.Landing == nil:
		case t.Landing.State == filestore.LandLanded || t.Landing.State == filestore.LandAbandoned:
			out = append(out, Stale{id, q.Worktree(id), "its task's code is " + t.Landing.State + ": remove it with `git worktree remove --force " + q.Worktree(id) + "`"})
		}
	}
	// Registered with Git, but deleted by hand: the task's code cannot land from it.
	list, err := git{dir: q.top}.run("worktree", "list", "--porcelain")
	if err != nil {
		return out
	}
	for _, rec := range strings.Split(list, "\n\n") {
		var path, id string
		for _, line := range strings.Split(rec, "\n") {
			if p, ok := strings.CutPrefix(line, "worktree "); ok {
				path = p
			}
			if b, ok := strings.CutPrefix(line, "branch refs/heads/aipm/"); ok && filestore.ValidateEntityID(filestore.PrefixTask, b) == nil {
				id = b
			}
		}
		if id == "" || isWorktree(path) {
			continue
		}
		why := "its worktree was deleted but Git still registers it: `git worktree prune` clears it"
		if t, err := q.s.Task(id); err == nil && t.Landing != nil && !t.Landing.NeedsHuman &&
			(t.Landing.State == filestore.LandQueued || t.Landing.State == filestore.LandChecking) {
			why = "its worktree was deleted while its code waits to land: `aipm land abandon " + id + "`, or restore it with `git worktree prune && git worktree add " + path + " aipm/" + id + "`"
		}
		out = append(out, Stale{id, path, why})
	}
	return out
}

// Diff is what a task's code changes: the landed commit's diff once it landed, else its
// branch (and what its worktree has not committed yet) against its base. stat asks for
// git's summary (--stat) instead of the patch.
func (q *Queue) Diff(t *filestore.Task, stat bool) (string, error) {
	l := t.Landing
	if l == nil {
		return "", nil
	}
	mode := "-p"
	if stat {
		mode = "--stat"
	}
	g := git{dir: q.top}
	switch {
	case l.State == filestore.LandLanded && l.LandedCommit != "":
		return g.run("show", "--format=", mode, "--no-color", l.LandedCommit)
	case l.State == filestore.LandLanded:
		return "", nil
	}
	if wt := q.Worktree(t.ID); isWorktree(wt) {
		return git{dir: wt}.run(append([]string{"diff", mode, "--no-color", l.Base, "--", "."}, notState...)...)
	}
	if g.ok("rev-parse", "-q", "--verify", "refs/heads/"+l.Branch) {
		return g.run(append([]string{"diff", mode, "--no-color", l.Base, "refs/heads/" + l.Branch, "--", "."}, notState...)...)
	}
	return "", nil
}
