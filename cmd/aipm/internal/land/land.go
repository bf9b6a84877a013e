// Package land brings each task's code to the project's target branch: a worktree and a
// branch per task, made from the target's tip when the task starts, and a merge queue that
// lands what a task submitted, one task at a time, gated by the project's check.
//
// # A branch per task
//
// In a Git repository with at least one commit (and settings.task_branches not false), a
// task that `aipm run` starts works in <repo>.worktrees/<task id>, on branch
// aipm/<task id>, made from the target's tip (settings.target_branch; where the target
// has a remote, its tip there after a fetch). A task whose dependencies have not landed
// does not start (filestore.DependencyMet), so its base holds their code. The task's
// landing record (filestore.Landing) names the branch, the base and this machine.
//
// # The queue
//
// When the task is done, its landing is queued. The queue is deterministic code, not a
// model, and lands one task at a time, the highest priority first, then in the order they
// were submitted. For each:
//
//  1. What the agent left uncommitted is committed (author: the agent), and the branch is
//     squashed into one commit: subject the task's title, the agent's own commit subjects
//     in its body, trailer `Aipm-Task: <id>`. No .ai-pm path enters it. A task that
//     changed nothing lands as it is, with no commit.
//  2. The commit is rebased onto the target's latest tip. A rebase (not a merge) keeps
//     the target's history a line of one commit per task, each of which passed the
//     check as it stands there; a conflict is the rebase's.
//  3. The check (settings.check_command, approved on this machine by `aipm trust`) runs
//     in the task's worktree.
//  4. The target moves by fast-forward: pushed where it has a remote (never forced: a
//     rejected push fetches and goes round again from 2), and the local branch follows;
//     a main worktree that has the target checked out is brought up to date if it is
//     clean and left alone (the human told) if not.
//
// A conflict or a failed check makes rework: a task for the same agent, its description
// the original's and then what went wrong, started on the target's new tip; when it
// lands, the original counts as landed. After settings.max_land_attempts failed
// attempts, a person decides (`aipm land retry|abandon`).
//
// Each machine's queue lands the tasks whose branches its clone holds; the remote's
// fast-forward-only push keeps two machines from landing over each other.
//
// # Files
//
// land.go holds the Queue and the target (its branch, remote and tip); worktree.go a
// task's worktree and branch: made, removed, the stale ones `aipm doctor` reports, and a
// task's diff; queue.go the queue's order and its step, one entry at a time; attempt.go
// one attempt through the stages above (squash, rebase, check, push); outcome.go what an
// attempt leaves in the store (landed, rework, or a person's decision) and that person's
// retry or abandon; git.go the git commands; proc_*.go the check's process group.
package land

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aipm/aipm/filestore"
)

// Actor is who the queue's writes are recorded as.
var Actor = filestore.Actor{ID: "aipm-land", Via: filestore.ViaCoordinator}

// Queue is a clone's merge queue and the maker of its tasks' worktrees.
type Queue struct {
	s       *filestore.Store
	machine string
	top     string // the clone's main worktree
	rel     string // the store root's place inside a worktree
	say     func(format string, args ...any)

	mu     sync.Mutex
	held   map[string]hold // tasks the queue cannot land now, and why
	active bool            // a step is landing an entry now
}

// hold is an entry the queue passes over until after: it waits for a person (an
// approval, a clean worktree) or for the remote.
type hold struct {
	why   string
	after time.Time
}

// holdFor is how long a held entry waits before the queue looks at it again.
const holdFor = 5 * time.Second

// New returns the queue of the clone around s's root; say prints the queue's timeline
// lines (nil: none). ok is false outside a Git repository.
func New(s *filestore.Store, say func(format string, args ...any)) (q *Queue, ok bool) {
	if say == nil {
		say = func(string, ...any) {}
	}
	common, err := git{dir: s.Root()}.run("rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil || filepath.Base(common) != ".git" {
		return nil, false
	}
	top := filepath.Dir(common)
	rel, err := filepath.Rel(top, s.Root())
	if err != nil || strings.HasPrefix(rel, "..") {
		rel = "."
	}
	machine, err := s.MachineID()
	if err != nil {
		return nil, false
	}
	return &Queue{s: s, machine: machine, top: top, rel: rel, say: say, held: map[string]hold{}}, true
}

// Enabled reports whether tasks work on branches of their own here: the setting allows
// it and the repository has a commit to branch from.
func (q *Queue) Enabled(set filestore.Settings) bool {
	if !set.UseTaskBranches() {
		return false
	}
	return git{dir: q.top}.ok("rev-parse", "--verify", "-q", "HEAD^{commit}")
}

// Target is the branch tasks land on: settings.target_branch, else the branch the main
// worktree has checked out.
func (q *Queue) Target(set filestore.Settings) (string, error) {
	if set.TargetBranch != "" {
		return set.TargetBranch, nil
	}
	b, err := git{dir: q.top}.run("symbolic-ref", "--short", "-q", "HEAD")
	if err != nil || b == "" {
		return "", fmt.Errorf("the main worktree %s has no branch checked out: set settings.target_branch in .ai-pm/project.json", q.top)
	}
	return b, nil
}

// Worktree is where a task's worktree lives: beside the repository, as agent worktrees.
func (q *Queue) Worktree(id string) string {
	return filepath.Join(filepath.Dir(q.top), filepath.Base(q.top)+".worktrees", id)
}

// Branch is a task's branch.
func Branch(id string) string { return "aipm/" + id }

// remote is the remote the target is pushed to: its upstream's, else origin, else the
// only one; "" when the repository has none.
func (q *Queue) remote(target string) string {
	g := git{dir: q.top}
	if r, err := g.run("config", "--get", "branch."+target+".remote"); err == nil && r != "" && r != "." {
		return r
	}
	rs, _ := g.lines("remote")
	if slices.Contains(rs, "origin") {
		return "origin"
	}
	if len(rs) == 1 {
		return rs[0]
	}
	return ""
}

// tip is the target's latest commit: where it has a remote, the remote's after a fetch
// unless the local branch is ahead of it.
func (q *Queue) tip(target, r string) (string, error) {
	g := git{dir: q.top}
	local, _ := g.run("rev-parse", "-q", "--verify", "refs/heads/"+target+"^{commit}")
	if r == "" {
		if local == "" {
			return "", fmt.Errorf("the target branch %s does not exist: set settings.target_branch to a branch of the repository", target)
		}
		return local, nil
	}
	if _, err := g.run("fetch", "-q", r, "refs/heads/"+target+":refs/remotes/"+r+"/"+target); err != nil {
		if local == "" {
			return "", fmt.Errorf("fetching %s from %s: %w", target, r, err)
		}
		q.say("land: cannot fetch %s from %s (%v); going on from the local branch", target, r, err)
		return local, nil
	}
	remote, _ := g.run("rev-parse", "-q", "--verify", "refs/remotes/"+r+"/"+target+"^{commit}")
	switch {
	case remote == "":
		return local, nil
	case local == "" || g.ok("merge-base", "--is-ancestor", local, remote):
		return remote, nil
	}
	return local, nil // ahead of the remote, or apart from it: the push says which
}
