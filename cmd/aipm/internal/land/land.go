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
package land

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aipm/aipm/filestore"
	"github.com/gofrs/flock"
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

// NeedsYou are the tasks whose code did not land and waits for a person's decision
// (`aipm land retry|abandon`): their worktrees stay for it.
func (q *Queue) NeedsYou() ([]*filestore.Task, error) {
	return q.tasksWithWorktree(func(t *filestore.Task) bool { return t.Landing.NeedsHuman })
}

// Entries are this clone's tasks in the queue, in the order it lands them: queued (and
// checking, left by a queue that stopped part-way) and pushed branches waiting for their
// pull request. They are the tasks with a worktree here.
func (q *Queue) Entries() ([]*filestore.Task, error) {
	out, err := q.tasksWithWorktree(func(t *filestore.Task) bool {
		switch t.Landing.State {
		case filestore.LandQueued, filestore.LandChecking, filestore.LandPushed:
			return true
		}
		return false
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b *filestore.Task) int {
		if pa, pb := slices.Index(filestore.Priorities, a.Priority), slices.Index(filestore.Priorities, b.Priority); pa != pb {
			return pb - pa
		}
		var ta, tb time.Time
		if a.Landing.QueuedAt != nil {
			ta = *a.Landing.QueuedAt
		}
		if b.Landing.QueuedAt != nil {
			tb = *b.Landing.QueuedAt
		}
		if c := ta.Compare(tb); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// Waiting counts the entries the queue will land without anyone's help (not held, not
// pushed for a pull request), and lists why each held one waits, and each task whose code
// did not land and waits for a person.
func (q *Queue) Waiting() (n int, held []string) {
	// One look at the worktrees: the coordinator asks after every change it sees.
	all, err := q.tasksWithWorktree(func(*filestore.Task) bool { return true })
	if err != nil {
		return 0, nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, t := range all {
		l := t.Landing
		switch {
		case l.NeedsHuman:
			held = append(held, fmt.Sprintf("%s: %s, needs you (`aipm land retry %s` or `aipm land abandon %s`)", t.ID, l.State, t.ID, t.ID))
		case l.State == filestore.LandWorking && t.Status == filestore.StatusDone:
			// Done a moment ago by another process, read here before it was queued.
			n++
		case l.State == filestore.LandQueued || l.State == filestore.LandChecking:
			if h, ok := q.held[t.ID]; ok {
				held = append(held, t.ID+": "+h.why)
			} else {
				n++
			}
		}
		// pushed: its pull request is the forge's to merge; nothing here is stuck.
	}
	if q.active {
		n++ // its outcome (a landing, a rework) is not written yet
	}
	return n, held
}

func (q *Queue) setHold(id, why string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if h, ok := q.held[id]; !ok || h.why != why {
		q.say("land %s: waits: %s", id, why)
	}
	q.held[id] = hold{why: why, after: time.Now().Add(holdFor)}
}

// Step lands the first entry it may (busy says which tasks still have a running agent
// process: their worktree is still theirs) and reports whether it did anything. One step
// at a time per clone: a second queue (`aipm land run` beside `aipm run`) does nothing
// meanwhile. next is when a held entry is due for another look.
func (q *Queue) Step(busy func(taskID string) bool) (did bool, next time.Time, err error) {
	lk := flock.New(filepath.Join(q.s.Dir(), "runtime", "locks", "land.lock"))
	if err := filestore.EnsureDir(filepath.Dir(lk.Path())); err != nil {
		return false, next, err
	}
	ok, err := lk.TryLock()
	if err != nil || !ok {
		return false, time.Now().Add(holdFor), err
	}
	defer lk.Unlock()
	es, err := q.Entries()
	if err != nil {
		return false, next, err
	}
	now := time.Now()
	for _, t := range es {
		if busy != nil && busy(t.ID) {
			continue
		}
		q.mu.Lock()
		h, isHeld := q.held[t.ID]
		q.mu.Unlock()
		if isHeld && now.Before(h.after) {
			if next.IsZero() || h.after.Before(next) {
				next = h.after
			}
			continue
		}
		if t.Landing.State == filestore.LandPushed {
			if q.checkMerged(t) {
				return true, next, nil
			}
			continue
		}
		q.mu.Lock()
		delete(q.held, t.ID)
		q.active = true
		q.mu.Unlock()
		err := q.land(t)
		q.mu.Lock()
		q.active = false
		q.mu.Unlock()
		if err != nil {
			q.setHold(t.ID, err.Error())
			continue
		}
		return true, next, nil
	}
	return false, next, nil
}

// failure is an attempt that did not fit: a conflict or a failed check.
type failure struct {
	state  string // filestore.LandConflict or LandCheckFailed
	detail string
}

func (f *failure) Error() string { return f.state + ": " + f.detail }

// land takes one task through the queue. An error holds the entry (it waits for a person
// or the remote, and is looked at again later); a conflict or a failed check ends the
// attempt as rework or for a person.
func (q *Queue) land(t *filestore.Task) error {
	p, err := q.s.ProjectView()
	if err != nil {
		return err
	}
	set := p.Settings
	l := t.Landing
	wt := q.Worktree(t.ID)
	if !isWorktree(wt) {
		return fmt.Errorf("its worktree %s is gone: `aipm land abandon %s`, or restore the worktree", wt, t.ID)
	}
	// The check must be approved before anything moves: a held entry changes nothing.
	check, hasCheck := set.Check()
	if hasCheck {
		prog, err := q.s.CommandProgram(check, "", filepath.Join(wt, q.rel))
		if err != nil {
			return err
		}
		if ok, err := q.s.CommandApproved(filestore.CheckCommandName, check, prog); err != nil {
			return err
		} else if !ok {
			return fmt.Errorf("settings.check_command is not approved on this machine (new, or changed since it was approved): review it and approve it with `aipm trust`")
		}
	}
	if _, err := q.s.UpdateLanding(Actor, t.ID, func(_ *filestore.Task, l *filestore.Landing) error {
		l.State, l.Detail = filestore.LandChecking, "bringing "+l.Branch+" up to "+l.Target
		return nil
	}); err != nil {
		return err
	}
	requeue := func(err error) error {
		q.s.UpdateLanding(Actor, t.ID, func(_ *filestore.Task, l *filestore.Landing) error {
			l.State, l.Detail = filestore.LandQueued, "waits: "+err.Error()
			return nil
		})
		return err
	}
	id, err := q.identity(t)
	if err != nil {
		return requeue(err)
	}
	g := git{dir: wt, env: id}
	commit, err := q.submit(g, t)
	if err != nil {
		return requeue(err)
	}
	if commit == "" {
		return q.landed(t, "", "it changed nothing")
	}
	remote := q.remote(l.Target)
	for round := 1; ; round++ {
		tip, err := q.tip(l.Target, remote)
		if err != nil {
			return requeue(err)
		}
		if commit, err = q.rebase(g, tip); err != nil {
			var f *failure
			if errors.As(err, &f) {
				return q.failed(t, set, f)
			}
			return requeue(err)
		}
		if hasCheck {
			if f := q.check(t, set, wt, tip); f != nil {
				return q.failed(t, set, f)
			}
		}
		if set.LandMode() == filestore.LandBranch {
			return q.pushBranch(t, g, remote, commit)
		}
		moved, err := q.move(l.Target, remote, tip, commit)
		if err != nil {
			return requeue(err)
		}
		if moved {
			how := "on " + l.Target
			if remote != "" {
				how += " (pushed to " + remote + ")"
			}
			return q.landed(t, commit, how)
		}
		if round >= 5 {
			return requeue(fmt.Errorf("%s moved under each of %d attempts to push; trying again later", l.Target, round))
		}
		q.say("land %s: %s moved on %s meanwhile; again from its new tip", t.ID, l.Target, remote)
	}
}

// identity is the environment of the queue's commits: the agent as author; this
// machine's Git identity as committer, or aipm where it has none.
func (q *Queue) identity(t *filestore.Task) ([]string, error) {
	name, email := t.AssigneeID, t.AssigneeID+"@aipm.invalid"
	if t.AssigneeID == "" {
		name, email = "aipm", "aipm@aipm.invalid"
	} else if a, err := q.s.Agent(t.AssigneeID); err == nil && a.Name != "" {
		name = a.Name
	}
	env := []string{"GIT_AUTHOR_NAME=" + name, "GIT_AUTHOR_EMAIL=" + email, "GIT_EDITOR=true"}
	if e, err := (git{dir: q.top}).run("config", "user.email"); err != nil || e == "" {
		env = append(env, "GIT_COMMITTER_NAME=aipm", "GIT_COMMITTER_EMAIL=aipm@aipm.invalid")
	}
	return env, nil
}

// submit commits what the agent left and squashes the branch into the task's one
// commit, with no .ai-pm path in it; "" when the task changed nothing.
func (q *Queue) submit(g git, t *filestore.Task) (string, error) {
	l := t.Landing
	if _, err := g.run(append([]string{"add", "-A", "--", "."}, notState...)...); err != nil {
		return "", err
	}
	// The agent's own commits, for the body.
	subjects, _ := g.lines("log", "--format=%s", l.Base+"..HEAD")
	if _, err := g.run("reset", "-q", "--soft", l.Base); err != nil {
		return "", err
	}
	// A store's files never enter a code commit (the worktree's own copy of a store that
	// the code branch tracks is not the store in use).
	staged, err := g.lines("diff", "--cached", "--name-only", "--no-renames", l.Base)
	if err != nil {
		return "", err
	}
	var state []string
	for _, p := range staged {
		if p == filestore.DirName || strings.HasPrefix(p, filestore.DirName+"/") || strings.Contains(p, "/"+filestore.DirName+"/") {
			state = append(state, p)
		}
	}
	if len(state) > 0 {
		if _, err := g.run(append([]string{"reset", "-q", l.Base, "--"}, state...)...); err != nil {
			return "", err
		}
	}
	if len(state) == len(staged) {
		g.run("reset", "-q", "--hard", l.Base)
		return "", nil
	}
	var msg strings.Builder
	msg.WriteString(t.Title + "\n\n")
	if len(subjects) > 0 {
		slices.Reverse(subjects)
		for _, s := range subjects {
			msg.WriteString("- " + s + "\n")
		}
		msg.WriteString("\n")
	}
	msg.WriteString("Aipm-Task: " + t.ID + "\n")
	if t.ReworkOf != "" {
		msg.WriteString("Aipm-Rework-Of: " + t.ReworkOf + "\n")
	}
	f, err := os.CreateTemp("", "aipm-land-msg-")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	f.WriteString(msg.String())
	f.Close()
	if _, err := g.run("commit", "-q", "--no-verify", "-F", f.Name()); err != nil {
		return "", err
	}
	// What the commit left out (a store copy's changes) goes: the worktree must be clean
	// for the rebase.
	g.run("reset", "-q", "--hard", "HEAD")
	return g.run("rev-parse", "HEAD")
}

// rebase brings the task's commit onto tip; a conflict is a failure naming the files.
func (q *Queue) rebase(g git, tip string) (string, error) {
	if heads, _ := g.lines("rev-parse", "HEAD", "HEAD~1"); len(heads) == 2 && heads[1] == tip {
		return heads[0], nil
	}
	if _, err := g.run("rebase", "-q", tip); err != nil {
		files, _ := g.lines("diff", "--name-only", "--diff-filter=U")
		g.run("rebase", "--abort")
		if len(files) == 0 {
			return "", err
		}
		short := tip
		if len(short) > 10 {
			short = short[:10]
		}
		return "", &failure{state: filestore.LandConflict, detail: fmt.Sprintf("it conflicts with the target at %s in: %s", short, strings.Join(files, ", "))}
	}
	return g.run("rev-parse", "HEAD")
}

// checkTail is how much of a failed check's output a rework and the landing record carry.
const checkTail = 2000

// check runs the project's check in the task's worktree; a failure carries the tail of
// its output. The whole output goes to runtime/landings/<task>.log.
func (q *Queue) check(t *filestore.Task, set filestore.Settings, wt, tip string) *failure {
	ac, _ := set.Check()
	dir := filepath.Join(wt, q.rel)
	logPath := filepath.Join(q.s.Dir(), "runtime", "landings", t.ID+".log")
	var log io.Writer = io.Discard
	if err := filestore.EnsureDir(filepath.Dir(logPath)); err == nil {
		if f, err := filestore.OpenAppend(logPath); err == nil {
			defer f.Close()
			fmt.Fprintf(f, "=== %s check of %s on %s: %s\n", time.Now().UTC().Format(time.RFC3339), t.ID, tip, set.CheckCommand)
			log = f
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), set.CheckTimeout())
	defer cancel()
	cmd := exec.CommandContext(ctx, ac.Command[0], ac.Command[1:]...)
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), "AIPM_TASK_ID="+t.ID)
	var tail tailBuffer
	cmd.Stdout = io.MultiWriter(log, &tail)
	cmd.Stderr = cmd.Stdout
	ownGroup(cmd)
	start := time.Now()
	err := cmd.Run()
	fmt.Fprintf(log, "=== exit: %v after %s\n", err, time.Since(start).Round(time.Millisecond))
	if err == nil {
		return nil
	}
	why := err.Error()
	if ctx.Err() != nil {
		why = fmt.Sprintf("it did not finish within %s (settings.check_timeout_seconds)", set.CheckTimeout())
	}
	out := strings.TrimSpace(tail.String())
	detail := fmt.Sprintf("the check `%s` failed (%s)", set.CheckCommand, why)
	if out != "" {
		detail += "; the end of its output:\n" + out
	}
	return &failure{state: filestore.LandCheckFailed, detail: detail}
}

// tailBuffer keeps the last checkTail bytes written to it.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 4*checkTail {
		t.b = append(t.b[:0], t.b[len(t.b)-checkTail:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	b := t.b
	if len(b) > checkTail {
		b = b[len(b)-checkTail:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 && i < len(b)-1 {
			b = b[i+1:]
		}
	}
	return string(b)
}

// move makes commit the target: pushed first where there is a remote (a fast-forward
// only: moved is false when the remote's target moved meanwhile), then the local branch,
// and a clean main worktree that has it checked out.
func (q *Queue) move(target, remote, tip, commit string) (moved bool, err error) {
	g := git{dir: q.top}
	wt, dirty := q.checkedOut(target)
	if remote != "" {
		if _, err := g.run("push", "-q", remote, commit+":refs/heads/"+target); err != nil {
			if strings.Contains(err.Error(), "rejected") || strings.Contains(err.Error(), "fetch first") || strings.Contains(err.Error(), "non-fast-forward") {
				return false, nil
			}
			return false, fmt.Errorf("pushing %s to %s: %w", target, remote, err)
		}
		g.run("update-ref", "refs/remotes/"+remote+"/"+target, commit)
	} else if wt != "" && dirty != "" {
		return false, fmt.Errorf("the worktree %s has %s checked out with uncommitted changes (%s): commit or stash them, and the queue goes on", wt, target, dirty)
	}
	local, _ := g.run("rev-parse", "-q", "--verify", "refs/heads/"+target)
	switch {
	case wt != "" && dirty != "":
		q.say("land: %s has uncommitted changes (%s): left alone; %s is on %s, `git pull --ff-only` brings it when you are ready", wt, dirty, commit[:10], remote)
	case wt != "":
		if _, err := (git{dir: wt}).run("merge", "-q", "--ff-only", commit); err != nil {
			if remote == "" {
				return false, err
			}
			q.say("land: could not bring %s up to date (%v); %s is on %s", wt, err, commit[:10], remote)
		}
	case local == "" || g.ok("merge-base", "--is-ancestor", local, commit):
		if _, err := g.run("update-ref", "refs/heads/"+target, commit); err != nil {
			return remote != "", err
		}
	default:
		if remote == "" {
			return false, fmt.Errorf("the local %s moved apart from %s meanwhile", target, tip)
		}
		q.say("land: the local %s has commits the remote lacks: left alone; %s is on %s", target, commit[:10], remote)
	}
	return true, nil
}

// checkedOut finds the worktree that has branch checked out (""), and what is
// uncommitted there ("" when it is clean; untracked files and any store are not counted).
func (q *Queue) checkedOut(branch string) (dir, dirty string) {
	out, err := git{dir: q.top}.run("worktree", "list", "--porcelain")
	if err != nil {
		return "", ""
	}
	for _, rec := range strings.Split(out, "\n\n") {
		var path string
		on := false
		for _, line := range strings.Split(rec, "\n") {
			if p, ok := strings.CutPrefix(line, "worktree "); ok {
				path = p
			}
			if line == "branch refs/heads/"+branch {
				on = true
			}
		}
		if on && path != "" {
			files, _ := git{dir: path}.lines(append([]string{"diff", "--name-only", "HEAD", "--", "."}, notState...)...)
			if len(files) > 3 {
				files = append(files[:3], fmt.Sprintf("and %d more", len(files)-3))
			}
			return path, strings.Join(files, ", ")
		}
	}
	return "", ""
}

// pushBranch (settings.land "branch") pushes the checked task branch for a forge's pull
// request; the landing waits there until the target holds it (checkMerged).
func (q *Queue) pushBranch(t *filestore.Task, g git, remote, commit string) error {
	if remote == "" {
		return fmt.Errorf("settings.land is \"branch\" but the repository has no remote to push %s to", t.Landing.Branch)
	}
	// The task's own branch, rebased: it replaces what an earlier attempt pushed, and
	// only if that is what this clone last saw there.
	if _, err := g.run("push", "-q", "--force-with-lease", remote, "HEAD:refs/heads/"+t.Landing.Branch); err != nil {
		return err
	}
	_, err := q.s.UpdateLanding(Actor, t.ID, func(_ *filestore.Task, l *filestore.Landing) error {
		l.State, l.Commit = filestore.LandPushed, commit
		l.Detail = fmt.Sprintf("checked and pushed to %s as %s: waits for its pull request into %s", remote, l.Branch, l.Target)
		return nil
	})
	if err == nil {
		q.say("land %s (%s): checked; pushed %s to %s for a pull request into %s", t.ID, t.Title, t.Landing.Branch, remote, t.Landing.Target)
	}
	return err
}

// checkMerged looks whether a pushed branch's task reached the target (its commit, or a
// commit carrying its trailer, as a squash merge keeps it).
func (q *Queue) checkMerged(t *filestore.Task) bool {
	l := t.Landing
	r := q.remote(l.Target)
	if _, err := q.tip(l.Target, r); err != nil {
		return false
	}
	ref := "refs/heads/" + l.Target
	if r != "" {
		ref = "refs/remotes/" + r + "/" + l.Target
	}
	g := git{dir: q.top}
	landed := ""
	if l.Commit != "" && g.ok("merge-base", "--is-ancestor", l.Commit, ref) {
		landed = l.Commit
	} else if c, err := g.run("log", "-1", "--format=%H", "--fixed-strings", "--grep", "Aipm-Task: "+t.ID, ref); err == nil && c != "" {
		landed = c
	}
	if landed == "" {
		q.mu.Lock()
		q.held[t.ID] = hold{why: l.Detail, after: time.Now().Add(holdFor)}
		q.mu.Unlock()
		return false
	}
	return q.landed(t, landed, "merged into "+l.Target) == nil
}

// landed records the task's code on the target (the original's too, for a rework) and
// removes its worktree and branch.
func (q *Queue) landed(t *filestore.Task, commit, how string) error {
	now := time.Now().UTC()
	mark := func(detail string) func(*filestore.Task, *filestore.Landing) error {
		return func(_ *filestore.Task, l *filestore.Landing) error {
			l.State, l.LandedCommit, l.LandedAt, l.NeedsHuman, l.Detail = filestore.LandLanded, commit, &now, false, detail
			if commit != "" {
				l.Commit = commit
			}
			return nil
		}
	}
	if _, err := q.s.UpdateLanding(Actor, t.ID, mark("")); err != nil {
		return err
	}
	if t.ReworkOf != "" {
		if _, err := q.s.UpdateLanding(Actor, t.ReworkOf, mark("landed by its rework "+t.ID)); err != nil {
			q.say("land %s: recording the landing on %s: %v", t.ID, t.ReworkOf, err)
		}
	}
	q.remove(t.ID, true)
	if commit == "" {
		q.say("land %s (%s): landed: %s", t.ID, t.Title, how)
	} else {
		q.say("land %s (%s): landed %s %s", t.ID, t.Title, commit[:10], how)
	}
	return nil
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

// failed ends an attempt that did not fit: rework for the same agent, or, past the
// attempts allowed, a person's decision.
func (q *Queue) failed(t *filestore.Task, set filestore.Settings, f *failure) error {
	root := filestore.LandingRoot(t)
	attempts := 0
	if _, err := q.s.UpdateLanding(Actor, root, func(_ *filestore.Task, l *filestore.Landing) error {
		l.Attempts++
		attempts = l.Attempts
		if root != t.ID {
			l.Detail = f.detail
		}
		return nil
	}); err != nil {
		return err
	}
	limit := set.LandAttempts()
	human := attempts >= limit
	if _, err := q.s.UpdateLanding(Actor, t.ID, func(_ *filestore.Task, l *filestore.Landing) error {
		l.State, l.Detail, l.NeedsHuman = f.state, f.detail, human
		return nil
	}); err != nil {
		return err
	}
	what := "conflict"
	if f.state == filestore.LandCheckFailed {
		what = "check failed"
	}
	if human {
		if root != t.ID {
			q.s.UpdateLanding(Actor, root, func(_ *filestore.Task, l *filestore.Landing) error {
				l.NeedsHuman = true
				return nil
			})
		}
		q.say("land %s (%s): %s, attempt %d of %d: needs you: `aipm land retry %s` or `aipm land abandon %s` (%s)",
			t.ID, t.Title, what, attempts, limit, t.ID, t.ID, Summary(f.detail))
		return nil
	}
	what2 := "What went wrong when its code was to land (attempt " + fmt.Sprint(attempts) + " of " + fmt.Sprint(limit) + "): " + f.detail +
		"\nThis task starts from the target's new tip; do the work again there."
	rw, err := q.s.CreateRework(Actor, t.ID, root, what2)
	if err != nil {
		return err
	}
	if root != t.ID {
		q.s.UpdateLanding(Actor, root, func(_ *filestore.Task, l *filestore.Landing) error {
			l.ReworkTaskID = rw.ID
			return nil
		})
	}
	q.remove(t.ID, false) // its branch stays, for a look at what did not fit
	q.say("land %s (%s): %s, attempt %d of %d: rework %s for %s (%s)", t.ID, t.Title, what, attempts, limit, rw.ID, rw.AssigneeID, Summary(f.detail))
	return nil
}

// Summary is a failure's detail in one line: its first line, and the last line of
// output that follows it.
func Summary(detail string) string {
	first, rest, _ := strings.Cut(detail, "\n")
	first = strings.TrimSuffix(first, "; the end of its output:")
	lines := strings.Split(strings.TrimSpace(rest), "\n")
	if last := strings.TrimSpace(lines[len(lines)-1]); last != "" {
		first += ": …" + last
	}
	return first
}

// Retry puts a task whose landing waits for a person back in the queue for one more
// attempt, from its branch as it is.
func (q *Queue) Retry(actor filestore.Actor, id string) (*filestore.Task, error) {
	t, err := q.s.Task(id)
	if err != nil {
		return nil, err
	}
	if t.Landing == nil {
		return nil, fmt.Errorf("task %s has no branch of its own: nothing to land", id)
	}
	if !isWorktree(q.Worktree(id)) {
		return nil, fmt.Errorf("task %s's worktree %s is gone: nothing to retry; `aipm land abandon %s` gives its code up", id, q.Worktree(id), id)
	}
	switch t.Landing.State {
	case filestore.LandConflict, filestore.LandCheckFailed, filestore.LandQueued, filestore.LandChecking:
	default:
		return nil, fmt.Errorf("task %s's landing is %s: only a conflict, a failed check or a waiting entry can be retried", id, t.Landing.State)
	}
	p, err := q.s.ProjectView()
	if err != nil {
		return nil, err
	}
	root := filestore.LandingRoot(t)
	q.s.UpdateLanding(actor, root, func(_ *filestore.Task, l *filestore.Landing) error {
		l.Attempts = min(l.Attempts, p.Settings.LandAttempts()-1)
		l.NeedsHuman = false
		return nil
	})
	q.mu.Lock()
	delete(q.held, id)
	q.mu.Unlock()
	return q.s.UpdateLanding(actor, id, func(_ *filestore.Task, l *filestore.Landing) error {
		now := time.Now().UTC()
		l.State, l.NeedsHuman, l.Detail, l.QueuedAt = filestore.LandQueued, false, "retried by "+actor.ID, &now
		return nil
	})
}

// Abandon gives a task's code up: it never lands; its worktree goes, its branch stays.
func (q *Queue) Abandon(actor filestore.Actor, id string) (*filestore.Task, error) {
	t, err := q.s.Task(id)
	if err != nil {
		return nil, err
	}
	if t.Landing == nil {
		return nil, fmt.Errorf("task %s has no branch of its own: nothing to abandon", id)
	}
	if t.Landing.State == filestore.LandLanded {
		return nil, fmt.Errorf("task %s's code has landed already (%s)", id, t.Landing.LandedCommit)
	}
	give := func(_ *filestore.Task, l *filestore.Landing) error {
		l.State, l.NeedsHuman, l.Detail = filestore.LandAbandoned, false, "abandoned by "+actor.ID
		return nil
	}
	if root := filestore.LandingRoot(t); root != id {
		q.s.UpdateLanding(actor, root, give)
	}
	out, err := q.s.UpdateLanding(actor, id, give)
	if err != nil {
		return nil, err
	}
	q.remove(id, false)
	return out, nil
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
