package gitstate

import (
	"fmt"
	"sort"
	"strings"

	"github.com/aipm/aipm/filestore"
	"github.com/aipm/aipm/filestore/merge"
)

// Merges and rewrites aipm did not make.
//
// Git alone can merge the state branch — a forge's pull request, `git merge -X ours` in
// .ai-pm — and such a merge knows nothing of the files' rules: it can drop a line of a
// JSONL file (which is append-only: any line either parent had belongs in a merge) or a
// field change of an entity that aipm's field-wise merge keeps. And a force-push can rewind
// the remote's branch, dropping commits other clones pushed. So:
//
//   - Every round checks the merges that entered the branch since the last check
//     (checkedRef) and that aipm did not make (aipmMerge): it makes aipm's merge of the
//     same parents (merge.Lines, merge.Merge) and compares. A record either parent had
//     and the store still lacks is appended again; a field change the merge dropped is
//     applied again where the file still holds the merge's value (a later change stands).
//     The round commits the restoration and names it (Round.Restored).
//   - A remote head that does not descend from the one this clone last fetched
//     (seenRef) was rewound: the round says so (Round.Rewound) and merges the old head in
//     as well, so what it held comes back with the next push.
//   - `aipm doctor` runs the same check over the recent history (LostMerges) and names
//     what is still missing; `aipm doctor --repair` restores it.

// aipmMergeTrailer ends the message of every merge commit a round makes; older ones are
// told by their subject.
const (
	aipmMergeTrailer = "Aipm-Merge: yes"
	aipmMergeSubject = "aipm: merge the state of "
)

// checkedRef is the head of the state branch when a round last checked its merges.
const checkedRef = "refs/aipm/merges-checked"

// seenRef is the remote's head of the state branch as this clone last fetched it: kept
// apart from the remote-tracking ref, which any `git fetch` moves.
func seenRef(remote string) string { return "refs/aipm/seen/" + remote + "/" + Branch }

// maxScan bounds the commits one check reads: a round's new commits, doctor's recent
// history.
const maxScan = 2000

// Loss is what a merge aipm did not make dropped, that the store lacked when it was checked.
type Loss struct {
	Merge   string   `json:"merge"`   // the merge commit, abbreviated
	Subject string   `json:"subject"` // its message's first line
	Path    string   `json:"path"`    // relative to .ai-pm
	Lines   int      `json:"lines,omitempty"`
	Fields  []string `json:"fields,omitempty"`
}

func (l Loss) String() string {
	return fmt.Sprintf("%s: %s dropped by merge %s (%q)", l.Path, l.What(), l.Merge, l.Subject)
}

// What says what was dropped: "3 line(s)", "the change of priority".
func (l Loss) What() string {
	if len(l.Fields) > 0 {
		return "the change of " + strings.Join(l.Fields, ", ")
	}
	return fmt.Sprintf("%d line(s)", l.Lines)
}

type commitInfo struct {
	id, subject string
	parents     []string
}

// foreignMerges lists, oldest first, the merge commits of `git log revs` (at most maxScan
// commits read) that aipm did not make.
func foreignMerges(g gitCmd, revs ...string) ([]commitInfo, error) {
	args := append([]string{"log", "-z", fmt.Sprintf("--max-count=%d", maxScan), "--format=%H%x1f%P%x1f%B"}, revs...)
	out, err := g.run(append(args, "--")...)
	if err != nil {
		return nil, err
	}
	var ms []commitInfo
	for _, rec := range strings.Split(out, "\x00") {
		f := strings.SplitN(rec, "\x1f", 3)
		if len(f) != 3 {
			continue
		}
		parents := strings.Fields(f[1])
		if len(parents) < 2 || aipmMerge(f[2]) {
			continue
		}
		subject, _, _ := strings.Cut(strings.TrimSpace(f[2]), "\n")
		ms = append(ms, commitInfo{id: strings.TrimSpace(f[0]), subject: subject, parents: parents})
	}
	for i, j := 0, len(ms)-1; i < j; i, j = i+1, j-1 {
		ms[i], ms[j] = ms[j], ms[i]
	}
	return ms, nil
}

// aipmMerge tells the message of a merge commit a round made.
func aipmMerge(msg string) bool {
	return strings.HasPrefix(strings.TrimSpace(msg), aipmMergeSubject) || strings.Contains(msg, "\n"+aipmMergeTrailer)
}

// lostBy compares merge m with aipm's merge of its parents and returns what it dropped
// that the store (read through f) still lacks; with restore, it writes that back. A
// file that does not decode is passed over: doctor names it on its own.
func lostBy(g gitCmd, f *filestore.Files, m commitInfo, restore bool) ([]Loss, error) {
	set := map[string]bool{}
	for _, p := range m.parents {
		out, err := g.run("diff", "--name-only", "--no-renames", "-z", p, m.id)
		if err != nil {
			return nil, err
		}
		for _, path := range strings.Split(out, "\x00") {
			if path != "" && filestore.StatePath(path) == nil &&
				(strings.HasSuffix(path, ".jsonl") || filestore.EntityKind(path) != "") {
				set[path] = true
			}
		}
	}
	if len(set) == 0 {
		return nil, nil
	}
	paths := make([]string, 0, len(set))
	for p := range set {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	base := ""
	if len(m.parents) == 2 {
		base, _ = g.run("merge-base", m.parents[0], m.parents[1]) // "" for unrelated histories
	}
	revs := append([]string{m.id}, m.parents...)
	if base != "" {
		revs = append(revs, base)
	}
	specs := make([]string, 0, len(paths)*len(revs))
	for _, p := range paths {
		for _, r := range revs {
			specs = append(specs, r+":"+p)
		}
	}
	// Nothing over what the store reads is loaded (mergeInto refuses such files).
	sizes, err := g.catSizes(specs)
	if err != nil {
		return nil, err
	}
	kept, keptSpecs := paths[:0], specs[:0]
	for i, p := range paths {
		limit := int64(filestore.MaxEntityFile)
		if strings.HasSuffix(p, ".jsonl") {
			limit = filestore.MaxJSONLFile
		}
		n := len(revs)
		if slicesMax(sizes[i*n:(i+1)*n]) <= limit {
			kept = append(kept, p)
			keptSpecs = append(keptSpecs, specs[i*n:(i+1)*n]...)
		}
	}
	objs, err := g.catBatch(keptSpecs)
	if err != nil {
		return nil, err
	}
	short, err := g.run("rev-parse", "--short=10", m.id)
	if err != nil {
		return nil, err
	}
	var losses []Loss
	n := len(revs)
	for i, p := range kept {
		o := objs[i*n : (i+1)*n]
		hand, parents := o[0], o[1:1+len(m.parents)]
		cur, have, err := f.Read(p)
		if err != nil {
			continue // not a file here (a directory, a link): not the store's
		}
		loss := Loss{Merge: short, Subject: m.subject, Path: p}
		var data []byte
		if strings.HasSuffix(p, ".jsonl") {
			var want []byte
			for _, par := range parents {
				if par.ok {
					want = merge.Lines(p, nil, want, par.data)
				}
			}
			lost := merge.Missing(p, hand.data, want)
			if lost == nil || (!have && hand.ok) {
				continue // nothing dropped, or the file was removed since
			}
			missing := merge.Missing(p, cur, lost)
			if missing == nil {
				continue // back already (another clone restored it)
			}
			loss.Lines = merge.CountLines(missing)
			data = merge.Lines(p, nil, cur, missing)
		} else {
			kind := filestore.EntityKind(p)
			if len(parents) != 2 || !parents[0].ok || !parents[1].ok || !hand.ok || !have || filestore.HasConflictMarkers(cur) {
				continue
			}
			var b []byte
			if base != "" && o[n-1].ok {
				b = o[n-1].data
			}
			lost, err := merge.LostFields(kind, b, parents[0].data, parents[1].data, hand.data)
			if err != nil || lost == nil {
				continue
			}
			fixed, fields, err := merge.RestoreFields(kind, cur, hand.data, lost)
			if err != nil || fixed == nil || merge.CheckEntity(kind, fixed) != nil {
				continue
			}
			loss.Fields, data = fields, fixed
		}
		if restore && f.Replace(p, data) != nil {
			continue // cannot be written here: doctor names it, as still missing
		}
		losses = append(losses, loss)
	}
	return losses, nil
}

func slicesMax(s []int64) int64 {
	m := int64(-1)
	for _, v := range s {
		m = max(m, v)
	}
	return m
}

// restoreLost checks, in a round, the merges aipm did not make that entered the branch
// since the last check (or since start, the head when the round began, in a clone that
// never checked): what they dropped is written back and committed. It returns the paths
// written.
func (s *Syncer) restoreLost(start string, r *Round) (written []string, err error) {
	root := s.Store.Root()
	g := gitCmd{dir: stateDir(root), env: identity(root)}
	// Read without the store lock, which agents wait on: the sync lock keeps the
	// branch still, and most rounds find nothing new.
	head, err := g.run("rev-parse", "-q", "--verify", "HEAD")
	if err != nil {
		return nil, err
	}
	checked, _ := g.run("rev-parse", "-q", "--verify", checkedRef+"^{commit}")
	if checked == "" {
		checked = start
	}
	if checked == head {
		return nil, nil
	}
	revs := []string{head}
	if checked != "" {
		revs = append(revs, "^"+checked)
	}
	ms, err := foreignMerges(g, revs...)
	if err != nil {
		return nil, err
	}
	if len(ms) > 0 {
		err = s.Store.Exclusive(func(f *filestore.Files) error {
			var all []Loss
			for _, m := range ms {
				// A merge that cannot be read (a parent a shallow clone lacks) does not
				// stop the round: doctor, reading the same history, names it.
				losses, _ := lostBy(g, f, m, true)
				all = append(all, losses...)
			}
			if len(all) == 0 {
				return nil
			}
			msg := fmt.Sprintf("aipm: restore what %d merge(s) made outside aipm dropped\n\n", len(ms))
			for _, l := range all {
				written = appendNew(written, l.Path)
				r.Restored = append(r.Restored, l.String())
				msg += l.String() + "\n"
			}
			// Named as this machine's, as every commit of aipm's: a teammate's round would
			// otherwise take it for one made by hand.
			msg = strings.TrimRight(msg, "\n") + s.trailers()
			if _, err := g.run("add", "-A", "."); err != nil {
				return err
			}
			args, err := signingOf(stateDir(root)).cmd("commit", "-c", "maintenance.auto=false")
			if err != nil {
				return err
			}
			if _, err := g.run(append(args, "-q", "--no-verify", "-m", msg)...); err != nil {
				return err
			}
			head, err = g.run("rev-parse", "HEAD")
			return err
		})
		if err != nil {
			return written, err
		}
	}
	_, err = g.run("update-ref", checkedRef, head)
	return written, err
}

// keepRewound tells a remote branch rewound since this clone last fetched it (before:
// its head then) and merges that old head in, so that nothing it held is lost; it returns
// the paths that merge wrote. The remote head is recorded as seen either way.
func (s *Syncer) keepRewound(before, theirs string, r *Round) (merged []string, err error) {
	root := s.Store.Root()
	g := gitCmd{dir: stateDir(root)}
	id, err := g.run("rev-parse", theirs)
	if err != nil || id == before {
		return nil, err // nothing new there: most rounds
	}
	if before != "" && g.ok("cat-file", "-e", before+"^{commit}") && !g.ok("merge-base", "--is-ancestor", before, id) {
		n, _ := g.run("rev-list", "--count", before, "^"+id)
		oldShort, _ := g.run("rev-parse", "--short=10", before)
		newShort, _ := g.run("rev-parse", "--short=10", id)
		r.Rewound = fmt.Sprintf("%s's %s was rewound from %s to %s (%s commit(s) of it gone there): merged back, the push restores them",
			s.Remote, Branch, oldShort, newShort, n)
		m, conflicts, err := s.commitAndMerge(before, true, r)
		if err != nil {
			return nil, err
		}
		r.Conflicts = appendNew(r.Conflicts, conflicts...)
		merged = m
	}
	saw(root, s.Remote, id)
	return merged, nil
}

// saw records head as the remote's head of the state branch, as after a push it is.
func saw(root, remote, head string) {
	gitCmd{dir: root}.ok("update-ref", seenRef(remote), head)
}

// lastSeen is the remote's head of the state branch as this clone last fetched it; ""
// when it never did.
func lastSeen(root, remote string) string {
	g := gitCmd{dir: root}
	for _, r := range []string{seenRef(remote), "refs/remotes/" + remote + "/" + Branch} {
		if id, err := g.run("rev-parse", "-q", "--verify", r+"^{commit}"); err == nil && id != "" {
			return id
		}
	}
	return ""
}

// LostMerges checks the recent history of the state branch (its last maxScan commits) for
// merges aipm did not make, and returns what they dropped that the store still lacks. With
// repair, that is written back (the next round commits and pushes it).
func LostMerges(s *filestore.Store, repair bool) ([]Loss, error) {
	root := s.Root()
	if !Attached(root) {
		return nil, nil
	}
	g := gitCmd{dir: stateDir(root)}
	ms, err := foreignMerges(g, "HEAD")
	if err != nil || len(ms) == 0 {
		return nil, err // most stores: no merge but aipm's, and no store lock taken
	}
	var all []Loss
	err = s.Exclusive(func(f *filestore.Files) error {
		for _, m := range ms {
			losses, err := lostBy(g, f, m, repair)
			all = append(all, losses...)
			if err != nil {
				return err
			}
		}
		return nil
	})
	return all, err
}
