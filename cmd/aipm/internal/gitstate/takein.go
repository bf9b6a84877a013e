package gitstate

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/aipm/aipm/filestore"
	"github.com/aipm/aipm/filestore/merge"
)

// What one round takes in from another clone is bounded, whatever the remote holds: at
// most MaxRoundFiles changed paths and MaxRoundBytes of their content. What is over
// either bound is left for the next rounds — named, never dropped: the round commits what
// it took as a commit of its own, not as a merge of theirs, so the next round finds the
// rest still to take. A round that left something does not push (the remote holds
// what it has not taken yet); the next one, which the sync loop starts at once, goes on.
//
// AIPM_MAX_ROUND_FILES may lower the count (tests use it to stay small); it never
// raises it.
var (
	MaxRoundFiles       = lowerOnly(os.Getenv("AIPM_MAX_ROUND_FILES"), 20000)
	MaxRoundBytes int64 = filestore.MaxJSONLFile
)

// MaxUnfinished is how much unfinished work of each kind — tasks, conversations,
// delegations — another clone's changes may bring this store to. Every process of a clone
// holds its unfinished work in memory (finished work is read where it lies), so a push of
// a hundred thousand open tasks would cost each agent's server hundreds of megabytes: a
// round takes a new unfinished entity (or one reopened) only while the store holds fewer
// than MaxUnfinished of its kind, and refuses the rest, named, as it refuses any file it
// may not take. A project's own writers are not bound by it. AIPM_MAX_UNFINISHED may
// lower it.
var MaxUnfinished = lowerOnly(os.Getenv("AIPM_MAX_UNFINISHED"), 10000)

// lowerOnly is env as a count when it is one below def; def otherwise.
func lowerOnly(env string, def int) int {
	if n, err := strconv.Atoi(env); err == nil && n > 0 && n < def {
		return n
	}
	return def
}

// The merge and the writes go in batches of at most batchFiles paths and batchBytes of
// their three versions, and the store lock is held only while a batch is written: a
// round that takes in thousands of files keeps no other process waiting for more than
// one batch, and holds no more than one batch in memory.
const (
	batchFiles       = 512
	batchBytes int64 = 16 << 20
)

// takeIn is what a round takes in from theirs: the paths to merge, their sizes, and
// what it refused or left for later.
type takeIn struct {
	base, ours, theirs string
	short              string      // theirs, for people
	paths              []string    // to merge, in order
	ids                [][3]string // base, ours and theirs object of each path ("": none)
	sizes              [][3]int64  // their sizes (-1: none)
	refused            []string    // "<path>: <why> (commit <id>)"
	left               int         // paths over the round's bounds, for the next rounds
	// again are the paths this round refused after reading them, each with the version
	// of theirs refused (refusals.go).
	again map[string]string
}

// refusedRead records that the round refused theirs' version id of path after reading
// it (none to record for a removal: id "").
func (tk *takeIn) refusedRead(path, id string) {
	if id == "" {
		return
	}
	if tk.again == nil {
		tk.again = map[string]string{}
	}
	tk.again[path] = id
}

// commitAndMerge commits this clone's changes, staged while it holds the store lock so
// that the files stand still while Git reads them (a large log is held open and staged
// after: stageLocked); then takes in theirs (takeIn) in batches, each written under the
// lock; then, staged under the lock again, records the result: a merge commit of ours and
// theirs, or the branch moved to theirs when ours had nothing new, or — when the round
// left paths for the next — a commit of what it took. Reading and merging
// another clone's files happens outside the lock: a store lock held for seconds would
// stall every agent of the machine.
func (s *Syncer) commitAndMerge(theirs string, found bool, r *Round) (merged, conflicts []string, err error) {
	root := s.Store.Root()
	g := gitCmd{dir: stateDir(root), env: identity(root)}
	sign := signingOf(stateDir(root))
	var held heldLogs
	err = s.Store.Exclusive(func(*filestore.Files) error {
		if err := healthy(g); err != nil {
			return err
		}
		held, err = stageLocked(g)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	if err := held.stage(g, s.Store.TempFile); err != nil {
		return nil, nil, err
	}
	committed, err := commitStaged(g, s.trailers(), sign)
	if err != nil {
		return nil, nil, err
	}
	r.Committed = r.Committed || committed
	head, err := g.run("rev-parse", "HEAD")
	if err != nil || !found {
		return nil, nil, err
	}
	if g.ok("merge-base", "--is-ancestor", theirs, head) {
		return nil, nil, nil // nothing new there
	}
	base, _ := g.run("merge-base", head, theirs) // "" for unrelated histories
	work := &unfinishedQuota{s: s.Store}
	earlier := readRefused(g, s.Remote)
	tk, err := planTakeIn(g, base, head, theirs, work, earlier)
	if err != nil {
		return nil, nil, err
	}
	merged, conflicts, refused, err := s.takeBatches(g, tk, originIn(g, theirs), work)
	r.Refused = appendNew(r.Refused, append(tk.refused, refused...)...)
	if err != nil {
		return merged, conflicts, err
	}
	r.Left = tk.left
	if tk.left == 0 {
		clear(earlier) // this round merges theirs, which settles every refusal
	} else {
		maps.Copy(earlier, tk.again)
	}
	if err := saveRefused(g, s.Remote, earlier); err != nil {
		return merged, conflicts, err
	}
	err = s.Store.Exclusive(func(*filestore.Files) error {
		held, err = stageLocked(g, merged...)
		return err
	})
	if err == nil {
		err = held.stage(g, s.Store.TempFile)
	}
	if err != nil {
		return merged, conflicts, err
	}
	// The index now holds the files as the lock found them: what follows reads only it.
	err = func() error {
		if tk.left == 0 && base == head && len(tk.refused)+len(refused) == 0 {
			// Nothing of ours since the base: the files are now theirs (and whatever this
			// clone wrote meanwhile, staged for the next round), and so is the branch.
			_, err := g.run("reset", "-q", "--soft", theirs)
			return err
		}
		tree, err := g.run("write-tree")
		if err != nil {
			return err
		}
		parents := []string{"-p", head, "-p", theirs}
		msg := aipmMergeSubject + s.Remote
		if tk.left > 0 {
			parents = parents[:2]
			msg = fmt.Sprintf("aipm: took in %d file(s) of %s's commit %s; %d more in the next rounds", len(merged), s.Remote, tk.short, tk.left) +
				s.trailers()
		} else {
			if len(conflicts) > 0 {
				msg += "\n\nConflicting free text (run `aipm doctor`):\n  " + strings.Join(conflicts, "\n  ")
			}
			msg += "\n\n" + aipmMergeTrailer
		}
		args, err := sign.cmd("commit-tree")
		if err != nil {
			return err
		}
		c, err := g.run(append(append(append(args, tree), parents...), "-m", msg)...)
		if err != nil {
			return err
		}
		_, err = g.run("update-ref", "-m", "aipm sync: merge", "HEAD", c, head)
		return err
	}()
	return merged, conflicts, err
}

// planTakeIn lists what theirs changed since base that ours does not already hold, and
// decides, before reading any of it, what this round takes: regular files at paths the
// store may take (filestore.StatePath), of sizes it reads (git cat-file --batch-check),
// JSONL files without a line over the store's limit (streamed, never held), new
// unfinished work within MaxUnfinished (work), within the round's bounds. Every version
// is named by its object id, read off tree diffs as they stream, so that no lookup walks
// a tree of a hundred thousand entries per path, and what the round holds follows what
// it takes, not what the remote holds: the paths ours changed since the base (this
// clone's own changes), and at most MaxRoundFiles candidates.
func planTakeIn(g gitCmd, base, ours, theirs string, work *unfinishedQuota, earlier map[string]string) (*takeIn, error) {
	tk := &takeIn{base: base, ours: ours, theirs: theirs}
	again := 0
	var err error
	if tk.short, err = g.run("rev-parse", "--short=10", theirs); err != nil {
		return nil, err
	}
	// The base's version of each path ours changed since; any other path of ours is as
	// the base has it.
	type version struct{ id, mode string }
	oursChanged := map[string]version{}
	if base != "" {
		err := g.eachTreeChange(base, ours, func(c treeChange) error {
			oursChanged[c.path] = version{c.from, c.fromMode}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	// Each path where theirs differs from ours, and that theirs changed since the base
	// (every file of theirs, for unrelated histories): ours does not hold it as theirs
	// has it yet.
	type candidate struct {
		path string
		ids  [3]string // base, ours, theirs
	}
	var cands []candidate
	err = g.eachTreeChange(ours, theirs, func(c treeChange) error {
		b := version{c.from, c.fromMode}
		if v, ok := oursChanged[c.path]; ok {
			b = v
		}
		switch {
		case base == "" && c.to == "":
			return nil // unrelated histories: theirs' files only
		case base == "":
			b = version{}
		case b == version{c.to, c.toMode}:
			return nil // only ours changed it
		}
		if err := filestore.StatePath(c.path); err != nil {
			if c.path != ".gitignore" && c.path != ".gitattributes" { // aipm's own: left as they are, quietly
				tk.refused = append(tk.refused, fmt.Sprintf("%q: %v (commit %s)", c.path, err, tk.short))
			}
			return nil
		}
		if c.toMode != "" && !regularFile(c.toMode) {
			tk.refused = append(tk.refused, fmt.Sprintf("%q: not a regular file (mode %s) (commit %s)", c.path, c.toMode, tk.short))
			return nil
		}
		if id, ok := earlier[c.path]; ok && id == c.to {
			again++
			return nil
		}
		// A new file of a kind held in memory, when the store has no room for more
		// unfinished work of that kind, is refused unread: any of them may be unfinished.
		if c.from == "" && c.to != "" {
			room, err := work.room(c.path)
			if err != nil {
				return err
			}
			if !room {
				work.refuse(c.path)
				return nil
			}
			work.reserve(c.path)
		}
		if len(cands) >= MaxRoundFiles {
			work.release(c.from, c.path)
			tk.left++
			return nil
		}
		cands = append(cands, candidate{c.path, [3]string{b.id, c.from, c.to}})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if again > 0 {
		tk.refused = append(tk.refused, fmt.Sprintf("%d path(s) refused by the earlier rounds of this take-in (named there): not read again (commit %s)", again, tk.short))
	}
	// Sizes are known before anything is read: another clone's file over what the store
	// reads (a gigabyte blob is a few megabytes on the remote) is refused, not loaded.
	var want []string
	for _, c := range cands {
		for _, v := range c.ids {
			if v != "" {
				want = append(want, v)
			}
		}
	}
	got, err := g.catSizes(want)
	if err != nil {
		return nil, err
	}
	var taken int64
	for _, c := range cands {
		p := c.path
		var sz [3]int64
		for k, v := range c.ids {
			sz[k] = -1
			if v != "" {
				sz[k], got = got[0], got[1:]
			}
		}
		if limit, what := takeLimit(p); sz[2] > limit {
			work.release(c.ids[1], p)
			tk.refused = append(tk.refused, fmt.Sprintf("%q: %d bytes, over the %d %s: not read (commit %s)", p, sz[2], limit, what, tk.short))
			continue
		}
		if len(tk.paths) > 0 && taken+max(sz[2], 0) > MaxRoundBytes {
			work.release(c.ids[1], p)
			tk.left++
			continue
		}
		if strings.HasSuffix(p, ".jsonl") && sz[2] > int64(filestore.MaxLine()) {
			n, size, err := g.longLineIn(c.ids[2])
			if err != nil {
				return nil, err
			}
			if n > 0 {
				tk.refused = append(tk.refused, fmt.Sprintf("%q: line %d is %d bytes, over the %d a line may have: not taken (commit %s)", p, n, size, filestore.MaxLine(), tk.short))
				continue
			}
		}
		taken += max(sz[2], 0)
		tk.paths = append(tk.paths, p)
		tk.ids = append(tk.ids, c.ids)
		tk.sizes = append(tk.sizes, sz)
	}
	return tk, nil
}

// treeChange is one path that differs between two trees: its object ids and modes on
// each side ("" where the path is not).
type treeChange struct {
	path             string
	from, to         string
	fromMode, toMode string
}

// eachTreeChange calls fn with each file that differs between the trees of from and to,
// recursively, without renames, as git lists them: a diff of a hundred thousand paths
// is read as a stream, never held. An error of fn stops it.
func (c gitCmd) eachTreeChange(from, to string, fn func(treeChange) error) error {
	args := []string{"-C", c.dir, "diff-tree", "-r", "-z", "--no-renames", "--raw", "--abbrev=40", from, to}
	cmd := exec.Command("git", args...)
	cmd.Env = append(cleanEnv(), c.env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		return err
	}
	ferr := func() error {
		r := bufio.NewReaderSize(out, 64<<10)
		for {
			// :<from mode> SP <to mode> SP <from id> SP <to id> SP <status> NUL <path> NUL
			head, err := r.ReadString(0)
			if err == io.EOF && head == "" {
				return nil
			}
			if err != nil {
				return fmt.Errorf("git diff-tree: %w", err)
			}
			p, err := r.ReadString(0)
			if err != nil {
				return fmt.Errorf("git diff-tree: no path after %q", head)
			}
			h := strings.Fields(strings.TrimPrefix(strings.TrimSuffix(head, "\x00"), ":"))
			if len(h) != 5 {
				return fmt.Errorf("git diff-tree: %q", head)
			}
			ch := treeChange{path: strings.TrimSuffix(p, "\x00"), from: h[2], to: h[3], fromMode: h[0], toMode: h[1]}
			if strings.Trim(ch.from, "0") == "" {
				ch.from, ch.fromMode = "", ""
			}
			if strings.Trim(ch.to, "0") == "" {
				ch.to, ch.toMode = "", ""
			}
			if err := fn(ch); err != nil {
				return err
			}
		}
	}()
	if ferr != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return ferr
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("git diff-tree %s %s: %s", from, to, strings.TrimSpace(errb.String()))
	}
	return nil
}

// beforeBatchWrite, if set (by tests), runs between a batch's merge and its write.
var beforeBatchWrite func()

// pending is one path's merge, decided outside the store lock.
type pending struct {
	path                    string
	b, o, t                 object
	data                    []byte
	write, remove, conflict bool
	refuse                  error
}

// takeBatches merges tk's paths in batches and writes each batch through the store, under
// its lock. A file this clone changed since the round's commit (an agent wrote it
// meanwhile) is merged again, under the lock, against what it holds now: nothing written
// here is lost.
func (s *Syncer) takeBatches(g gitCmd, tk *takeIn, origin func(string) filestore.AgentOrigin, work *unfinishedQuota) (merged, conflicts, refused []string, err error) {
	defer func() { refused = append(refused, work.refused(tk.short)...) }()
	for i := 0; i < len(tk.paths); {
		if tk.big(i) {
			ok, left, ref, err := s.takeBig(g, tk, i)
			if err != nil {
				return merged, conflicts, refused, err
			}
			switch {
			case ok:
				merged = append(merged, tk.paths[i])
			case left:
				tk.left++
			case ref != "":
				refused = append(refused, ref)
				tk.refusedRead(tk.paths[i], tk.ids[i][2])
			}
			i++
			continue
		}
		j, size := i, int64(0)
		for j < len(tk.paths) && j-i < batchFiles && !tk.big(j) {
			sz := max(tk.sizes[j][0], 0) + max(tk.sizes[j][1], 0) + max(tk.sizes[j][2], 0)
			if j > i && size+sz > batchBytes {
				break
			}
			size += sz
			j++
		}
		batch := make([]pending, 0, j-i)
		var specs []string
		for _, id := range tk.ids[i:j] {
			for _, v := range id {
				if v != "" {
					specs = append(specs, v)
				}
			}
		}
		objs, err := g.catBatch(specs)
		if err != nil {
			return merged, conflicts, refused, err
		}
		next := func(id string) object {
			if id == "" {
				return object{}
			}
			o := objs[0]
			objs = objs[1:]
			return o
		}
		for k, p := range tk.paths[i:j] {
			id := tk.ids[i+k]
			pd := pending{path: p}
			pd.b, pd.o, pd.t = next(id[0]), next(id[1]), next(id[2])
			if err := pd.decide(g); err != nil {
				return merged, conflicts, refused, err
			}
			if kind, held := heldKind(p); held && pd.o.ok {
				if _, err := work.count(kind); err != nil { // for admit, under the lock
					return merged, conflicts, refused, err
				}
			}
			batch = append(batch, pd)
		}
		objs = nil
		if beforeBatchWrite != nil {
			beforeBatchWrite()
		}
		err = s.Store.Exclusive(func(f *filestore.Files) error {
			f.Origin = origin
			var rels []string
			var datas [][]byte
			var writes []*pending
			for k := range batch {
				pd := &batch[k]
				same, err := f.Holds(pd.path, pd.o.ok, pd.o.data)
				if err != nil {
					refused = append(refused, fmt.Sprintf("%q: %v (commit %s)", pd.path, err, tk.short))
					tk.refusedRead(pd.path, pd.t.id)
					continue
				}
				if !same {
					cur, have, err := f.Read(pd.path)
					if err != nil {
						refused = append(refused, fmt.Sprintf("%q: %v (commit %s)", pd.path, err, tk.short))
						tk.refusedRead(pd.path, pd.t.id)
						continue
					}
					pd.o = object{ok: have, data: cur}
					if err := pd.decide(g); err != nil {
						return err
					}
				}
				switch {
				case pd.refuse != nil:
					refused = append(refused, fmt.Sprintf("%q: %v; this clone keeps its own (commit %s)", pd.path, pd.refuse, tk.short))
					tk.refusedRead(pd.path, pd.t.id)
				case !work.admit(pd):
					// over MaxUnfinished: named once for the round (unfinishedQuota.refused)
					tk.refusedRead(pd.path, pd.t.id)
				case pd.remove:
					if err := f.Remove(pd.path); err != nil {
						refused = append(refused, fmt.Sprintf("%q: %v (commit %s)", pd.path, err, tk.short))
						tk.refusedRead(pd.path, pd.t.id)
						continue
					}
					merged = append(merged, pd.path)
				case pd.write:
					rels, datas, writes = append(rels, pd.path), append(datas, pd.data), append(writes, pd)
				}
			}
			for k, err := range f.ReplaceMany(rels, datas) {
				if err != nil {
					// A file where this clone has a directory, say: that path only is not taken.
					refused = append(refused, fmt.Sprintf("%q: %v (commit %s)", rels[k], err, tk.short))
					tk.refusedRead(rels[k], writes[k].t.id)
					continue
				}
				merged = append(merged, rels[k])
				if writes[k].conflict {
					conflicts = append(conflicts, rels[k])
				}
			}
			return nil
		})
		if err != nil {
			return merged, conflicts, refused, err
		}
		i = j
	}
	return merged, conflicts, refused, nil
}

// decide merges the path's three versions (merge3). Another clone's version taken as it
// is must decode: one that does not is refused (refuse), and this clone keeps its own.
func (pd *pending) decide(g gitCmd) error {
	data, write, remove, conflict, err := merge3(g, pd.path, pd.b, pd.o, pd.t)
	if err != nil {
		return fmt.Errorf("merge %s/%s: %w", filestore.DirName, pd.path, err)
	}
	pd.data, pd.write, pd.remove, pd.conflict, pd.refuse = data, write, remove, conflict, nil
	if write && !conflict {
		if kind := filestore.EntityKind(pd.path); kind != "" {
			pd.refuse = merge.CheckEntity(kind, data)
		}
	}
	return nil
}

// longLineIn is overLongLine of the blob id, read as a stream: a line of hundreds of
// megabytes is measured, never held, and the rest of the blob is not read.
func (c gitCmd) longLineIn(id string) (n, size int, err error) {
	limit := filestore.MaxLine()
	err = c.streamBlob(id, func(r io.Reader) error {
		buf := make([]byte, 64<<10)
		line, cur := 1, 0
		for {
			k, rerr := r.Read(buf)
			for data := buf[:k]; len(data) > 0; {
				i := bytes.IndexByte(data, '\n')
				if i < 0 {
					cur += len(data)
					break
				}
				if cur += i; cur > limit {
					n, size = line, cur
					return nil
				}
				line, cur, data = line+1, 0, data[i+1:]
			}
			if rerr == io.EOF {
				if cur > limit { // a torn last line counts too
					n, size = line, cur
				}
				return nil
			}
			if rerr != nil {
				return rerr
			}
		}
	})
	return n, size, err
}

// jsonlHeadroom is what a log taken from another clone leaves below the store's limit
// for this clone's own lines: a log pushed to just under the limit would otherwise be
// pushed over it by this clone's next message, and a log over the limit is refused by
// every reader — that agent's mailbox, and `aipm status`, would stop.
const jsonlHeadroom = 16 << 20

// jsonlTakeLimit is the largest log a round takes from another clone.
var jsonlTakeLimit int64 = filestore.MaxJSONLFile - jsonlHeadroom

// takeLimit is the largest file at p a clone takes from another, and what it is.
func takeLimit(p string) (limit int64, what string) {
	if strings.HasSuffix(p, ".jsonl") {
		return jsonlTakeLimit, fmt.Sprintf("a log from another clone may have (its limit less %d MiB left for this clone's own lines)", jsonlHeadroom>>20)
	}
	return filestore.MaxEntityFile, "such a file may have"
}

// regularFile reports whether a tree entry's mode is a file's (executable or not).
func regularFile(mode string) bool { return mode == "100644" || mode == "100755" }

// jsonlInMemory is the size of a JSONL file's two sides over which its merge is streamed
// (takeBig) instead of held: a mailbox of hundreds of megabytes costs a round a few.
var jsonlInMemory int64 = 8 << 20

// tailKeep is how much of the end of this clone's version a streamed merge keeps, to see
// under the lock that the file still begins with that version (an append-only log).
const tailKeep = 64 << 10

// big says whether the path at k is merged as a stream.
func (tk *takeIn) big(k int) bool {
	return strings.HasSuffix(tk.paths[k], ".jsonl") && max(tk.sizes[k][1], 0)+max(tk.sizes[k][2], 0) > jsonlInMemory
}

// takeBig merges a JSONL file too large to hold, as a stream into a temp file, outside
// the store lock: theirs as it is when this clone had not changed the file since the
// base, else the base (which both sides begin with: they only append) followed by
// merge.Tails of what each side appended. Under the lock it checks that the file still
// ends this clone's version where it did, carries over what this clone appended since,
// and puts the result in place. left is true when the file was changed here otherwise
// (the next round takes it again); refused names a file whose sides did not only append.
func (s *Syncer) takeBig(g gitCmd, tk *takeIn, k int) (merged, left bool, refused string, err error) {
	p, id, sz := tk.paths[k], tk.ids[k], tk.sizes[k]
	b, o, t := id[0], id[1], id[2]
	sb, so := max(sz[0], 0), max(sz[1], 0)
	var oTail []byte
	if o != "" {
		if oTail, err = g.blobTail(o, tailKeep); err != nil {
			return false, false, "", err
		}
	}
	if t == "" { // theirs removed it: so does this clone, if it had not changed it since
		if o == "" || o != b {
			return false, false, "", nil
		}
		err = s.Store.Exclusive(func(f *filestore.Files) error {
			var extra countWriter
			same, err := f.Extends(p, so, oTail, &extra)
			if err != nil || !same || extra > 0 {
				return err // changed here since: this clone's version stands
			}
			merged = true
			return f.Remove(p)
		})
		return merged, left, "", err
	}
	both := o != "" && o != b
	if both {
		for _, side := range []string{o, t} {
			ok, err := g.blobStartsWith(side, b, sb)
			if err != nil {
				return false, false, "", err
			}
			if !ok {
				return false, false, fmt.Sprintf("%q: both clones changed it, not only by appending, and it is over the %d MiB a merge holds in memory: not taken (commit %s)",
					p, jsonlInMemory>>20, tk.short), nil
			}
		}
	}
	tmp, err := s.Store.TempFile()
	if err != nil {
		return false, false, "", err
	}
	name := tmp.Name()
	defer os.Remove(name) // gone once installed; removed if not
	w := bufio.NewWriterSize(tmp, 256<<10)
	if !both {
		err = g.streamBlob(t, func(r io.Reader) error { _, err := io.Copy(w, r); return err })
	} else {
		var ours []byte
		err = g.streamBlob(o, func(r io.Reader) error {
			if _, err := io.CopyN(w, r, sb); err != nil {
				return err
			}
			ours, err = io.ReadAll(r)
			return err
		})
		if err == nil {
			err = g.streamBlob(t, func(r io.Reader) error {
				if _, err := io.CopyN(io.Discard, r, sb); err != nil {
					return err
				}
				return merge.Tails(p, ours, r, w, filestore.MaxLine())
			})
		}
	}
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, false, "", fmt.Errorf("merge %s/%s: %w", filestore.DirName, p, err)
	}
	if beforeBatchWrite != nil {
		beforeBatchWrite()
	}
	err = s.Store.Exclusive(func(f *filestore.Files) error {
		out, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		same, err := f.Extends(p, so, oTail, out)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil || !same {
			left = err == nil
			return err
		}
		if err := f.Install(p, name); err != nil {
			refused = fmt.Sprintf("%q: %v (commit %s)", p, err, tk.short)
			return nil
		}
		merged = true
		return nil
	})
	return merged, left, refused, err
}

type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }

// streamBlob runs fn on the content of the blob id, read as a stream: under
// core.bigFileThreshold git streams a blob instead of inflating it whole. What fn leaves
// unread is not read: git is stopped.
func (c gitCmd) streamBlob(id string, fn func(io.Reader) error) error {
	cmd := exec.Command("git", "-C", c.dir, "-c", "core.bigFileThreshold=1m", "cat-file", "blob", id)
	cmd.Env = append(cleanEnv(), c.env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		return err
	}
	ferr := fn(out)
	var one [1]byte
	if k, _ := out.Read(one[:]); k > 0 {
		// fn stopped before the end: the rest is not read.
		cmd.Process.Kill()
		cmd.Wait()
		return ferr
	}
	werr := cmd.Wait()
	if ferr != nil {
		return ferr
	}
	if werr != nil {
		return fmt.Errorf("git cat-file blob %s: %s", id, strings.TrimSpace(errb.String()))
	}
	return nil
}

// blobTail is the last n bytes of the blob id (all of it when shorter), read as a stream.
func (c gitCmd) blobTail(id string, n int) ([]byte, error) {
	ring := make([]byte, 0, 2*n)
	err := c.streamBlob(id, func(r io.Reader) error {
		buf := make([]byte, 64<<10)
		for {
			k, err := r.Read(buf)
			ring = append(ring, buf[:k]...)
			if len(ring) > n {
				ring = append(ring[:0], ring[len(ring)-n:]...)
			}
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
		}
	})
	return ring, err
}

// blobStartsWith says whether the blob id begins with the size bytes of the blob prefix
// ("" and 0: the empty file, which every file begins with), both read as streams.
func (c gitCmd) blobStartsWith(id, prefix string, size int64) (bool, error) {
	if prefix == "" || size == 0 {
		return true, nil
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := c.streamBlob(prefix, func(r io.Reader) error { _, err := io.Copy(pw, r); return err })
		pw.CloseWithError(err)
		done <- err
	}()
	same := true
	err := c.streamBlob(id, func(r io.Reader) error {
		a, b := make([]byte, 64<<10), make([]byte, 64<<10)
		for left := size; left > 0; {
			n := int(min(int64(len(a)), left))
			if _, err := io.ReadFull(pr, a[:n]); err != nil {
				return err
			}
			if _, err := io.ReadFull(r, b[:n]); err != nil {
				same = false // shorter than the prefix
				return nil
			}
			if !bytes.Equal(a[:n], b[:n]) {
				same = false
				return nil
			}
			left -= int64(n)
		}
		return nil
	})
	pr.CloseWithError(io.ErrClosedPipe)
	if perr := <-done; err == nil && perr != nil && perr != io.ErrClosedPipe && !strings.Contains(perr.Error(), "closed pipe") {
		err = perr
	}
	return same, err
}

// unfinishedQuota keeps a round within MaxUnfinished. For each kind of entity held in
// memory it knows how much unfinished work the store holds (counted from its index when
// the round first meets a file of that kind) as the round's writes change it, and how
// many new files the round's plan let in. A new file counts as unfinished work from the
// plan on, before it is read; a file this clone has is counted once its merge is known.
type unfinishedQuota struct {
	s        *filestore.Store
	have     map[string]int
	reserved map[string]int
	over     map[string][]string // the first refused paths of each kind
	nover    map[string]int      // how many
}

// heldKind reports whether p is the file of an entity held in memory while unfinished.
func heldKind(p string) (string, bool) {
	kind := filestore.EntityKind(p)
	return kind, kind == filestore.KindTask || kind == filestore.KindConversation || kind == filestore.KindDelegation
}

// count reads, once a round, how many unfinished entities of kind the store holds.
func (q *unfinishedQuota) count(kind string) (int, error) {
	if n, ok := q.have[kind]; ok {
		return n, nil
	}
	n, err := q.s.UnfinishedCount(kind)
	if err != nil {
		return 0, err
	}
	if q.have == nil {
		q.have, q.reserved, q.over, q.nover = map[string]int{}, map[string]int{}, map[string][]string{}, map[string]int{}
	}
	q.have[kind] = n
	return n, nil
}

// room reports whether the store has room for one more unfinished entity of p's kind
// (always, for a file of another kind).
func (q *unfinishedQuota) room(p string) (bool, error) {
	kind, held := heldKind(p)
	if !held {
		return true, nil
	}
	n, err := q.count(kind)
	return n+q.reserved[kind] < MaxUnfinished, err
}

// reserve counts the new file p, which the round takes, as unfinished work.
func (q *unfinishedQuota) reserve(p string) {
	if kind, held := heldKind(p); held {
		q.reserved[kind]++
	}
}

// release gives back the room reserve counted for p, a new file (ours: "") the round
// does not take after all.
func (q *unfinishedQuota) release(ours, p string) {
	if kind, held := heldKind(p); held && ours == "" && q.reserved[kind] > 0 {
		q.reserved[kind]--
	}
}

func (q *unfinishedQuota) refuse(p string) {
	kind, _ := heldKind(p)
	if q.nover[kind]++; len(q.over[kind]) < 3 {
		q.over[kind] = append(q.over[kind], p)
	}
}

// admit reports whether pd's change may be made: false when it would reopen work (a
// finished entity of this clone made unfinished) in a store with no room for it. What
// it lets through is counted.
func (q *unfinishedQuota) admit(pd *pending) bool {
	kind, held := heldKind(pd.path)
	n, ok := q.have[kind]
	if !held || !ok || !pd.o.ok || !pd.write && !pd.remove {
		return true // a new file was counted by the plan
	}
	before := filestore.Unfinished(kind, pd.o.data)
	after := pd.write && filestore.Unfinished(kind, pd.data)
	switch {
	case before == after:
	case after && n+q.reserved[kind] >= MaxUnfinished:
		q.refuse(pd.path)
		return false
	case after:
		q.have[kind] = n + 1
	default:
		q.have[kind] = n - 1
	}
	return true
}

// refused names, in a line for each kind, what the round refused for want of room.
func (q *unfinishedQuota) refused(commit string) []string {
	var out []string
	for _, kind := range []string{filestore.KindTask, filestore.KindConversation, filestore.KindDelegation} {
		n := q.nover[kind]
		if n == 0 {
			continue
		}
		names := make([]string, 0, 4)
		for _, p := range q.over[kind] {
			names = append(names, strconv.Quote(p))
		}
		if n > len(names) {
			names = append(names, fmt.Sprintf("and %d more", n-len(names)))
		}
		out = append(out, fmt.Sprintf("%s: %d %s file(s) that would bring this machine over the %d unfinished %ss another clone may bring it to (each process holds unfinished work in memory: finish or cancel some): not taken, and left out of what this clone pushes, so the clone that made them drops them too (the branch's history keeps them) (commit %s)",
			strings.Join(names, ", "), n, kind, MaxUnfinished, kind, commit))
	}
	return out
}
