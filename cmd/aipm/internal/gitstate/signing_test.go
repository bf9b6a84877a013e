package gitstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aipm/aipm/filestore"
)

// sshKey makes an ed25519 key pair in a temporary directory and returns the public key's
// path. Without ssh-keygen the test is skipped, except under CI (.ci/run installs it).
func sshKey(t *testing.T, name string) string {
	t.Helper()
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("ssh-keygen is not installed (apt-get install openssh-client; .ci/run does); under CI the signed-state tests must run")
		}
		t.Skip("needs ssh-keygen (apt-get install openssh-client)")
	}
	p := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", p).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v: %s", err, out)
	}
	return p + ".pub"
}

// signerLine is pub's line of an allowed-signers file, for principal.
func signerLine(t *testing.T, principal, pub string) string {
	t.Helper()
	data, err := os.ReadFile(pub)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(data))
	return principal + " " + f[0] + " " + f[1] + "\n"
}

// setSigned sets settings.require_signed_state in the project.json at dir.
func setSigned(t *testing.T, dir string, on bool) {
	t.Helper()
	p := filepath.Join(dir, "project.json")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	settings, _ := m["settings"].(map[string]any)
	if settings == nil {
		settings = map[string]any{}
	}
	settings["require_signed_state"] = on
	m["settings"] = settings
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, append(out, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// signedClones are twoClones with signed state: a and b each sign with their own key,
// both listed in allowed_signers, and both clones have taken that in.
func signedClones(t *testing.T) (a, b *filestore.Store, keyA, keyB string) {
	t.Helper()
	a, b = twoClones(t)
	keyA, keyB = sshKey(t, "alice"), sshKey(t, "bob")
	mustGit(t, a.Root(), "config", "user.signingkey", keyA)
	mustGit(t, b.Root(), "config", "user.signingkey", keyB)
	setSigned(t, a.Dir(), true)
	list := signerLine(t, "alice@example.com", keyA) + signerLine(t, "bob@example.com", keyB)
	if err := os.WriteFile(filepath.Join(a.Dir(), filestore.AllowedSignersFile), []byte(list), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if r, err := (&Syncer{Store: a, Remote: "origin"}).Once(ctx); err != nil || !r.Pushed {
		t.Fatalf("a's round turning signing on: %+v, %v", r, err)
	}
	if r, err := (&Syncer{Store: b, Remote: "origin"}).Once(ctx); err != nil || len(r.Merged) == 0 {
		t.Fatalf("b's round taking it in: %+v, %v", r, err)
	}
	if !requireSigned(gitCmd{dir: b.Dir()}, b.Dir()) {
		t.Fatal("b does not require signed state after taking in a's commit")
	}
	return a, b, keyA, keyB
}

// sigStatus is %G? of rev in the state worktree of s, checked against the list HEAD holds.
func sigStatus(t *testing.T, s *filestore.Store, rev string) string {
	t.Helper()
	list := filepath.Join(t.TempDir(), "allowed")
	data, _ := headBlob(gitCmd{dir: s.Dir()}, filestore.AllowedSignersFile)
	if err := os.WriteFile(list, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return mustGit(t, s.Dir(), "-c", "gpg.ssh.allowedSignersFile="+list, "log", "-1", "--format=%G?", rev)
}

// eveClone is a plain git clone of origin with the state branch checked out, whose
// commits are Eve's.
type eveClone struct {
	t   *testing.T
	dir string
}

func newEveClone(t *testing.T, a *filestore.Store) *eveClone {
	t.Helper()
	origin := mustGit(t, a.Root(), "remote", "get-url", "origin")
	dir := filepath.Join(t.TempDir(), "eve")
	mustGit(t, a.Root(), "clone", "-q", "--branch", Branch, origin, dir)
	return &eveClone{t: t, dir: dir}
}

func (e *eveClone) git(args ...string) string {
	e.t.Helper()
	cmd := exec.Command("git", append([]string{"-C", e.dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Eve", "GIT_AUTHOR_EMAIL=eve@example.com",
		"GIT_COMMITTER_NAME=Eve", "GIT_COMMITTER_EMAIL=eve@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		e.t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// rename changes the project's name in the eveClone's clone.
func (e *eveClone) rename(name string) {
	e.t.Helper()
	p := filepath.Join(e.dir, "project.json")
	data, err := os.ReadFile(p)
	if err != nil {
		e.t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		e.t.Fatal(err)
	}
	m["name"] = name
	out, _ := json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(p, append(out, '\n'), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// commit commits everything, signed with key when it is not "".
func (e *eveClone) commit(msg, key string) string {
	e.t.Helper()
	e.git("add", "-A", ".")
	if key == "" {
		e.git("-c", "commit.gpgsign=false", "commit", "-q", "-m", msg)
	} else {
		e.git("-c", "gpg.format=ssh", "-c", "user.signingkey="+key, "commit", "-q", "-S", "-m", msg)
	}
	return e.git("rev-parse", "HEAD")
}

func (e *eveClone) push() { e.t.Helper(); e.git("push", "-q", "origin", Branch) }

// refusedRound runs a round of b that must refuse the eveClone's commit bad: nothing
// taken, nothing pushed, b's own change committed and kept.
func refusedRound(t *testing.T, b *filestore.Store, bad, why string) {
	t.Helper()
	ctx := context.Background()
	before := mustGit(t, b.Dir(), "rev-parse", "HEAD")
	tk, err := b.CreateTask(owner, filestore.NewTask{Title: "B's own work"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := (&Syncer{Store: b, Remote: "origin"}).Once(ctx)
	var ue *UnsignedError
	if !errors.As(err, &ue) {
		t.Fatalf("round = %+v, %v; want an UnsignedError", r, err)
	}
	msg := err.Error()
	for _, want := range []string{bad[:10], "Eve <eve@example.com>", why, "pushed nothing"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("the refusal is not one line: %q", msg)
	}
	if r == nil || r.Unsigned == "" || len(r.Merged) != 0 || r.Pushed || !r.Committed {
		t.Errorf("round = %+v: want unsigned named, nothing merged, b's change committed, nothing pushed", r)
	}
	if mustGit(t, b.Dir(), "rev-parse", "HEAD~1") != before {
		t.Errorf("b's branch is not its own commit on top of what it had")
	}
	if g(t, b.Dir()).ok("merge-base", "--is-ancestor", bad, "HEAD") {
		t.Errorf("the refused commit %s is in b's branch", bad)
	}
	if p, err := b.Project(); err != nil || p.Name != "p" {
		t.Errorf("b's project = %+v, %v; want its own name p", p, err)
	}
	if got, err := b.Task(tk.ID); err != nil || got.Title != "B's own work" {
		t.Errorf("b's own task = %+v, %v", got, err)
	}
	last, err := ReadLastRound(b)
	if err != nil || last == nil || !strings.Contains(last.Error, bad[:10]) || last.Round == nil || last.Round.Unsigned == "" {
		t.Errorf("the round's record = %+v, %v: want the refusal", last, err)
	}
	// The next round refuses it again: nothing of it ever comes in.
	if _, err := (&Syncer{Store: b, Remote: "origin"}).Once(ctx); !errors.As(err, &ue) {
		t.Errorf("the next round: %v, want the refusal again", err)
	}
}

func TestSignedRoundsAreAccepted(t *testing.T) {
	a, b, _, _ := signedClones(t)
	ctx := context.Background()
	sa, sb := &Syncer{Store: a, Remote: "origin"}, &Syncer{Store: b, Remote: "origin"}
	if got := sigStatus(t, a, "HEAD"); got != "G" {
		t.Errorf("a's commit turning signing on: %%G? = %q, want G", got)
	}
	// Both change at once: b's round merges and its merge commit is signed.
	ta, err := a.CreateTask(owner, filestore.NewTask{Title: "From A"})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := sa.Once(ctx); err != nil || !r.Pushed {
		t.Fatalf("a: %+v, %v", r, err)
	}
	tb, err := b.CreateTask(owner, filestore.NewTask{Title: "From B"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := sb.Once(ctx)
	if err != nil || !r.Pushed || r.Unsigned != "" {
		t.Fatalf("b: %+v, %v", r, err)
	}
	if parents := strings.Fields(mustGit(t, b.Dir(), "log", "-1", "--format=%P")); len(parents) != 2 {
		t.Fatalf("b's head has parents %q, want a merge", parents)
	}
	for _, rev := range []string{"HEAD", "HEAD^1", "HEAD^2"} {
		if got := sigStatus(t, b, rev); got != "G" {
			t.Errorf("b's %s: %%G? = %q, want G", rev, got)
		}
	}
	if _, err := b.Task(ta.ID); err != nil {
		t.Errorf("b lacks a's task: %v", err)
	}
	if r, err := sa.Once(ctx); err != nil || len(r.Merged) == 0 {
		t.Fatalf("a taking b's merge: %+v, %v", r, err)
	}
	if _, err := a.Task(tb.ID); err != nil {
		t.Errorf("a lacks b's task: %v", err)
	}
}

// A teammate whose key is listed adds a new teammate's key and pushes; the newcomer's
// commits made on top are taken in the same round by a clone that had neither.
func TestKeyAddedBySignerCountsForLaterCommits(t *testing.T) {
	a, b, keyA, _ := signedClones(t)
	keyC := sshKey(t, "carol")
	e := newEveClone(t, a) // a plain clone, used here by honest hands
	f, err := os.OpenFile(filepath.Join(e.dir, filestore.AllowedSignersFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(signerLine(t, "carol@example.com", keyC))
	f.Close()
	e.commit("add carol's key", keyA)
	e.rename("renamed by carol")
	e.commit("carol renames", keyC)
	e.push()
	r, err := (&Syncer{Store: b, Remote: "origin"}).Once(context.Background())
	if err != nil || r.Unsigned != "" {
		t.Fatalf("round = %+v, %v; want both commits taken", r, err)
	}
	if p, _ := b.Project(); p == nil || p.Name != "renamed by carol" {
		t.Errorf("b's project = %+v, want carol's name", p)
	}
}

func TestUnsignedCommitIsRefused(t *testing.T) {
	a, b, _, _ := signedClones(t)
	e := newEveClone(t, a)
	e.rename("pwned")
	bad := e.commit("plain git", "")
	e.push()
	refusedRound(t, b, bad, "is not signed")
}

func TestCommitByUnlistedKeyIsRefused(t *testing.T) {
	a, b, _, _ := signedClones(t)
	e := newEveClone(t, a)
	e.rename("pwned")
	bad := e.commit("signed by eve", sshKey(t, "eve"))
	e.push()
	refusedRound(t, b, bad, "which allowed_signers does not list")
}

// Eve lists her own key in the very push that uses it: the list that counts is the one
// the commit builds on.
func TestAttackerAddingOwnKeyIsRefused(t *testing.T) {
	a, b, _, _ := signedClones(t)
	keyE := sshKey(t, "eve")
	e := newEveClone(t, a)
	f, err := os.OpenFile(filepath.Join(e.dir, filestore.AllowedSignersFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(signerLine(t, "eve@example.com", keyE))
	f.Close()
	bad := e.commit("list eve", keyE)
	e.rename("pwned")
	e.commit("eve renames", keyE)
	e.push()
	refusedRound(t, b, bad, "which allowed_signers does not list")
	if data, _ := os.ReadFile(filepath.Join(b.Dir(), filestore.AllowedSignersFile)); strings.Contains(string(data), "eve@") {
		t.Errorf("b's allowed_signers took eve's key: %s", data)
	}
}

// A remote that turns the setting off, unsigned, is refused like any unsigned commit:
// whether to verify is this clone's decision, not the push's.
func TestRemoteTurningSigningOffIsIgnored(t *testing.T) {
	a, b, _, _ := signedClones(t)
	e := newEveClone(t, a)
	setSigned(t, e.dir, false)
	bad := e.commit("signing off", "")
	e.rename("pwned")
	e.commit("after it", "")
	e.push()
	refusedRound(t, b, bad, "is not signed")
	if !requireSigned(gitCmd{dir: b.Dir()}, b.Dir()) {
		t.Error("b no longer requires signed state")
	}
}

// Without a key, a round that has something to commit fails with the one line that says
// what to run, and nothing is lost: once the key is set, the next round commits it.
func TestNoSigningKeyFailsClearly(t *testing.T) {
	a, b, _, keyB := signedClones(t)
	_ = a
	mustGit(t, b.Root(), "config", "--unset", "user.signingkey")
	tk, err := b.CreateTask(owner, filestore.NewTask{Title: "waits for a key"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r, err := (&Syncer{Store: b, Remote: "origin"}).Once(ctx)
	if err == nil || !strings.Contains(err.Error(), "git config user.signingkey ~/.ssh/id_ed25519.pub") ||
		!strings.Contains(err.Error(), "allowed_signers") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("round without a key = %+v, %v; want the one line saying what to run", r, err)
	}
	if out := mustGit(t, b.Dir(), "status", "--porcelain"); !strings.Contains(out, "tasks/"+tk.ID+".json") {
		t.Errorf("the task is not waiting in the working copy: %q", out)
	}
	mustGit(t, b.Root(), "config", "user.signingkey", keyB)
	if r, err := (&Syncer{Store: b, Remote: "origin"}).Once(ctx); err != nil || !r.Committed || !r.Pushed {
		t.Fatalf("round with the key: %+v, %v", r, err)
	}
	if got := sigStatus(t, b, "HEAD"); got != "G" {
		t.Errorf("b's commit: %%G? = %q, want G", got)
	}
}

func TestSigningOffMakesUnsignedCommits(t *testing.T) {
	a, _ := twoClones(t)
	if _, err := a.CreateTask(owner, filestore.NewTask{Title: "t"}); err != nil {
		t.Fatal(err)
	}
	if _, err := (&Syncer{Store: a, Remote: "origin"}).Once(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := mustGit(t, a.Dir(), "log", "-1", "--format=%G?"); got != "N" {
		t.Errorf("%%G? = %q with signing off, want N", got)
	}
}

// A merge is verified like any commit: a plain `git merge` of two signed commits is not
// signed, and refused.
func TestUnsignedMergeIsRefused(t *testing.T) {
	a, b, keyA, _ := signedClones(t)
	e := newEveClone(t, a)
	e.git("checkout", "-q", "-b", "side")
	e.rename("side")
	e.commit("signed side", keyA)
	e.git("checkout", "-q", Branch)
	f, err := os.OpenFile(filepath.Join(e.dir, filestore.AllowedSignersFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("# a comment\n")
	f.Close()
	e.commit("signed main", keyA)
	e.git("-c", "commit.gpgsign=false", "merge", "-q", "--no-edit", "side")
	bad := e.git("rev-parse", "HEAD")
	e.push()
	refusedRound(t, b, bad, "is not signed")
}

// A clone that committed before it took in the setting signs those commits again before
// it pushes them: otherwise every clone that verifies would refuse them for good.
func TestCommitsMadeBeforeTheSettingAreSignedBeforeThePush(t *testing.T) {
	a, b := twoClones(t)
	keyA, keyB := sshKey(t, "alice"), sshKey(t, "bob")
	mustGit(t, a.Root(), "config", "user.signingkey", keyA)
	mustGit(t, b.Root(), "config", "user.signingkey", keyB)
	ctx := context.Background()
	// b commits its work while signing is still off everywhere; its push waits.
	tb, err := b.CreateTask(owner, filestore.NewTask{Title: "made before"})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := (&Syncer{Store: b}).Once(ctx); err != nil || !r.Committed {
		t.Fatalf("b's local round: %+v, %v", r, err)
	}
	if got := mustGit(t, b.Dir(), "log", "-1", "--format=%G?"); got != "N" {
		t.Fatalf("b's commit before the setting: %%G? = %q, want N", got)
	}
	// a turns signing on and pushes.
	setSigned(t, a.Dir(), true)
	list := signerLine(t, "alice@example.com", keyA) + signerLine(t, "bob@example.com", keyB)
	if err := os.WriteFile(filepath.Join(a.Dir(), filestore.AllowedSignersFile), []byte(list), 0o644); err != nil {
		t.Fatal(err)
	}
	if r, err := (&Syncer{Store: a, Remote: "origin"}).Once(ctx); err != nil || !r.Pushed {
		t.Fatalf("a: %+v, %v", r, err)
	}
	// b merges that in and pushes: everything it pushes is signed.
	if r, err := (&Syncer{Store: b, Remote: "origin"}).Once(ctx); err != nil || !r.Pushed {
		t.Fatalf("b: %+v, %v", r, err)
	}
	out := mustGit(t, b.Dir(), "rev-list", "refs/remotes/origin/"+Branch+"..HEAD")
	if out != "" {
		t.Fatalf("b's branch is not what it pushed: %q", out)
	}
	ahead := strings.Fields(mustGit(t, b.Dir(), "rev-list", mustGit(t, a.Dir(), "rev-parse", "HEAD")+"..HEAD"))
	if len(ahead) < 2 {
		t.Fatalf("b pushed %d commit(s) a lacks, want its own and its merge", len(ahead))
	}
	for _, c := range ahead {
		if got := sigStatus(t, b, c); got != "G" {
			t.Errorf("b's pushed commit %.10s: %%G? = %q, want G", c, got)
		}
	}
	// and a takes it in.
	if r, err := (&Syncer{Store: a, Remote: "origin"}).Once(ctx); err != nil || len(r.Merged) == 0 {
		t.Fatalf("a taking b's work: %+v, %v", r, err)
	}
	if got, err := a.Task(tb.ID); err != nil || got.Title != "made before" {
		t.Errorf("a's copy of b's task = %+v, %v", got, err)
	}
	if out := mustGit(t, b.Dir(), "status", "--porcelain"); out != "" {
		t.Errorf("b's working copy after signing again: %q, want clean", out)
	}
}

// TestLongHistoryIsVerifiedOverRounds: a clone further behind than one round verifies
// (MaxVerify, 3 here) verifies the rest over the next rounds, oldest first, taking
// nothing in and pushing nothing until all are verified; an unsigned commit among the
// later ones is refused when its turn comes; a remote rewound under the verified ones
// lets nothing unverified in.
func TestLongHistoryIsVerifiedOverRounds(t *testing.T) {
	defer func(n int) { MaxVerify = n }(MaxVerify)
	MaxVerify = 3
	a, b, _, _ := signedClones(t)
	ctx := context.Background()
	sa, sb := &Syncer{Store: a, Remote: "origin"}, &Syncer{Store: b, Remote: "origin"}
	var ids []string
	for i := range 8 {
		tk, err := a.CreateTask(owner, filestore.NewTask{Title: fmt.Sprintf("From A %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tk.ID)
		if r, err := sa.Once(ctx); err != nil || !r.Pushed {
			t.Fatalf("a's round %d: %+v, %v", i, r, err)
		}
	}
	own, err := b.CreateTask(owner, filestore.NewTask{Title: "B's own"})
	if err != nil {
		t.Fatal(err)
	}
	for round, want := range []int{5, 2} {
		r, err := sb.Once(ctx)
		if err != nil || r.Verifying != want || len(r.Merged) != 0 || r.Pushed {
			t.Fatalf("b's round %d: %+v, %v; want %d left to verify, nothing merged or pushed", round+1, r, err, want)
		}
		if _, err := b.Task(ids[0]); err == nil {
			t.Fatalf("b's round %d took in a's task before all was verified", round+1)
		}
	}
	r, err := sb.Once(ctx)
	if err != nil || r.Verifying != 0 || !r.Pushed {
		t.Fatalf("b's third round: %+v, %v; want all verified, pushed", r, err)
	}
	for _, id := range ids {
		if _, err := b.Task(id); err != nil {
			t.Errorf("b lacks a's task %s: %v", id, err)
		}
	}
	if _, err := sa.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Task(own.ID); err != nil {
		t.Errorf("a lacks b's own task: %v", err)
	}

	// Six more signed commits of a's, then one of Eve's, unsigned: b verifies three, then
	// meets Eve's among the rest and refuses it.
	for i := range 6 {
		if _, err := a.CreateTask(owner, filestore.NewTask{Title: fmt.Sprintf("More from A %d", i)}); err != nil {
			t.Fatal(err)
		}
		if _, err := sa.Once(ctx); err != nil {
			t.Fatal(err)
		}
	}
	eve := newEveClone(t, a)
	eve.rename("Eve's")
	bad := eve.commit("rename", "")
	eve.push()
	for _, want := range []int{4, 1} {
		if r, err := sb.Once(ctx); err != nil || r.Verifying != want {
			t.Fatalf("b's round: %+v, %v; want %d left to verify", r, err, want)
		}
	}
	_, err = sb.Once(ctx)
	var ue *UnsignedError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), bad[:10]) {
		t.Fatalf("Eve's turn: %v; want %s refused", err, bad[:10])
	}
	// The remote is rewound under what b verified: back to b's own head, then Eve's
	// unsigned commit alone. The next round verifies anew and refuses it.
	eve.git("reset", "-q", "--hard", mustGit(t, b.Dir(), "rev-parse", "HEAD"))
	eve.rename("Eve's again")
	bad2 := eve.commit("rename again", "")
	eve.git("push", "-q", "-f", "origin", Branch)
	_, err = sb.Once(ctx)
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), bad2[:10]) {
		t.Fatalf("after the rewind: %v; want %s refused", err, bad2[:10])
	}
	if p, err := b.Project(); err != nil || p.Name != "p" {
		t.Errorf("b's project = %+v, %v; want its own name p", p, err)
	}
}
