package gitstate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gofrs/flock"

	"github.com/aipm/aipm/filestore"
	"github.com/aipm/aipm/filestore/merge"
)

// Syncer moves one clone's state to and from its remote. Its zero hooks do nothing.
type Syncer struct {
	// Store is the clone's store; its .ai-pm is the state branch's worktree (Attached).
	Store *filestore.Store
	// Remote is the remote to fetch from and push to; "" commits only.
	Remote string

	// AfterMerge, if set, runs after another clone's changes were applied to the store,
	// outside the store lock, with the paths (relative to .ai-pm) the merge wrote and the
	// entity files left with conflict markers. It is the place for repairs of states
	// that no single clone allowed: what it writes through the store is committed by the
	// next round. An error is reported with the round's and does not stop the round.
	AfterMerge func(ctx context.Context, changed []string) error
	// AfterRound, if set, runs at the end of every round, pushed or not (for instance to
	// renew what must stay fresh in the shared state, which the next round then syncs).
	AfterRound func(ctx context.Context, r *Round) error
}

// Round is what one round did.
type Round struct {
	Committed bool     `json:"committed"` // local changes were committed
	Merged    []string `json:"merged"`    // paths another clone changed, written into the store
	Conflicts []string `json:"conflicts"` // entity files left with conflict markers
	Pushed    bool     `json:"pushed"`    // the remote's branch moved to ours
	Rejected  int      `json:"rejected"`  // pushes refused because the remote moved meanwhile
	// Current says the remote's branch held this clone's head at the end of the round
	// (pushed now, or nothing of ours it lacked): Head is that commit.
	Current bool   `json:"current,omitempty"`
	Head    string `json:"head,omitempty"`
	// Suspect names, one line each, the commits taken in that their author may not have
	// made (suspectCommits): made with plain git (no Aipm-Machine trailer), or holding a
	// change their machine or human may not make.
	Suspect []string `json:"suspect,omitempty"`
	// Refused are the paths another clone pushed that are not the store's to take
	// (filestore.StatePath), each "<path>: <why> (commit <id>)"; the rest of the round went on.
	Refused []string `json:"refused,omitempty"`
	// Restored names what merges aipm did not make had dropped (lines, field changes),
	// written back and committed by this round (handmerge.go); Rewound says the remote's
	// branch was rewound (a force-push) and its old head merged back.
	Restored []string `json:"restored,omitempty"`
	Rewound  string   `json:"rewound,omitempty"`
	// Left counts the paths another clone changed that were over the round's bounds
	// (MaxRoundFiles, MaxRoundBytes): the round committed what it took, did not push,
	// and the next round takes the rest.
	Left int `json:"left,omitempty"`
	// Verifying counts the commits of theirs still to verify, when this clone requires
	// signed state and is further behind than one round verifies (MaxVerify): nothing
	// of theirs was taken in, nothing pushed, and the next round goes on.
	Verifying int `json:"verifying,omitempty"`
	// Unsigned says which commit of theirs is not signed by an allowed signer, when
	// this clone requires signed state (signing.go): nothing of theirs was taken in.
	Unsigned string `json:"unsigned,omitempty"`
}

// A push refused because another clone pushed first is tried again — fetch, merge,
// push — after a wait drawn at random up to a ceiling that doubles from retryFirst to
// retryMost, so that clones which collided do not collide again in step. A round gives
// up only once roundBudget has passed since it started.
const (
	retryFirst  = 100 * time.Millisecond
	retryMost   = 1600 * time.Millisecond
	roundBudget = 30 * time.Second
)

// retryWait is the wait before the try after the n-th refusal (n ≥ 1): uniform in
// [c/2, c) for the ceiling c = retryFirst·2^(n-1), at most retryMost.
func retryWait(n int) time.Duration {
	c := retryMost
	if n < 5 && retryFirst<<(n-1) < retryMost {
		c = retryFirst << (n - 1)
	}
	return c/2 + rand.N(c/2)
}

// Once runs one round: commit, fetch, merge, push; a rejected push fetches and merges
// again. It never forces a push. What the round did is recorded for `aipm status`
// (ReadLastRound).
func (s *Syncer) Once(ctx context.Context) (*Round, error) {
	r, err := s.once(ctx)
	if ctx.Err() == nil {
		s.record(r, err)
	}
	return r, err
}

func (s *Syncer) once(ctx context.Context) (*Round, error) {
	root := s.Store.Root()
	if !Attached(root) {
		return nil, fmt.Errorf("%s is not the worktree of branch %s: run `aipm migrate` to move the state onto it", stateDir(root), Branch)
	}
	unlock, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	r := &Round{}
	var changed []string
	err = s.attempts(ctx, r, &changed)
	var hookErr error
	if len(changed) > 0 && s.AfterMerge != nil {
		// After the push, not between the merge and it: the repairs' reads of the whole
		// store would widen the window in which another clone's push refuses ours.
		if err := s.AfterMerge(ctx, changed); err != nil {
			hookErr = err
		}
	}
	if err != nil {
		return r, errors.Join(err, hookErr)
	}
	if r.Committed || len(r.Merged) > 0 || len(r.Restored) > 0 {
		pack(root)
	}
	if s.AfterRound != nil {
		if err := s.AfterRound(ctx, r); err != nil {
			hookErr = errors.Join(hookErr, err)
		}
	}
	return r, hookErr
}

// attempts commits, then fetches, merges and pushes until the push is taken or nothing
// of ours is missing from the remote; a refused push waits (retryWait) and tries again,
// within roundBudget. changed collects the paths the merges and restorations wrote.
func (s *Syncer) attempts(ctx context.Context, r *Round, changed *[]string) error {
	root := s.Store.Root()
	start := time.Now()
	startHead, _ := gitCmd{dir: stateDir(root)}.run("rev-parse", "-q", "--verify", "HEAD")
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		theirs, found, before := "", false, ""
		var unsigned error
		if s.Remote != "" {
			var err error
			before = lastSeen(root, s.Remote)
			if theirs, found, err = fetchState(root, s.Remote); err != nil {
				return err
			}
			if found {
				r.Verifying, unsigned = verifyIncoming(stateDir(root), s.Remote, theirs)
				found = unsigned == nil && r.Verifying == 0
				if ue := (*UnsignedError)(nil); errors.As(unsigned, &ue) {
					r.Unsigned = ue.Why
				}
			}
			if found {
				if sus, err := suspectCommits(gitCmd{dir: stateDir(root)}, s.Store, "HEAD", theirs); err == nil {
					r.Suspect = appendNew(r.Suspect, sus...)
				}
			}
		}
		var kept []string
		if found {
			var err error
			if kept, err = s.keepRewound(before, theirs, r); err != nil {
				return err
			}
		}
		merged, conflicts, err := s.commitAndMerge(theirs, found, r)
		if err != nil {
			return err
		}
		merged = appendNew(kept, merged...)
		r.Merged = appendNew(r.Merged, merged...)
		r.Conflicts = appendNew(r.Conflicts, conflicts...)
		restored, err := s.restoreLost(startHead, r)
		if err != nil {
			return err
		}
		*changed = appendNew(*changed, appendNew(merged, restored...)...)
		if s.Remote == "" || unsigned != nil {
			return unsigned // refused theirs: ours stays here, unpushed
		}
		if r.Verifying > 0 {
			return nil // theirs not all verified yet: the next round goes on
		}
		if r.Left > 0 {
			return nil // theirs not all taken yet: the next round goes on
		}
		if found {
			heads, err := gitCmd{dir: stateDir(root)}.run("rev-parse", "HEAD", theirs)
			if err != nil {
				return err
			}
			if f := strings.Fields(heads); len(f) == 2 && f[0] == f[1] {
				r.Current, r.Head = true, f[0]
				return nil // nothing of ours that the remote lacks
			}
		}
		if found {
			if err := signUnpushed(stateDir(root), theirs); err != nil {
				return err
			}
		}
		head, err := gitCmd{dir: stateDir(root)}.run("rev-parse", "HEAD")
		if err != nil {
			return err
		}
		rejected, err := push(root, s.Remote)
		if err != nil {
			return err
		}
		if !rejected {
			r.Pushed, r.Current, r.Head = true, true, head
			saw(root, s.Remote, head)
			return nil
		}
		r.Rejected++
		wait := retryWait(r.Rejected)
		if time.Since(start)+wait > roundBudget {
			return fmt.Errorf("push of %s to %s refused %d times in %s: other clones keep pushing first; the next round tries again",
				Branch, s.Remote, r.Rejected, time.Since(start).Round(time.Second))
		}
		if !sleep(ctx, wait) {
			return ctx.Err()
		}
	}
}

// Loop runs a round every interval until ctx ends, then one last round so that what was
// done just before the end is pushed. A signal on wake (a local change: the caller
// watches the store) starts the next round early, so this clone's changes leave at once
// rather than at the next tick — but never sooner than a gap after the previous round
// (nextGap): minGap when the clone is quiet, up to interval while every round has
// something to commit or its pushes are refused, so that a busy machine sends one
// commit carrying many changes rather than a stream of pushes that refuse the other
// clones'. report sees every round's outcome.
func (s *Syncer) Loop(ctx context.Context, interval time.Duration, wake <-chan struct{}, report func(*Round, error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	gap := time.Duration(0)
	for {
		t0 := time.Now()
		r, err := s.Once(ctx)
		if ctx.Err() != nil {
			break
		}
		report(r, err)
		if err == nil && (r.Left > 0 || r.Verifying > 0) {
			// Another clone's changes are not all taken in: the next round goes on with
			// them at once (after the least gap, which leaves the store to the agents).
			if !sleep(ctx, minGap) {
				break
			}
			continue
		}
		gap = nextGap(gap, r, time.Since(t0), interval)
		// Up to a quarter either way, so that busy clones do not push in step.
		if !pause(ctx, t.C, wake, gap*3/4+rand.N(gap/2+1)) {
			break
		}
	}
	last, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	r, err := s.Once(last)
	report(r, err)
}

// sleep waits d, or less when ctx ends first (then it is false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// minGap is the least time between a round and one a local change starts.
const minGap = 250 * time.Millisecond

// nextGap is the least time before a round that a local change starts, after a round
// that did r and took took, the gap before it being gap. After a quiet round it is
// minGap, so that a lone change leaves at once. While this clone's own changes keep
// coming (each round commits) or its pushes are refused, it doubles, up to interval,
// and is at least twice what the round took: a busy clone then sends one commit
// carrying many changes about once an interval, and leaves the remote free between its
// pushes for the other clones' rounds — a clone whose rounds are cheap (nothing to
// merge) would otherwise push so often that the others, whose rounds merge, never get
// theirs in.
func nextGap(gap time.Duration, r *Round, took, interval time.Duration) time.Duration {
	if r == nil || (!r.Committed && r.Rejected == 0) || r.Left > 0 || r.Verifying > 0 {
		return min(minGap, interval)
	}
	most := interval
	if r.Rejected > 0 {
		most = 2 * interval
	}
	return min(max(2*gap, 2*took, minGap), most)
}

// pause waits for the next round: gap, then the tick or a wake (a tick during the gap
// counts once the gap has passed). It is false when ctx ended.
func pause(ctx context.Context, tick <-chan time.Time, wake <-chan struct{}, gap time.Duration) bool {
	g := time.NewTimer(gap)
	defer g.Stop()
	ticked := false
	for waiting := true; waiting; {
		select {
		case <-ctx.Done():
			return false
		case <-tick:
			ticked = true
		case <-g.C:
			waiting = false
		}
	}
	if ticked {
		return true
	}
	select {
	case <-ctx.Done():
		return false
	case <-tick:
	case <-wake:
	}
	return true
}

// looseLimit is the size of loose objects (KiB) past which a round packs them.
const looseLimit = 2 << 10

// pack keeps the history small. Every commit stores whole new objects: a new blob for
// each mailbox appended to and a new tree for each directory changed — at 10,000 tasks,
// the tasks/ tree alone is half a megabyte — and a fetch of fewer than a hundred objects
// leaves them loose too. Git's own `gc --auto` counts loose objects, not bytes, so
// tens of megabytes pile up per thousand changes before it acts; packing deltifies
// these objects against their previous versions to a few hundred bytes each. So: when
// the loose objects pass looseLimit, `git repack --geometric=2 -d` packs them with as
// few of the packs as keep each at least twice the size of the next smaller one —
// their number stays logarithmic, and one repack costs about what the new objects do,
// not the whole history — and `git gc --auto` then does what is left (pruning old
// unreachable objects). One cheap `count-objects` a round checks it.
func pack(root string) {
	g := gitCmd{dir: root}
	out, err := g.run("count-objects", "-v")
	if err != nil {
		return
	}
	due := false
	for _, l := range strings.Split(out, "\n") {
		k, v, _ := strings.Cut(l, ": ")
		n, err := strconv.Atoi(strings.TrimSpace(v))
		switch {
		case err != nil:
		case k == "size" && n > looseLimit, k == "packs" && n > packLimit:
			due = true
		}
	}
	if due {
		if !g.ok(append(packBounds, "repack", "-d", "-q", "--geometric=2")...) {
			g.ok(append(packBounds, "repack", "-d", "-q")...) // a Git before 2.32
		}
		g.ok("-c", "gc.autoDetach=false", "gc", "--auto", "--quiet")
	}
}

// packBounds bound what packing costs, for a push and a repack: the delta search holds at
// most 64 MiB of objects, and a file over 64 MiB (only a log near its 256 MiB limit) is
// sent and kept whole rather than as a delta. Without them, a pushed 200 MiB mailbox cost
// the next push a gigabyte.
var packBounds = []string{"-c", "pack.windowMemory=64m", "-c", "core.bigFileThreshold=64m"}

// packLimit is the count of packs past which a round packs them: each fetch keeps its
// pack (fetchState), and a geometric repack rolls the small ones up.
const packLimit = 16

// lock takes the clone's sync lock, so `aipm sync` and `aipm run` never run git in the
// state's worktree at once.
func (s *Syncer) lock() (func(), error) {
	p := filepath.Join(s.Store.Dir(), "runtime", "locks", "sync.lock")
	if err := filestore.EnsureDir(filepath.Dir(p)); err != nil {
		return nil, err
	}
	lk := flock.New(p, flock.SetPermissions(0o644))
	if err := lk.Lock(); err != nil {
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	return func() { lk.Unlock() }, nil
}

// trailers name, in every commit of this clone's changes, the machine they were made on
// and the clone's human (`aipm whoami`), so the history says where a change came from.
func (s *Syncer) trailers() string { return storeTrailers(s.Store) }

func storeTrailers(st *filestore.Store) string {
	var t []string
	if m := st.ThisMachine(); m != "" {
		t = append(t, "Aipm-Machine: "+m)
	}
	if who, err := st.Identity(); err == nil && who != nil && who.Human != "" {
		t = append(t, "Aipm-Human: "+who.Human)
	}
	if len(t) == 0 {
		return ""
	}
	return "\n\n" + strings.Join(t, "\n")
}

// rootTrailers are storeTrailers for the store at root ("" when it cannot be opened).
func rootTrailers(root string) string {
	st, err := filestore.Open(root, filestore.Options{})
	if err != nil {
		return ""
	}
	return storeTrailers(st)
}

// push pushes the state branch; rejected is true when the remote moved meanwhile.
func push(root, remote string) (rejected bool, err error) {
	out, errb, err := gitCmd{dir: root}.run3(append(packBounds, "push", "--porcelain", "--no-verify", remote, ref+":"+ref)...)
	if err == nil {
		return false, nil
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "!") && strings.Contains(l, "[rejected]") {
			return true, nil
		}
		if strings.HasPrefix(l, "!") && strings.Contains(l, "[remote rejected] (failed to update ref)") {
			return true, nil // the ref moved between the remote's answer and our update: another push landed
		}
	}
	msg := strings.TrimSpace(string(errb))
	if msg == "" {
		msg = strings.TrimSpace(string(out))
	}
	return false, fmt.Errorf("git push %s %s: %s", remote, Branch, msg)
}

// merge3 decides one path: what to write (write), or to remove it (remove), or nothing.
func merge3(g gitCmd, p string, b, o, t object) (data []byte, write, remove, conflict bool, err error) {
	switch {
	case !t.ok: // theirs removed it
		if o.ok && b.ok && bytes.Equal(o.data, b.data) {
			return nil, false, true, false, nil
		}
		return nil, false, false, false, nil // ours changed or never had it: ours stands
	case o.ok && bytes.Equal(o.data, t.data):
		return nil, false, false, false, nil
	case !o.ok || (b.ok && bytes.Equal(o.data, b.data)):
		return t.data, true, false, false, nil // only theirs changed it (or ours removed it)
	}
	// Both sides changed it.
	switch {
	case strings.HasSuffix(p, ".jsonl"):
		data = merge.Lines(p, b.data, o.data, t.data)
	case filestore.EntityKind(p) != "":
		base := b.data
		if !b.ok {
			base = o.data // added on both sides: ours stands for the ancestor
		}
		res, merr := merge.Merge(filestore.EntityKind(p), base, o.data, t.data)
		if merr != nil {
			data, conflict, err = lineMerge(g, b.data, o.data, t.data)
			break
		}
		data, conflict = res.Data, len(res.Conflicts) > 0
	default:
		data, conflict, err = lineMerge(g, b.data, o.data, t.data)
	}
	if err != nil {
		return nil, false, false, false, err
	}
	return data, !bytes.Equal(data, o.data), false, conflict, nil
}

// lineMerge is `git merge-file -p`: Git's line merge, with markers where lines conflict.
func lineMerge(g gitCmd, base, ours, theirs []byte) ([]byte, bool, error) {
	dir, err := os.MkdirTemp("", "aipm-merge-")
	if err != nil {
		return nil, false, err
	}
	defer os.RemoveAll(dir)
	names := []string{"base", "ours", "theirs"}
	for i, d := range [][]byte{base, ours, theirs} {
		if err := os.WriteFile(filepath.Join(dir, names[i]), d, 0o600); err != nil {
			return nil, false, err
		}
	}
	out, _, err := gitCmd{dir: dir}.run3("merge-file", "-p", "-L", "ours", "-L", "base", "-L", "theirs",
		filepath.Join(dir, "ours"), filepath.Join(dir, "base"), filepath.Join(dir, "theirs"))
	var ee interface{ ExitCode() int }
	switch {
	case err == nil:
		return out, false, nil
	case errors.As(err, &ee) && ee.ExitCode() > 0 && ee.ExitCode() < 128:
		return out, true, nil
	}
	return nil, false, err
}

// appendNew appends to list each of add it does not hold yet.
func appendNew(list []string, add ...string) []string {
	if len(add) == 0 {
		return list
	}
	have := make(map[string]bool, len(list)+len(add))
	for _, l := range list {
		have[l] = true
	}
	for _, a := range add {
		if !have[a] {
			have[a] = true
			list = append(list, a)
		}
	}
	return list
}

// originIn says which commit of theirs last changed a path, and who wrote and committed
// it, as an agent held for an approval names them (filestore.Files.Origin). What another
// clone wrote in its commit is shown, never obeyed: control characters are replaced and
// each name is clipped.
func originIn(g gitCmd, theirs string) func(rel string) filestore.AgentOrigin {
	return func(rel string) filestore.AgentOrigin {
		out, err := g.run("log", "-1", "--no-show-signature", "--format=%H%x00%an <%ae>%x00%cn <%ce>", theirs, "--", rel)
		f := strings.Split(out, "\x00")
		if err != nil || len(f) != 3 {
			return filestore.AgentOrigin{Commit: theirs}
		}
		return filestore.AgentOrigin{Commit: f[0], Author: printable(f[1]), Committer: printable(f[2])}
	}
}

// printable replaces the control characters of s and clips it to 200 bytes.
func printable(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
			return '?'
		}
		return r
	}, s)
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "") + "..."
	}
	return s
}
