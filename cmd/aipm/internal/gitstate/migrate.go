package gitstate

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aipm/aipm/filestore"
)

// Migration is what Migrate did; a second run does nothing and says so.
type Migration struct {
	// Replayed is the number of code commits whose .ai-pm became commits of the state
	// branch (0 when the branch existed).
	Replayed int
	// CreatedBranch is set when the state branch was made here.
	CreatedBranch bool
	// Untracked is the code commit that stopped tracking .ai-pm ("" if none was needed).
	Untracked string
	// Attached is set when .ai-pm became the state branch's worktree.
	Attached bool
	// Pending is set when files changed since the last code commit were committed to the
	// state branch.
	Pending bool
}

// Done reports whether the migration had anything to do.
func (m *Migration) Done() bool {
	return m.Replayed > 0 || m.CreatedBranch || m.Untracked != "" || m.Attached || m.Pending
}

// Migrate moves a repository's .ai-pm onto the state branch and is idempotent: each step
// checks whether it is still needed, so a second run, or a run after one that was
// interrupted, finishes the work. History is kept: every commit of the code branch's
// first-parent history that changed .ai-pm becomes a commit of the state branch with the
// same tree of .ai-pm, message, author, committer and dates — so two clones of one code
// history migrate to the very same commits, and their states then merge like any two
// clones' — and the code branch gets one commit that stops tracking .ai-pm and ignores
// it. Nothing under .ai-pm is rewritten. Run it with no agent working.
func Migrate(root string) (*Migration, error) {
	top, err := mainTop(root)
	if err != nil {
		return nil, err
	}
	m := &Migration{}
	if _, err := os.Stat(filepath.Join(stateDir(top), "project.json")); err != nil {
		if ok, cerr := Checkout(top); cerr != nil || ok {
			m.Attached = ok
			return m, cerr
		}
		return nil, fmt.Errorf("%s has no %s/project.json: run `aipm init` first", top, filestore.DirName)
	}
	g := gitCmd{dir: top}
	if err := exclude(top); err != nil {
		return nil, err
	}
	tracked := TrackedOnCode(top)
	if tracked && !g.ok("diff", "--cached", "--quiet") {
		return nil, errors.New("the code branch has staged changes: commit or unstage them first (`git status`), then run `aipm migrate` again; the migration commits only its own change")
	}
	if !branchExists(top) {
		if tracked {
			n, err := replay(top)
			if err != nil {
				return nil, err
			}
			m.Replayed = n
		}
		if !branchExists(top) { // nothing committed yet: the files as they are
			if err := commitFiles(top, "aipm: the project's state"); err != nil {
				return nil, err
			}
		}
		m.CreatedBranch = true
	}
	if tracked {
		c, err := untrack(top)
		if err != nil {
			return nil, err
		}
		m.Untracked = c
	}
	if !Attached(top) {
		if err := attach(top); err != nil {
			return nil, err
		}
		m.Attached = true
	}
	if err := setUpstream(top, Remote(top)); err != nil {
		return nil, err
	}
	st := gitCmd{dir: stateDir(top), env: identity(top)}
	if _, err := st.run("add", "-A", "."); err != nil {
		return nil, err
	}
	if !st.ok("diff", "--cached", "--quiet") {
		args, err := signingOf(stateDir(top)).cmd("commit", "-c", "maintenance.auto=false")
		if err != nil {
			return nil, err
		}
		if _, err := st.run(append(args, "-q", "--no-verify", "-m", "aipm: changes not yet committed when the state moved to its branch"+rootTrailers(top))...); err != nil {
			return nil, err
		}
		m.Pending = true
	}
	return m, nil
}

// emptyTree is the id of Git's empty tree (SHA-1 repositories).
const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

// replay builds the state branch from the code branch's history of .ai-pm and returns
// how many commits it made.
func replay(top string) (int, error) {
	g := gitCmd{dir: top}
	out, err := g.run("rev-list", "--first-parent", "--reverse", "HEAD", "--", filestore.DirName)
	if err != nil {
		return 0, err
	}
	commits := strings.Fields(out)
	if len(commits) == 0 {
		return 0, nil
	}
	specs := make([]string, 0, 2*len(commits))
	for _, c := range commits {
		specs = append(specs, c, c+":"+filestore.DirName)
	}
	objs, err := g.catBatch(specs)
	if err != nil {
		return 0, err
	}
	commitTree, err := signingOf(stateDir(top)).cmd("commit-tree")
	if err != nil {
		return 0, err
	}
	var parent, prevTree string
	n := 0
	for i := range commits {
		commit, tree := objs[2*i], objs[2*i+1]
		if !commit.ok || commit.typ != "commit" {
			return n, fmt.Errorf("read commit %s", commits[i])
		}
		treeID := emptyTree // .ai-pm removed in this commit
		if tree.ok && tree.typ == "tree" {
			treeID = tree.id
		}
		if treeID == prevTree {
			continue
		}
		env, msg := commitMeta(commit.data)
		args := append(slices.Clip(commitTree), treeID)
		if parent != "" {
			args = append(args, "-p", parent)
		}
		if treeID == emptyTree {
			if _, err := g.run("hash-object", "-t", "tree", "-w", "--stdin"); err != nil {
				return n, err
			}
		}
		c := gitCmd{dir: top, env: env, stdin: msg}
		id, err := c.run(args...)
		if err != nil {
			return n, err
		}
		parent, prevTree = id, treeID
		n++
	}
	if parent == "" {
		return 0, nil
	}
	_, err = g.run("update-ref", ref, parent, "")
	return n, err
}

// commitMeta returns a commit's author and committer as git's environment variables,
// and its message.
func commitMeta(data []byte) (env []string, msg []byte) {
	head, body, _ := bytes.Cut(data, []byte("\n\n"))
	for _, line := range strings.Split(string(head), "\n") {
		kind, rest, _ := strings.Cut(line, " ")
		var pre string
		switch kind {
		case "author":
			pre = "GIT_AUTHOR_"
		case "committer":
			pre = "GIT_COMMITTER_"
		default:
			continue
		}
		lt, gt := strings.Index(rest, "<"), strings.LastIndex(rest, ">")
		if lt < 0 || gt < lt {
			continue
		}
		env = append(env, pre+"NAME="+strings.TrimSpace(rest[:lt]), pre+"EMAIL="+rest[lt+1:gt],
			pre+"DATE="+strings.TrimSpace(rest[gt+1:]))
	}
	return env, body
}

// untrack commits, on the code branch, that .ai-pm is no longer tracked there and is
// ignored: its files stay on disk.
func untrack(top string) (string, error) {
	g := gitCmd{dir: top, env: identity(top)}
	if _, err := g.run("rm", "-r", "-q", "--cached", "--", filestore.DirName); err != nil {
		return "", err
	}
	gi := filepath.Join(top, ".gitignore")
	data, err := os.ReadFile(gi)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	has := false
	for _, l := range strings.Split(string(data), "\n") {
		if t := strings.TrimSpace(l); t == excludeLine || t == "/"+filestore.DirName {
			has = true
		}
	}
	if !has {
		if len(data) > 0 && !bytes.HasSuffix(data, []byte("\n")) {
			data = append(data, '\n')
		}
		data = append(data, "# the project's state lives on branch "+Branch+" (aipm sync)\n"+excludeLine+"\n"...)
		if err := os.WriteFile(gi, data, 0o644); err != nil {
			return "", err
		}
		if _, err := g.run("add", "--", ".gitignore"); err != nil {
			return "", err
		}
	}
	if _, err := g.run("-c", "commit.gpgsign=false", "-c", "maintenance.auto=false", "commit", "-q", "--no-verify", "-m",
		"Move .ai-pm/ to branch "+Branch+"\n\nThe project's state now lives on its own branch, which `aipm sync` commits, merges and\npushes; code branches ignore it. Its history up to here is on that branch."); err != nil {
		return "", err
	}
	return g.run("rev-parse", "--short", "HEAD")
}
