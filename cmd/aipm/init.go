package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"

	"github.com/aipm/aipm/cmd/aipm/internal/clone"
	"github.com/aipm/aipm/cmd/aipm/internal/coordinator"
	"github.com/aipm/aipm/cmd/aipm/internal/gitstate"
	"github.com/aipm/aipm/filestore"
)

func (a *app) cmdInit(args []string) error {
	fs := newFlags(a, "init")
	name := fs.String("name", "", "project name (default: the directory name)")
	desc := fs.String("description", "", "project description")
	owner := fs.String("owner", "", "the owner's agent id (default: $AIPM_USER, else your user name, else owner)")
	ownerName := fs.String("owner-name", "", "the owner's display name")
	pos, err := fs.parse(args, 0, 1, "[DIR] [--name N] [--owner ID]")
	if err != nil {
		return err
	}
	dir := "."
	if len(pos) == 1 {
		dir = pos[0]
	}
	if *owner == "" {
		*owner = defaultOwner(a.getenv("AIPM_USER"))
	}
	if _, err := os.Stat(filepath.Join(dir, filestore.DirName, "project.json")); err == nil {
		// A clone (or a re-run): the project is there, this machine's side of it may not be.
		return a.prepareClone(dir, fs.json, fs.as)
	}
	if abs, err := filepath.Abs(dir); err == nil {
		// A linked worktree of a clone whose state is on its own branch has no .ai-pm
		// checked out: it uses the clone's store, like any linked worktree.
		if _, linked, err := clone.SharedRoot(abs); err == nil && linked {
			return a.prepareClone(dir, fs.json, fs.as)
		}
	}
	stateBranch := atMainTop(dir)
	if stateBranch {
		// A clone of a project whose state is on its own branch: check it out.
		ok, refused, err := gitstate.CheckoutBounded(dir)
		if err != nil {
			return err
		}
		if len(refused) > 0 {
			a.printf("left out of the state branch what a clone may not take (the next `aipm sync` removes it from the branch): %s\n",
				nameRefusals(refused))
		}
		if ok {
			return a.prepareClone(dir, fs.json, fs.as)
		}
	}
	exe, err := coordinator.Executable()
	if err != nil {
		return err
	}
	s, err := filestore.Init(dir, filestore.InitOptions{Name: *name, Description: *desc, OwnerID: *owner, OwnerName: *ownerName,
		AgentCommands: coordinator.DefaultAgentCommands(), AIPM: exe, TargetBranch: checkedOutBranch(dir)},
		filestore.Options{Now: a.now})
	if errors.Is(err, filestore.ErrExists) { // made meanwhile
		return a.prepareClone(dir, fs.json, fs.as)
	}
	if err != nil {
		return err
	}
	p, err := s.Project()
	if err != nil {
		return err
	}
	if _, err := s.MachineID(); err != nil { // made now, so the history names it from here on
		return err
	}
	// Who works in this clone: the owner, who made the project here.
	if _, err := s.SetIdentity(p.OwnerID, "project created"); err != nil {
		return err
	}
	driver, err := registerDriver(s.Root())
	if err != nil {
		return err
	}
	// With a remote the state goes on its own branch at once; without one (a first try,
	// a repository of one) it stays a plain directory until `aipm migrate`.
	remote := ""
	if stateBranch {
		remote = gitstate.Remote(s.Root())
	}
	if remote != "" {
		if err := gitstate.Adopt(s.Root()); err != nil {
			return err
		}
	}
	if fs.json {
		return a.printJSON(p)
	}
	a.printf("Initialized project %q in %s\n", p.Name, s.Dir())
	a.printf("Owner: %s (human). Add agents with `aipm agent add ID --hierarchy manager|worker --parent ID`.\n", p.OwnerID)
	if md, err := s.MachineDir(); err == nil {
		a.printf("This machine's approvals and passkeys for it: %s (outside the repository)\n", md)
	}
	if driver != "" {
		a.printf("%s\n", driver)
	}
	if remote != "" {
		a.printf("%s\n", stateLine(remote))
	}
	return nil
}

// atMainTop reports whether dir is the top of a clone's main worktree, where the state
// can live on its own branch.
func atMainTop(dir string) bool {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	w, ok := clone.Find(abs)
	return ok && w.Main == "" && w.Top == abs && clone.IsRepo(abs)
}

func stateLine(remote string) string {
	return fmt.Sprintf("state on branch %s (%s is its worktree; `git -C %s log -p` shows its history), synced with %s by `aipm sync` and `aipm run`",
		gitstate.Branch, filestore.DirName, filestore.DirName, remoteName(remote))
}

// prepareClone is `aipm init` where the project exists: like re-running `git init`, it
// changes nothing that is there and adds what this clone lacks — the runtime area Git
// does not carry, the merge driver in the clone's Git config — and says which AI agents
// need a passkey on this machine.
func (a *app) prepareClone(dir string, asJSON bool, as string) error {
	root, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	shared, linked, err := clone.SharedRoot(root)
	if err != nil {
		return err
	}
	if err := clone.CheckOwner(shared); err != nil {
		return err
	}
	s, prep, err := filestore.Prepare(shared, filestore.Options{Now: a.now})
	if err != nil {
		return err
	}
	driver, err := registerDriver(s.Root())
	if err != nil {
		return err
	}
	if _, err := s.MachineID(); err != nil {
		return err
	}
	who, err := a.cloneIdentity(s, as)
	if err != nil {
		return err
	}
	if asJSON {
		return a.printJSON(struct {
			Store          string              `json:"store"`
			CreatedRuntime bool                `json:"created_runtime"`
			WroteGitFiles  []string            `json:"wrote_git_files"`
			MergeDriver    string              `json:"merge_driver"`
			NoPasskey      []string            `json:"no_passkey"`
			Identity       *filestore.Identity `json:"identity"`
		}{s.Dir(), prep.CreatedRuntime, prep.WroteGitFiles, driver, prep.NoPasskey, who})
	}
	p, err := s.Project()
	if err != nil {
		return err
	}
	a.printf("Project %q is already in %s; prepared this clone:\n", p.Name, s.Dir())
	if gitstate.Attached(s.Root()) {
		a.printf("  %s\n", stateLine(gitstate.Remote(s.Root())))
	}
	if linked {
		a.printf("  this is a linked worktree: it uses the clone's store above, never its own copy in %s\n", filepath.Join(root, filestore.DirName))
	}
	if prep.CreatedRuntime {
		a.printf("  created the runtime area (%s, ignored by Git)\n", s.Rel(filepath.Join(s.Dir(), "runtime")))
	} else {
		a.printf("  runtime area present\n")
	}
	if md, err := s.MachineDir(); err == nil {
		a.printf("  this machine's approvals and passkeys for it: %s (outside the repository: nothing committed is trusted)\n", md)
	}
	a.printf("  %s\n", describeIdentity(who))
	for _, f := range prep.WroteGitFiles {
		a.printf("  wrote %s: commit it, so every clone merges the same way\n", f)
	}
	if driver != "" {
		a.printf("  %s\n", driver)
	}
	if len(prep.NoPasskey) == 0 {
		a.printf("  every AI agent has a passkey on this machine\n")
		return nil
	}
	a.printf("AI agents with no passkey on this machine (passkeys are never committed); for each one you run here:\n")
	for _, id := range prep.NoPasskey {
		a.printf("  aipm agent passkey %s\n", id)
	}
	a.printf("(`aipm run` needs none: it gives each agent it starts a one-time ticket.)\n")
	return nil
}

// registerDriver registers aipm's merge driver in the Git config of the clone holding
// root and says what it did; "" outside a Git repository.
func registerDriver(root string) (string, error) {
	if !clone.IsRepo(root) {
		return "", nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	changed, err := clone.RegisterDriver(root, exe)
	if err != nil {
		return "", err
	}
	if changed {
		return "registered the merge driver in this clone's Git config (merge.aipm.driver): entity files merge field by field", nil
	}
	return "merge driver registered (merge.aipm.driver)", nil
}

// defaultOwner picks a valid agent id for the person running init.
func defaultOwner(env string) string {
	for _, c := range []string{env, userName()} {
		c = strings.ToLower(strings.TrimSpace(c))
		if filestore.ValidateAgentID(c) == nil {
			return c
		}
	}
	return "owner"
}

func userName() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return os.Getenv("USER")
}

// checkedOutBranch is the branch checked out in the repository around dir, which tasks
// land on (settings.target_branch); "" outside a repository or on a detached HEAD.
func checkedOutBranch(dir string) string {
	if !clone.IsRepo(dir) {
		return ""
	}
	out, err := exec.Command("git", "-C", dir, "symbolic-ref", "--short", "-q", "HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
