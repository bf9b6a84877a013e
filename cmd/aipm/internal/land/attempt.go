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
	"time"

	"github.com/aipm/aipm/filestore"
)

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
