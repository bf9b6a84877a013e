package gitstate

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// stageOutside is the size over which a changed log is staged outside the store lock. To
// stage a file Git hashes and deflates the whole of it: for a mailbox of hundreds of
// megabytes, seconds during which no agent of the machine could write.
var stageOutside int64 = 8 << 20

// heldLog is a large log held open as the store lock found it: its first n bytes are what
// the commit takes. A log is only appended to, so those bytes stand still once the lock is
// released; a file replaced meanwhile (renamed over) leaves the held one as it was.
type heldLog struct {
	rel string
	f   *os.File
	n   int64
}

type heldLogs []heldLog

// stageLocked stages every change of the working copy as it stands now, while the caller
// holds the store lock: the files by `git add`, except the large logs that changed, which
// it holds (heldLogs.stage stages them once the lock is released). also names more paths
// that may be such logs although Git does not know them yet (a log a round installed).
func stageLocked(g gitCmd, also ...string) (heldLogs, error) {
	big, err := bigChangedLogs(g, also)
	if err != nil {
		return nil, err
	}
	var held heldLogs
	args := []string{"add", "-A", "--", "."}
	for _, rel := range big {
		if h, ok := holdLog(g.dir, rel); ok {
			held = append(held, h)
			args = append(args, ":(exclude,literal)"+rel)
		}
	}
	if _, err := g.run(args...); err != nil {
		held.close()
		return nil, err
	}
	return held, nil
}

// bigChangedLogs lists the JSONL files over stageOutside that differ from the index by
// their stat: `git diff-files` reads no file's content to tell.
func bigChangedLogs(g gitCmd, also []string) ([]string, error) {
	out, err := g.raw("diff-files", "--name-only", "-z", "--", "*.jsonl")
	if err != nil {
		return nil, err
	}
	var big []string
	seen := map[string]bool{}
	for _, rel := range append(strings.Split(string(out), "\x00"), also...) {
		if rel == "" || seen[rel] || !strings.HasSuffix(rel, ".jsonl") {
			continue
		}
		seen[rel] = true
		fi, err := os.Lstat(filepath.Join(g.dir, filepath.FromSlash(rel)))
		if err == nil && fi.Mode().IsRegular() && fi.Size() > stageOutside {
			big = append(big, rel)
		}
	}
	return big, nil
}

// holdLog opens the log at rel and takes its size; false when it does not end with a
// whole line (a write cut short), which `git add` then stages under the lock as before.
func holdLog(dir, rel string) (heldLog, bool) {
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		return heldLog{}, false
	}
	fi, err := f.Stat()
	last := make([]byte, 1)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() == 0 {
		f.Close()
		return heldLog{}, false
	}
	if _, err := f.ReadAt(last, fi.Size()-1); err != nil || last[0] != '\n' {
		f.Close()
		return heldLog{}, false
	}
	return heldLog{rel: rel, f: f, n: fi.Size()}, true
}

// stage stages the held logs, outside the store lock: each one's first n bytes are copied
// to a temporary file of the store (tmp; within one file system the copy is the
// kernel's), which Git hashes and writes as a stream (core.bigFileThreshold), and the
// index is pointed at the result. It closes the logs.
func (h heldLogs) stage(g gitCmd, tmp func() (*os.File, error)) error {
	defer h.close()
	var info strings.Builder
	for _, l := range h {
		id, err := hashPrefix(g, l, tmp)
		if err != nil {
			return err
		}
		fmt.Fprintf(&info, "100644 %s\t%s\x00", id, l.rel)
	}
	if info.Len() == 0 {
		return nil
	}
	g.stdin = []byte(info.String())
	if _, err := g.run("update-index", "-z", "--index-info"); err != nil {
		return err
	}
	// The index learns the logs' stat where they still hold what was staged (Git hashes
	// them to tell, as a stream), so that the next round holds only a log that changed
	// again. Its exit status says whether some file changed meanwhile: that is for the
	// next round. A log written to since (most, while agents talk) is not hashed for
	// nothing.
	if slices.ContainsFunc(h, func(l heldLog) bool {
		fi, err := os.Lstat(filepath.Join(g.dir, filepath.FromSlash(l.rel)))
		return err == nil && fi.Size() == l.n
	}) {
		g.stdin = nil
		g.ok("-c", "core.bigFileThreshold=1m", "update-index", "-q", "--refresh")
	}
	return nil
}

func hashPrefix(g gitCmd, l heldLog, tmp func() (*os.File, error)) (string, error) {
	t, err := tmp()
	if err != nil {
		return "", err
	}
	defer os.Remove(t.Name())
	if _, err := l.f.Seek(0, io.SeekStart); err != nil {
		t.Close()
		return "", err
	}
	_, err = io.CopyN(t, l.f, l.n)
	if cerr := t.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("copying %s to stage it: %w", l.rel, err)
	}
	return g.run("-c", "core.bigFileThreshold=1m", "hash-object", "-w", "--path="+l.rel, t.Name())
}

func (h heldLogs) close() {
	for _, l := range h {
		l.f.Close()
	}
}

// commitStaged commits what is staged, as a child of HEAD; false when nothing is. It
// reads the index only, never the working copy, so it needs no lock of the store: it
// commits the files as stageLocked found them.
func commitStaged(g gitCmd, trailers string, sign signOpts) (bool, error) {
	staged, err := g.run("diff", "--cached", "--name-only", "-z")
	if err != nil || staged == "" {
		return false, err
	}
	n := len(strings.Split(strings.TrimRight(staged, "\x00"), "\x00"))
	msg := fmt.Sprintf("aipm: %d file(s) changed", n)
	if host, _ := os.Hostname(); host != "" {
		msg += " on " + host
	}
	msg += trailers
	head, err := g.run("rev-parse", "--verify", "HEAD")
	if err != nil {
		return false, err
	}
	tree, err := g.run("write-tree")
	if err != nil {
		return false, err
	}
	args, err := sign.cmd("commit-tree")
	if err != nil {
		return false, err
	}
	c, err := g.run(append(args, tree, "-p", head, "-m", msg)...)
	if err != nil {
		return false, err
	}
	_, err = g.run("update-ref", "-m", "aipm sync: "+firstLine(msg), "HEAD", c, head)
	return err == nil, err
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
