package gitstate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aipm/aipm/filestore"
)

// Signed state (settings.require_signed_state).
//
// A trailer (Aipm-Machine, Aipm-Human) is a claim: anyone who can push to the state
// branch can write one. A team that wants proof turns the setting on and lists its keys
// in .ai-pm/allowed_signers (Git's gpg.ssh.allowedSignersFile format). Then:
//
//   - every commit aipm makes on the state branch (a round's commit of local changes,
//     its merge, a restoration, the first commit, a migration) is signed with Git's SSH
//     signing and the clone's user.signingkey; without a key the commit is not made, the
//     round fails saying what to configure, and the changes wait in the working copy.
//     Commits it made before it took the setting in, not pushed yet, are signed again
//     before the push (signUnpushed);
//   - before a round takes anything in, every commit it would take (ours..theirs, merges
//     included) must carry a good signature by a listed key (`git log --format=%G?` with
//     gpg.ssh.allowedSignersFile). One that does not stops the round from taking anything:
//     the round names the commit, its author and why, commits this clone's own changes,
//     and does not push (it could not fast-forward). The store is untouched.
//
// Which list counts: this clone's own, as its HEAD has it, for a commit whose parents this
// clone already holds. For a commit built on another incoming commit, the list as that
// parent has it — that parent was itself verified, so a change of the list counts once it
// was taken in by a commit signed by a key already listed. A key added by the very push
// that uses it (an attacker adding their own) is therefore refused, and a commit made
// after an allowed signer added a teammate's key is taken in the same round. With two
// parents, a signer listed in either parent's list counts: each is a list this clone
// trusts (its own, or one that verified commits made), and a commit of local changes made
// before the setting arrived has no list of its own.
//
// Whether the setting is on is read from this clone's HEAD and working copy (on in
// either: on), never from the remote's side: a push of `false` by someone who cannot sign
// is refused like any other unsigned commit, and one that could sign is a team's decision.
//
// The first checkout of the state branch in a new clone (`aipm init` in a clone) takes
// the remote's branch as it is, like `git clone`: the trust starts there.

// signOpts is how the clone whose state worktree is dir makes its commits on the state
// branch. It is read when a commit is made, not before: a merge that brings the setting
// in is itself signed.
type signOpts struct {
	dir string // "" signs nothing
}

// signingOf is how the clone whose state worktree is dir signs its commits.
func signingOf(dir string) signOpts { return signOpts{dir: dir} }

// state says whether commits must be signed now, and with which key ("" when the clone
// has none set).
func (o signOpts) state() (on bool, key string) {
	if o.dir == "" {
		return false, ""
	}
	g := gitCmd{dir: o.dir}
	if !requireSigned(g, o.dir) {
		return false, ""
	}
	key, _ = g.run("config", "--get", "user.signingkey")
	return true, strings.TrimSpace(key)
}

// cmd returns the git arguments for the commit command sub ("commit" or "commit-tree"),
// after the configuration pre (each "-c" and its value), signed or explicitly unsigned;
// the caller appends the command's own arguments. It fails, saying what to run, when the
// commit must be signed and the clone has no key.
func (o signOpts) cmd(sub string, pre ...string) ([]string, error) {
	on, key := o.state()
	if !on {
		return append(append([]string{"-c", "commit.gpgsign=false"}, pre...), sub, "--no-gpg-sign"), nil
	}
	if key == "" {
		return nil, errors.New(noKeyMessage)
	}
	return append(append([]string{"-c", "gpg.format=ssh"}, pre...), sub, "-S"), nil
}

const noKeyMessage = "settings.require_signed_state is on and this clone has no signing key: run " +
	"`git config user.signingkey ~/.ssh/id_ed25519.pub` (your SSH public key) and have a teammate whose key is listed add that key to .ai-pm/" +
	filestore.AllowedSignersFile + "; nothing was committed, this clone's changes wait in " + filestore.DirName

// requireSigned reports whether settings.require_signed_state is on in the project.json
// of this clone's HEAD or of its working copy at dir. What a remote pushed is never read.
func requireSigned(g gitCmd, dir string) bool {
	if onInWorkingCopy(dir) {
		return true
	}
	data, ok := headBlob(g, "project.json")
	return ok && settingOn(data)
}

// onInWorkingCopy reports whether the project.json of the working copy at dir has
// settings.require_signed_state on.
func onInWorkingCopy(dir string) bool {
	f, err := os.Open(filepath.Join(dir, "project.json"))
	if err != nil {
		return false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, filestore.MaxEntityFile+1))
	return err == nil && len(data) <= filestore.MaxEntityFile && settingOn(data)
}

func settingOn(data []byte) bool {
	var p struct {
		Settings struct {
			RequireSignedState bool `json:"require_signed_state"`
		} `json:"settings"`
	}
	return json.Unmarshal(data, &p) == nil && p.Settings.RequireSignedState
}

// headBlob reads the file rel of HEAD's tree, within the entity size limit.
func headBlob(g gitCmd, rel string) ([]byte, bool) {
	return blobAt(g, "HEAD", rel)
}

func blobAt(g gitCmd, rev, rel string) ([]byte, bool) {
	spec := rev + ":" + rel
	sizes, err := g.catSizes([]string{spec})
	if err != nil || len(sizes) != 1 || sizes[0] < 0 || sizes[0] > filestore.MaxEntityFile {
		return nil, false
	}
	objs, err := g.catBatch([]string{spec})
	if err != nil || len(objs) != 1 || !objs[0].ok || objs[0].typ != "blob" {
		return nil, false
	}
	return objs[0].data, true
}

// MaxVerify bounds the commits one round verifies. A clone further behind verifies the
// rest over the next rounds, oldest first, and takes nothing in until all are verified
// (verifyIncoming). AIPM_MAX_VERIFY may lower it (tests use it to stay small).
var MaxVerify = lowerOnly(os.Getenv("AIPM_MAX_VERIFY"), 20000)

// maxResign bounds this clone's own unpushed commits that a round signs again.
const maxResign = 20000

// UnsignedError is a round's refusal of another clone's commits that are not signed by
// an allowed signer: nothing of them was taken, and nothing pushed.
type UnsignedError struct {
	Remote string
	Why    string // which commit, its author, and why
}

func (e *UnsignedError) Error() string {
	return fmt.Sprintf("took nothing from %s's %s and pushed nothing: %s, and settings.require_signed_state wants every commit signed by a key in .ai-pm/%s; "+
		"a teammate's? one whose key is listed adds theirs there; otherwise remove it from %s's %s",
		e.Remote, Branch, e.Why, filestore.AllowedSignersFile, e.Remote, Branch)
}

// verifyIncoming checks, when this clone requires signed state, every commit of
// HEAD..theirs (see Signed state above), at most MaxVerify of them a round, oldest
// first: left is how many remain for the next rounds, whose commits are not to be taken
// in yet. Those verified are remembered by the newest of them (verifiedFile), so that
// the next round goes on after them; a remote rewound under them verifies again. It
// returns an *UnsignedError naming the first commit that is not signed by an allowed
// signer.
func verifyIncoming(dir, remote, theirs string) (left int, err error) {
	g := gitCmd{dir: dir}
	if out, err := g.run("rev-list", "-n", "1", "HEAD.."+theirs); err != nil || out == "" || !requireSigned(g, dir) {
		return 0, err // nothing new there (most rounds), or nothing to verify
	}
	all, err := g.run("rev-list", "HEAD.."+theirs)
	if err != nil {
		return 0, err
	}
	incoming := map[string]bool{}
	for _, id := range strings.Fields(all) {
		incoming[id] = true
	}
	// The commits verified by earlier rounds: their newest, where theirs still holds them.
	tips := verifiedTips(g, remote, incoming)
	args := []string{"rev-list", "--topo-order", "--reverse", "--parents", "HEAD.." + theirs}
	for _, t := range tips {
		args = append(args, "^"+t)
	}
	out, err := g.run(args...)
	if err != nil {
		return 0, err
	}
	type commit struct {
		id      string
		parents []string
	}
	var commits []commit
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		commits = append(commits, commit{id: f[0], parents: f[1:]})
	}
	if len(commits) > MaxVerify {
		left = len(commits) - MaxVerify
		commits = commits[:MaxVerify] // the oldest: each one's parents come before it
	}
	// The list each commit is verified against, per parent: the parent's own when this
	// round takes the parent in too, else this clone's (HEAD's).
	listOf := func(parent string) string {
		if incoming[parent] {
			return parent
		}
		return "HEAD"
	}
	revs := map[string]bool{"HEAD": true}
	for _, c := range commits {
		for _, p := range c.parents {
			revs[listOf(p)] = true
		}
	}
	// Commits whose parents carry the same list are verified together.
	blobOf, err := listBlobs(g, revs)
	if err != nil {
		return 0, err
	}
	byList := map[string][]string{} // blob id ("" for none) → commits
	for _, c := range commits {
		seen := map[string]bool{}
		ps := c.parents
		if len(ps) == 0 {
			ps = []string{""} // a root commit: this clone's list
		}
		for _, p := range ps {
			b := blobOf["HEAD"]
			if p != "" {
				b = blobOf[listOf(p)]
			}
			if !seen[b] {
				seen[b] = true
				byList[b] = append(byList[b], c.id)
			}
		}
	}
	good := map[string]bool{} // a good signature by a key one of its lists holds
	why := map[string]string{}
	authors := map[string]string{}
	for blob, ids := range byList {
		res, err := verifyAgainst(g, blob, ids)
		if err != nil {
			return 0, err
		}
		for id, v := range res {
			authors[id] = v.author
			if v.why == "" {
				good[id] = true
				continue
			}
			w := v.why
			if blob != blobOf["HEAD"] {
				w += " as of the commit it builds on"
			}
			if why[id] == "" || blob == blobOf["HEAD"] {
				why[id] = w
			}
		}
	}
	for _, c := range commits {
		if !good[c.id] {
			return 0, &UnsignedError{Remote: remote, Why: fmt.Sprintf("commit %.10s by %s (1 of %d new there) %s", c.id, authors[c.id], len(incoming), why[c.id])}
		}
	}
	// What this round verified, and the earlier rounds, is the ancestry of the newest of
	// them within HEAD..theirs: a commit that is a parent of another verified one is no tip.
	next := []string{}
	if left > 0 {
		parent := map[string]bool{}
		for _, c := range commits {
			for _, p := range c.parents {
				parent[p] = true
			}
		}
		for _, t := range tips {
			if !parent[t] {
				next = append(next, t)
			}
		}
		for _, c := range commits {
			if !parent[c.id] {
				next = append(next, c.id)
			}
		}
	}
	return left, saveVerified(g, remote, next)
}

// verifiedFile, in the state worktree's git directory, names per remote the newest
// commits of theirs that earlier rounds verified while more remained to verify.
func verifiedFile(g gitCmd, remote string) string { return remoteFile(g, "aipm-verified-", remote) }

// verifiedTips reads the remembered commits that are still new there (incoming): a
// commit this clone took in since, or that the remote no longer holds, is dropped.
func verifiedTips(g gitCmd, remote string, incoming map[string]bool) []string {
	p := verifiedFile(g, remote)
	if p == "" {
		return nil
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil
	}
	var tips []string
	for _, id := range strings.Fields(string(data)) {
		if incoming[id] {
			tips = append(tips, id)
		}
	}
	return tips
}

func saveVerified(g gitCmd, remote string, tips []string) error {
	var data []byte
	if len(tips) > 0 {
		data = []byte(strings.Join(tips, "\n") + "\n")
	}
	return writeOrRemove(verifiedFile(g, remote), data)
}

// listBlobs returns the blob id of allowed_signers in each of revs ("" where there is
// none).
func listBlobs(g gitCmd, revs map[string]bool) (map[string]string, error) {
	var keys, specs []string
	for r := range revs {
		keys = append(keys, r)
		specs = append(specs, r+":"+filestore.AllowedSignersFile)
	}
	answers, err := g.catCheck(specs)
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for i, a := range answers {
		m[keys[i]] = ""
		if a.typ == "blob" {
			m[keys[i]] = a.id
		}
	}
	return m, nil
}

type verdict struct{ author, why string }

// verifyAgainst verifies the signatures of commits ids with the allowed-signers list
// that is blob ("" or one too large to read: no key is allowed).
func verifyAgainst(g gitCmd, blob string, ids []string) (map[string]verdict, error) {
	var list []byte
	if blob != "" {
		if sizes, err := g.catSizes([]string{blob}); err == nil && len(sizes) == 1 && sizes[0] >= 0 && sizes[0] <= filestore.MaxEntityFile {
			if objs, err := g.catBatch([]string{blob}); err == nil && len(objs) == 1 && objs[0].ok {
				list = objs[0].data
			}
		}
	}
	tmp, err := os.CreateTemp("", "aipm-allowed-signers-")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(list); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	c := g
	c.stdin = []byte(strings.Join(ids, "\n") + "\n")
	out, err := c.run("-c", "gpg.ssh.allowedSignersFile="+tmp.Name(), "log", "--no-walk=unsorted", "--no-show-signature", "--stdin",
		"-z", "--format=%H%x1f%G?%x1f%GK%x1f%an <%ae>")
	if err != nil {
		return nil, err
	}
	res := map[string]verdict{}
	for _, rec := range strings.Split(out, "\x00") {
		f := strings.Split(strings.TrimSpace(rec), "\x1f")
		if len(f) != 4 {
			continue
		}
		id, status, key, author := f[0], f[1], f[2], printable(f[3])
		v := verdict{author: author}
		switch status {
		case "G":
		case "N":
			v.why = "is not signed"
		case "B":
			v.why = "has a bad signature"
		case "X", "Y":
			v.why = "carries an expired signature or key " + printable(key)
		case "R":
			v.why = "is signed by revoked key " + printable(key)
		default: // U, E: a good signature by a key the list does not hold, or none to check
			if key == "" {
				v.why = "carries a signature that cannot be checked"
			} else if len(list) == 0 {
				v.why = fmt.Sprintf("is signed by key %s, and allowed_signers lists no key", printable(key))
			} else {
				v.why = fmt.Sprintf("is signed by key %s, which allowed_signers does not list", printable(key))
			}
		}
		res[id] = v
	}
	for _, id := range ids {
		if _, ok := res[id]; !ok {
			res[id] = verdict{why: "could not be read to verify"}
		}
	}
	return res, nil
}

// signUnpushed signs, when this clone signs its commits, those of its commits that the
// remote's branch (theirs; "" when the remote has none) lacks and that are not signed:
// the ones it made before it took in the setting (a commit of local changes made just
// before the round that merged it), which every clone that verifies would refuse. Each is
// made again with the same tree, message, author and committer, signed with this clone's
// key, and so is every commit of those after it; the branch moves to the result. Only
// commits already in this clone's branch are signed so: what comes from a remote is
// verified before it is taken in (verifyIncoming).
func signUnpushed(dir, theirs string) error {
	// The round has committed everything by now: the working copy's project.json is its
	// HEAD's, and reading it costs no git process on the rounds of a clone that does not
	// sign.
	if theirs == "" || !onInWorkingCopy(dir) {
		return nil
	}
	g := gitCmd{dir: dir, env: identity(filepath.Dir(dir))}
	head, err := g.run("rev-parse", "HEAD")
	if err != nil {
		return err
	}
	out, err := g.run("rev-list", "--topo-order", "--reverse", "--parents", "--max-count="+fmt.Sprint(maxResign+1), theirs+".."+head)
	if err != nil || out == "" {
		return err
	}
	var ids []string
	parents := map[string][]string{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			ids = append(ids, f[0])
			parents[f[0]] = f[1:]
		}
	}
	if len(ids) > maxResign {
		return nil // not a round's worth of this clone's commits: left as they are
	}
	objs, err := g.catBatch(ids)
	if err != nil {
		return err
	}
	unsigned := false
	for _, o := range objs {
		if o.ok && !signedCommit(o.data) {
			unsigned = true
			break
		}
	}
	if !unsigned {
		return nil // most rounds
	}
	args, err := signingOf(dir).cmd("commit-tree")
	if err != nil {
		return err
	}
	made := map[string]string{} // old id → new id
	for i, id := range ids {
		o := objs[i]
		if !o.ok {
			return fmt.Errorf("read commit %s", id)
		}
		var ps []string
		moved := false
		for _, p := range parents[id] {
			if n, ok := made[p]; ok {
				p, moved = n, true
			}
			ps = append(ps, p)
		}
		if signedCommit(o.data) && !moved {
			continue
		}
		tree := commitTree(o.data)
		if tree == "" {
			return fmt.Errorf("read the tree of commit %s", id)
		}
		env, msg := commitMeta(o.data)
		a := append(slices.Clip(args), tree)
		for _, p := range ps {
			a = append(a, "-p", p)
		}
		c := gitCmd{dir: dir, env: env, stdin: msg}
		n, err := c.run(a...)
		if err != nil {
			return err
		}
		made[id] = n
	}
	newHead, ok := made[head]
	if !ok {
		return nil
	}
	if _, err := g.run("update-ref", "-m", "aipm sync: sign this clone's unpushed commits", "HEAD", newHead, head); err != nil {
		return err
	}
	g.ok("update-ref", checkedRef, newHead, head) // the merges there were checked already
	return nil
}

// signedCommit tells a raw commit that carries a signature.
func signedCommit(data []byte) bool {
	head, _, _ := strings.Cut(string(data), "\n\n")
	return strings.Contains("\n"+head, "\ngpgsig ") || strings.Contains("\n"+head, "\ngpgsig-sha256 ")
}

// commitTree is the tree of a raw commit.
func commitTree(data []byte) string {
	tree, _, _ := strings.Cut(string(data), "\n")
	if id, ok := strings.CutPrefix(tree, "tree "); ok {
		return id
	}
	return ""
}
