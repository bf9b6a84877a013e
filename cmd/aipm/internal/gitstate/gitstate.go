// Package gitstate keeps a project's state off the code branches, on a Git branch of its
// own, and moves it between clones. Git is one more source of changes to the store, as
// the watcher is; the store (filestore) does not know this package.
//
// # Where the state lives
//
// The state is the orphan branch aipm/state (Branch), fetched and pushed like any branch.
// The clone's main worktree has .ai-pm/ as a linked `git worktree` of that branch:
// humans read the files where they always were, and `git -C .ai-pm log -p` shows their
// history. The code branches never see it: `/.ai-pm/` is in the clone's
// .git/info/exclude (shared by all its worktrees, so nothing is committed to the code for
// it), so a code diff, a code merge done by a forge, `git checkout`, `git stash` and
// `git pull --rebase` on the code branch do not touch a state file. On the state
// branch, .ai-pm/.gitignore keeps runtime/ — sessions, cursors, locks, passkeys, approvals,
// everything machine-local — out of every commit.
//
// Only aipm writes that working copy. A sync round (Syncer) runs git there only to read
// files (add, commit) and to move refs; the merged content of another clone's changes is
// written by the store itself (filestore.Store.Exclusive), file by file and atomically,
// under the store lock, so no agent ever reads a half file and the watchers wake agents
// as for a local write.
//
// A linked code worktree (`git worktree add` for a coding agent) has no .ai-pm of its
// own: aipm there uses the main worktree's, as before (cmd/aipm/internal/clone). This
// package knows Git only through the git command, and imports no other package of the
// command.
//
// A directory outside Git keeps its plain .ai-pm/. So does a repository with no remote at
// `aipm init`, and one that tracks .ai-pm/ on its code branch (the layout before this
// package), which still merges with the merge driver; `aipm migrate` moves either onto
// the state branch, keeping the history (Migrate).
//
// # A sync round
//
// Under a per-clone sync lock (runtime/locks/sync.lock): fetch the remote's aipm/state;
// then, holding the store lock, commit what changed locally since the last round; then
// take theirs in (takein.go), outside the store lock but for the writes, in bounded
// batches: for every path that differs between the merge base and theirs, a three-way
// merge of its three versions read from Git's objects — JSONL files by
// merge.Lines (each record once, in time order), entity files by
// merge.Merge (the merge driver's field-wise rules; free text changed on both sides
// is kept with conflict markers around those fields, which `aipm doctor` names and
// `aipm resolve` settles), other files by `git merge-file`. Each batch is written
// through the store under its lock (a file changed here meanwhile is merged again); the
// result is staged and recorded as a merge commit (or, when this clone had nothing new,
// the branch moves to theirs; or, when a push was over the round's bounds, as a commit of
// what was taken, the rest left to the next rounds). AfterMerge runs, and the branch is
// pushed. A push is never forced: a rejected one fetches and merges
// again. After the round, `git gc --auto` keeps the history packed. Merges aipm did not
// make, and a remote branch rewound by a force-push, are checked against the history both
// sides pushed, and what they dropped is written back (handmerge.go).
package gitstate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aipm/aipm/filestore"
)

// Branch is the state branch.
const Branch = "aipm/state"

// ref is the state branch's full name.
const ref = "refs/heads/" + Branch

// excludeLine keeps the state's working copy out of the code branches.
const excludeLine = "/" + filestore.DirName + "/"

func stateDir(root string) string { return filepath.Join(root, filestore.DirName) }

// Attached reports whether root's .ai-pm is a worktree of the state branch.
func Attached(root string) bool {
	fi, err := os.Lstat(filepath.Join(stateDir(root), ".git"))
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	head, err := gitCmd{dir: stateDir(root)}.run("symbolic-ref", "-q", "HEAD")
	return err == nil && head == ref
}

// TrackedOnCode reports whether the code branch checked out at root tracks .ai-pm: the
// layout before the state branch.
func TrackedOnCode(root string) bool {
	out, err := gitCmd{dir: root}.run("ls-files", "--", filestore.DirName+"/project.json")
	return err == nil && out != ""
}

// Remote returns the remote the state branch syncs with: branch.aipm/state.remote, else
// the clone's only remote, else origin if there is one; "" when there is none.
func Remote(root string) string {
	g := gitCmd{dir: root}
	if r, err := g.run("config", "--get", "branch."+Branch+".remote"); err == nil && r != "" {
		return r
	}
	out, err := g.run("remote")
	if err != nil || out == "" {
		return ""
	}
	remotes := strings.Fields(out)
	if len(remotes) == 1 {
		return remotes[0]
	}
	for _, r := range remotes {
		if r == "origin" {
			return r
		}
	}
	return ""
}

// setUpstream records remote as the state branch's, so `git -C .ai-pm status` and
// `git -C .ai-pm log @{u}` work as for any branch.
func setUpstream(root, remote string) error {
	if remote == "" {
		return nil
	}
	g := gitCmd{dir: root}
	if _, err := g.run("config", "branch."+Branch+".remote", remote); err != nil {
		return err
	}
	_, err := g.run("config", "branch."+Branch+".merge", ref)
	return err
}

// mainTop returns the top of root's main worktree, refusing a linked worktree and a
// directory outside Git.
func mainTop(root string) (string, error) {
	out, err := gitCmd{dir: root}.run("rev-parse", "--path-format=absolute", "--show-toplevel", "--git-dir", "--git-common-dir")
	f := strings.Split(out, "\n")
	if err != nil || len(f) != 3 {
		return "", fmt.Errorf("%s is not in the worktree of a Git repository: the state branch needs one", root)
	}
	if filepath.Clean(f[1]) != filepath.Clean(f[2]) {
		return "", fmt.Errorf("%s is a linked worktree: run this in the clone's main worktree, %s", f[0], filepath.Dir(f[2]))
	}
	return f[0], nil
}

// exclude adds /.ai-pm/ to the clone's .git/info/exclude.
func exclude(root string) error {
	common, err := gitCmd{dir: root}.run("rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return err
	}
	p := filepath.Join(common, "info", "exclude")
	data, err := os.ReadFile(p)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(l) == excludeLine || strings.TrimSpace(l) == "/"+filestore.DirName {
			return nil
		}
	}
	if len(data) > 0 && !strings.HasSuffix(string(data), "\n") {
		data = append(data, '\n')
	}
	data = append(data, "# the project's state: a worktree of branch "+Branch+", never on a code branch\n"+excludeLine+"\n"...)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, data, 0o644)
}

func branchExists(root string) bool {
	return gitCmd{dir: root}.ok("rev-parse", "--verify", "-q", ref)
}

// fetchState fetches the remote's state branch into refs/remotes/<remote>/aipm/state and
// returns that ref; found is false when the remote has no state branch yet.
func fetchState(root, remote string) (theirs string, found bool, err error) {
	rref := "refs/remotes/" + remote + "/" + Branch
	g := gitCmd{dir: root}
	// Under core.bigFileThreshold git streams a large blob of the fetch to disk instead of
	// inflating it whole in memory (a pushed 200 MiB line cost the fetch 200 MB). With
	// fetch.unpackLimit=1 the fetched pack is kept as it came: unpacked into loose objects,
	// a pushed 1 GiB blob was deflated again (seconds), and again when pack packed it.
	if _, err := g.run("-c", "core.bigFileThreshold=1m", "-c", "fetch.unpackLimit=1", "fetch", "-q", "--no-tags", "--no-write-fetch-head", remote, "+"+ref+":"+rref); err != nil {
		// Tell a missing branch (exit 2 of ls-remote --exit-code) from a remote that
		// cannot be reached.
		_, _, lerr := g.run3("ls-remote", "--exit-code", remote, ref)
		var ee interface{ ExitCode() int }
		if errors.As(lerr, &ee) && ee.ExitCode() == 2 {
			return "", false, nil
		}
		return "", false, err
	}
	return rref, true, nil
}

// Checkout prepares the state's working copy in a clone that has none: it fetches the
// state branch and checks it out as root's .ai-pm worktree. ok is false when there is no
// remote or the remote has no state branch.
func Checkout(root string) (ok bool, err error) {
	ok, _, err = CheckoutBounded(root)
	return ok, err
}

// CheckoutBounded is Checkout, which writes only what a round would take from another
// clone (checkoutBounded), and names the files it left out: "<path>: <why> (commit
// <id>)".
func CheckoutBounded(root string) (ok bool, refused []string, err error) {
	top, err := mainTop(root)
	if err != nil {
		return false, nil, err
	}
	remote := Remote(top)
	if remote == "" {
		return false, nil, nil
	}
	rref, found, err := fetchState(top, remote)
	if err != nil || !found {
		return false, nil, err
	}
	if err := exclude(top); err != nil {
		return false, nil, err
	}
	g := gitCmd{dir: top}
	if !branchExists(top) {
		if _, err := g.run("branch", "--no-track", Branch, rref); err != nil {
			return false, nil, err
		}
	}
	if err := setUpstream(top, remote); err != nil {
		return false, nil, err
	}
	if entries, _ := os.ReadDir(stateDir(top)); len(entries) > 0 {
		// What a clone of the old layout keeps after a pull that stopped tracking .ai-pm:
		// its runtime area. No project file is there, so no agent runs: write the
		// branch's files around it.
		if err := attach(top); err != nil {
			return false, nil, err
		}
	} else {
		if _, err := g.run("worktree", "add", "--no-checkout", "-q", stateDir(top), Branch); err != nil {
			return false, nil, fmt.Errorf("check out the state branch into %s: %w", stateDir(top), err)
		}
		if _, err := (gitCmd{dir: stateDir(top)}).run("reset", "-q"); err != nil {
			return false, nil, err
		}
	}
	refused, err = checkoutBounded(gitCmd{dir: stateDir(top)})
	return true, refused, err
}

// checkoutBounded writes into the state worktree g (its index holds the branch, its
// directory nothing of it yet) what a round would take from another clone: the paths of
// the store's format (filestore.StatePath), regular files, within the sizes and line
// length a round takes, read off `git ls-tree` before anything is written. The branch is
// another clone's push as much as a round's input is: a runtime/ from it would become this
// machine's own identity and sessions, and its .gitignore could publish them. What it
// leaves out is removed from the index, so that this clone's first round commits its
// removal; aipm's own .gitignore and .gitattributes are written in place of the branch's
// (a change the first round commits, when they differ). Of the tasks, conversations and
// delegations it takes no more than MaxUnfinished unfinished of each kind.
func checkoutBounded(g gitCmd) (refused []string, err error) {
	head, err := g.run("rev-parse", "--short=10", "HEAD")
	if err != nil {
		return nil, err
	}
	out, err := g.raw("ls-tree", "-r", "-z", "-l", "--full-tree", "HEAD")
	if err != nil {
		return nil, err
	}
	var take, drop strings.Builder
	own := filestore.GitFiles()
	// The files of the kinds held in memory while unfinished, by kind: checked against
	// MaxUnfinished once every other check is done.
	type entity struct {
		path, id string
		size     int64
	}
	held := map[string][]entity{}
	for _, e := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		// <mode> SP <type> SP <id> SP+ <size> TAB <path>
		h, p, ok := strings.Cut(e, "\t")
		f := strings.Fields(h)
		if !ok || len(f) != 4 {
			continue
		}
		mode, id := f[0], f[2]
		size, _ := strconv.ParseInt(f[3], 10, 64) // "-" for a submodule: 0, refused by its mode
		why := ""
		limit, what := takeLimit(p)
		switch perr := filestore.StatePath(p); {
		case own[p] != nil:
			continue // written below, as aipm writes it
		case perr != nil:
			why = perr.Error()
		case !regularFile(mode):
			why = fmt.Sprintf("not a regular file (mode %s)", mode)
		case size > limit:
			why = fmt.Sprintf("%d bytes, over the %d %s: not read", size, limit, what)
		case strings.HasSuffix(p, ".jsonl") && size > int64(filestore.MaxLine()):
			n, long, err := g.longLineIn(id)
			if err != nil {
				return nil, err
			}
			if n > 0 {
				why = fmt.Sprintf("line %d is %d bytes, over the %d a line may have", n, long, filestore.MaxLine())
			}
		}
		if why != "" {
			refused = append(refused, fmt.Sprintf("%q: %s (commit %s)", p, why, head))
			drop.WriteString(p + "\x00")
			continue
		}
		if kind, ok := heldKind(p); ok {
			held[kind] = append(held[kind], entity{p, id, size})
			continue
		}
		take.WriteString(p + "\x00")
	}
	// As a round would take them: no more than MaxUnfinished unfinished of a kind, in the
	// branch's path order. Their statuses are read only when there are more files than
	// that, a batch of at most batchFiles and batchBytes at a time.
	for _, kind := range []string{filestore.KindTask, filestore.KindConversation, filestore.KindDelegation} {
		list, open, over := held[kind], 0, 0
		if len(list) <= MaxUnfinished {
			for _, e := range list {
				take.WriteString(e.path + "\x00")
			}
			continue
		}
		for i := 0; i < len(list); {
			j, size := i, int64(0)
			for j < len(list) && j-i < batchFiles && (j == i || size+list[j].size <= batchBytes) {
				size += list[j].size
				j++
			}
			ids := make([]string, 0, j-i)
			for _, e := range list[i:j] {
				ids = append(ids, e.id)
			}
			objs, err := g.catBatch(ids)
			if err != nil {
				return nil, err
			}
			for k, e := range list[i:j] {
				if filestore.Unfinished(kind, objs[k].data) {
					if open >= MaxUnfinished {
						over++
						drop.WriteString(e.path + "\x00")
						continue
					}
					open++
				}
				take.WriteString(e.path + "\x00")
			}
			i = j
		}
		if over > 0 {
			refused = append(refused, fmt.Sprintf("%d unfinished %s file(s) over the %d unfinished %ss a clone takes from another (each process holds unfinished work in memory) (commit %s)",
				over, kind, MaxUnfinished, kind, head))
		}
	}
	if take.Len() > 0 {
		in := g
		in.stdin = []byte(take.String())
		if _, err := in.run("checkout-index", "-u", "-q", "-z", "--stdin"); err != nil {
			return nil, err
		}
	}
	if drop.Len() > 0 {
		in := g
		in.stdin = []byte(drop.String())
		if _, err := in.run("update-index", "-z", "--force-remove", "--stdin"); err != nil {
			return nil, err
		}
	}
	for name, data := range own {
		if err := os.WriteFile(filepath.Join(g.dir, name), data, 0o644); err != nil {
			return nil, err
		}
	}
	return refused, nil
}

// Adopt puts the .ai-pm that root holds — made by `aipm init`, tracked by no branch — on
// a new state branch, and makes it that branch's worktree. The files stay where they are.
func Adopt(root string) error {
	top, err := mainTop(root)
	if err != nil {
		return err
	}
	if Attached(top) {
		return nil
	}
	if err := exclude(top); err != nil {
		return err
	}
	if !branchExists(top) {
		if err := commitFiles(top, "aipm: the project's state"); err != nil {
			return err
		}
	}
	if err := attach(top); err != nil {
		return err
	}
	return setUpstream(top, Remote(top))
}

// commitFiles makes the first commit of the state branch from the files of .ai-pm, with
// an index of its own (the code's index is not touched).
func commitFiles(top, msg string) error {
	common, err := gitCmd{dir: top}.run("rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return err
	}
	index := filepath.Join(common, "aipm-state.index")
	os.Remove(index)
	defer os.Remove(index)
	g := gitCmd{dir: top, env: []string{"GIT_INDEX_FILE=" + index}}
	if _, err := g.run("--work-tree="+stateDir(top), "add", "-A", "."); err != nil {
		return err
	}
	tree, err := g.run("write-tree")
	if err != nil {
		return err
	}
	c := gitCmd{dir: top, env: identity(top)}
	args, err := signingOf(stateDir(top)).cmd("commit-tree")
	if err != nil {
		return err
	}
	commit, err := c.run(append(args, tree, "-m", msg+rootTrailers(top))...)
	if err != nil {
		return err
	}
	_, err = g.run("update-ref", ref, commit, "")
	return err
}

// attach makes the existing directory .ai-pm a worktree of the state branch without
// checking anything out: a worktree is made elsewhere with --no-checkout, its .git file
// moved into .ai-pm, `git worktree repair` points Git at the new place, and a mixed reset
// fills the index from the branch. The files are never written; what differs from the
// branch shows as a change, which the next sync commits.
func attach(top string) error {
	g := gitCmd{dir: top}
	common, err := g.run("rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return err
	}
	tmpParent := filepath.Join(common, "aipm-attach")
	os.RemoveAll(tmpParent)
	defer os.RemoveAll(tmpParent)
	tmp := filepath.Join(tmpParent, "state")
	if _, err := g.run("worktree", "add", "--no-checkout", "-q", tmp, Branch); err != nil {
		return err
	}
	dst := filepath.Join(stateDir(top), ".git")
	if err := os.Rename(filepath.Join(tmp, ".git"), dst); err != nil {
		return err
	}
	if _, err := g.run("worktree", "repair", stateDir(top)); err != nil {
		return err
	}
	if _, err := (gitCmd{dir: stateDir(top)}).run("reset", "-q"); err != nil {
		return err
	}
	return nil
}

// identity returns the environment that gives commits an author when the clone has none
// configured (a fresh machine): aipm, at this host.
func identity(dir string) []string {
	g := gitCmd{dir: dir}
	var env []string
	if os.Getenv("GIT_AUTHOR_NAME") == "" && os.Getenv("GIT_COMMITTER_NAME") == "" {
		if n, err := g.run("config", "user.name"); err != nil || n == "" {
			env = append(env, "GIT_AUTHOR_NAME=aipm", "GIT_COMMITTER_NAME=aipm")
		}
	}
	if os.Getenv("GIT_AUTHOR_EMAIL") == "" && os.Getenv("GIT_COMMITTER_EMAIL") == "" {
		if e, err := g.run("config", "user.email"); err != nil || e == "" {
			host, _ := os.Hostname()
			if host == "" {
				host = "localhost"
			}
			env = append(env, "GIT_AUTHOR_EMAIL=aipm@"+host, "GIT_COMMITTER_EMAIL=aipm@"+host)
		}
	}
	return env
}
