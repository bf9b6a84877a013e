// Package clone is what aipm knows of the Git repository around a store: whether a
// directory is a linked worktree and where its clone's main worktree is, and the merge
// driver registered in the clone's Git config. It imports no aipm package; it reads Git's
// own files and runs the git command, nothing else.
package clone

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Worktree describes the Git worktree a directory is in.
type Worktree struct {
	Top string // the worktree's top directory
	// Main is the clone's main worktree when Top is a linked worktree (`git worktree
	// add`), else "".
	Main string
}

// Find walks up from dir to the Git worktree holding it, reading .git files as Git does;
// ok is false outside any worktree. It starts no process: aipm calls it on every start.
func Find(dir string) (w Worktree, ok bool) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return w, false
	}
	for {
		fi, err := os.Lstat(filepath.Join(dir, ".git"))
		if err == nil {
			w.Top = dir
			if fi.Mode().IsRegular() {
				w.Main = mainOf(dir)
			}
			return w, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return w, false
		}
		dir = parent
	}
}

// mainOf returns the main worktree of the linked worktree at top, from its .git file
// ("gitdir: <clone>/.git/worktrees/<name>") and that directory's commondir; "" for a
// submodule (no commondir) or a bare clone (no main worktree).
func mainOf(top string) string {
	data, err := os.ReadFile(filepath.Join(top, ".git"))
	if err != nil {
		return ""
	}
	gitdir, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir:")
	if !ok {
		return ""
	}
	gitdir = strings.TrimSpace(gitdir)
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(top, gitdir)
	}
	// Trusted only as git's own worktree bookkeeping: the administrative directory names
	// this very .git file back (<gitdir>/gitdir). A .git file copied from an archive, or
	// edited by an agent in its worktree, to point at another repository's worktree entry
	// does not, and would otherwise send this directory's writes to that repository's store.
	back, err := os.ReadFile(filepath.Join(gitdir, "gitdir"))
	if err != nil {
		return ""
	}
	bp := strings.TrimSpace(string(back))
	if !filepath.IsAbs(bp) { // worktree.useRelativePaths
		bp = filepath.Join(gitdir, bp)
	}
	if !samePath(bp, filepath.Join(top, ".git")) {
		return ""
	}
	cd, err := os.ReadFile(filepath.Join(gitdir, "commondir"))
	if err != nil {
		return ""
	}
	common := strings.TrimSpace(string(cd))
	if !filepath.IsAbs(common) {
		common = filepath.Join(gitdir, common)
	}
	common = filepath.Clean(common)
	if filepath.Base(common) != ".git" {
		return ""
	}
	return filepath.Dir(common)
}

// samePath reports whether two paths name the same file.
func samePath(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// SharedRoot maps a store root found in a linked worktree to the same directory in the
// clone's main worktree, where the clone's one store lives; linked is false (and root
// comes back unchanged) anywhere else.
func SharedRoot(root string) (shared string, linked bool, err error) {
	w, ok := Find(root)
	if !ok || w.Main == "" {
		return root, false, nil
	}
	rel, err := filepath.Rel(w.Top, root)
	if err != nil {
		return root, false, err
	}
	shared = filepath.Join(w.Main, rel)
	if _, err := os.Stat(filepath.Join(shared, ".ai-pm", "project.json")); err != nil {
		return root, false, fmt.Errorf("%s is a linked worktree of the clone at %s, whose main worktree has no %s: "+
			"aipm keeps one store per clone there (check out a branch holding it in %s, or set AIPM_ROOT)",
			w.Top, w.Main, filepath.Join(rel, ".ai-pm", "project.json"), w.Main)
	}
	return shared, true, nil
}

// DriverName is the merge driver's name in .gitattributes (merge=aipm) and Git config.
const DriverName = "aipm"

// ErrNotGit says a directory is in no Git repository.
var ErrNotGit = errors.New("not in a Git repository")

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(errb.String()); msg != "" {
			return "", fmt.Errorf("git %s: %s", strings.Join(args, " "), msg)
		}
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(out.String()), nil
}

// IsRepo reports whether dir is inside a Git work tree. Without git installed it is not.
func IsRepo(dir string) bool {
	if _, ok := Find(dir); !ok {
		return false
	}
	out, err := git(dir, "rev-parse", "--is-inside-work-tree")
	return err == nil && out == "true"
}

// DriverCommand is the merge driver command line for the aipm executable exe, as Git
// runs it through the shell: %O the ancestor, %A ours (overwritten with the result), %B
// theirs, %P the path.
func DriverCommand(exe string) string {
	return shellQuote(exe) + " merge-driver %O %A %B %P"
}

// Driver returns the merge driver command registered in the clone at dir ("" if none).
func Driver(dir string) (string, error) {
	if !IsRepo(dir) {
		return "", ErrNotGit
	}
	out, err := git(dir, "config", "--get", "merge."+DriverName+".driver")
	if err != nil {
		return "", nil // git config --get exits 1 for a missing key
	}
	return out, nil
}

// RegisterDriver writes the merge driver for exe into the clone's config (shared by all
// its worktrees); changed is false when it was already there.
func RegisterDriver(dir, exe string) (changed bool, err error) {
	want := DriverCommand(exe)
	have, err := Driver(dir)
	if err != nil {
		return false, err
	}
	if have == want {
		return false, nil
	}
	if _, err := git(dir, "config", "merge."+DriverName+".name", "aipm: field-wise merge of .ai-pm entity files"); err != nil {
		return false, err
	}
	if _, err := git(dir, "config", "merge."+DriverName+".driver", want); err != nil {
		return false, err
	}
	return true, nil
}

// DriverProgram returns the program of a registered driver command (unquoted).
func DriverProgram(cmd string) string {
	if strings.HasPrefix(cmd, "'") {
		if end := strings.Index(cmd[1:], "' merge-driver"); end >= 0 {
			return strings.ReplaceAll(cmd[1:1+end], `'\''`, "'")
		}
	}
	prog, _, _ := strings.Cut(cmd, " ")
	return prog
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// AgentWorktree returns the directory an agent works in when each agent has its own
// worktree (settings.agent_worktrees): the store root's place inside the worktree
// <repo>.worktrees/<agent-id>, beside the clone's main worktree, on branch
// aipm/<agent-id>. It is made from the current HEAD on first use (created) and never
// removed: what the agent did there waits for a human to review and merge.
func AgentWorktree(root, agentID string) (dir string, created bool, err error) {
	w, ok := Find(root)
	if !ok {
		return "", false, fmt.Errorf("%s is not in a Git repository: per-agent worktrees need one", root)
	}
	top := w.Top
	if w.Main != "" {
		top = w.Main
	}
	rel, err := filepath.Rel(top, root)
	if err != nil || strings.HasPrefix(rel, "..") {
		rel = "."
	}
	wt := filepath.Join(filepath.Dir(top), filepath.Base(top)+".worktrees", agentID)
	dir = filepath.Join(wt, rel)
	if fi, err := os.Lstat(filepath.Join(wt, ".git")); err == nil && fi.Mode().IsRegular() {
		return dir, false, nil
	}
	if _, err := os.Lstat(wt); err == nil {
		return "", false, fmt.Errorf("%s exists but is not a Git worktree: move it away, or turn settings.agent_worktrees off", wt)
	}
	branch := "aipm/" + agentID
	args := []string{"worktree", "add", "-q", wt, branch}
	if _, err := git(top, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch); err != nil {
		args = []string{"worktree", "add", "-q", "-b", branch, wt}
	}
	if _, err := git(top, args...); err != nil {
		// A worktree deleted by hand (rm -rf) stays registered, and Git refuses to add
		// its branch again: prune the registrations whose directory is gone, and retry.
		if _, perr := git(top, "worktree", "prune"); perr != nil {
			return "", false, err
		}
		if _, err := git(top, args...); err != nil {
			return "", false, err
		}
	}
	return dir, true, nil
}

// StaleAgentWorktrees lists the agents' worktrees (branch aipm/<agent>) that Git still
// registers but whose directory is gone: deleted by hand. aipm run recreates one at the
// agent's next start; `git worktree prune` clears them all.
func StaleAgentWorktrees(root string) (map[string]string, error) {
	w, ok := Find(root)
	if !ok {
		return nil, nil
	}
	top := w.Top
	if w.Main != "" {
		top = w.Main
	}
	out, err := git(top, "worktree", "list", "--porcelain")
	if err != nil {
		return nil, err
	}
	stale := map[string]string{} // agent id → the registered path
	for _, rec := range strings.Split(out, "\n\n") {
		var path, agent string
		for _, line := range strings.Split(rec, "\n") {
			if p, ok := strings.CutPrefix(line, "worktree "); ok {
				path = p
			}
			if b, ok := strings.CutPrefix(line, "branch refs/heads/aipm/"); ok {
				agent = b
			}
		}
		// aipm/tsk_… are tasks' branches, which the merge queue keeps (package land).
		if path == "" || agent == "" || strings.HasPrefix(agent, "tsk_") {
			continue
		}
		if _, err := os.Lstat(filepath.Join(path, ".git")); err != nil {
			stale[agent] = path
		}
	}
	return stale, nil
}
