package filestore

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// seqFile is where a mint leaves what it knew of the sequence numbers in tasks/ for the
// next process: the highest, the directory identity that accounts for, and the journal
// position it is as of. A one-shot `aipm task add` then takes the next number from it and
// the journal lines written since, instead of loading the index of every task or listing
// tasks/: creating a task costs what writing its file and its history line costs, at any
// project size. It is a cache like the index files beside it: anything it cannot vouch for
// (another journal, more lines than a little, a change beside aipm) falls back to those.
const seqFile = IndexDir + "/tasks.seq"

// seqFileMaxReplay is the most of the journal a process reads to bring the file up to
// date: beyond it, the usual ways cost less.
const seqFileMaxReplay = 1 << 20

// saveSeq writes what s.seq knows, as of journal position pos. The caller holds the store
// lock, so no write through aipm comes between pos and the file; the file is written
// without a sync or a rename (readers and writers hold the lock; a torn line lacks its
// newline and is not used).
func (s *Store) saveSeq(pos journalPos) {
	q := &s.seq
	q.mu.Lock()
	hi, at, ok := q.hi, q.at, q.ok
	q.mu.Unlock()
	if !ok || pos.ino == 0 {
		return
	}
	line := fmt.Sprintf("seq1\t%d\t%d\t%d\t%d\t%d\n", hi, at.Ino, at.Mtime, pos.ino, pos.off)
	if err := ensureDir(s.path(IndexDir)); err != nil {
		return
	}
	os.WriteFile(s.path(seqFile), []byte(line), 0o600) // a cache: a failed write costs the next process a listing
}

// seqFromFile seeds s.seq from seqFile and the journal lines written after it, up to pos
// (where this process reads the journal on); true when it could. The caller holds the
// store lock.
func (s *Store) seqFromFile(pos journalPos) bool {
	data, err := readFileSafe(s.path(seqFile), 256)
	if err != nil || len(data) == 0 || data[len(data)-1] != '\n' {
		return false
	}
	fs := strings.Split(strings.TrimSuffix(string(data), "\n"), "\t")
	if len(fs) != 6 || fs[0] != "seq1" {
		return false
	}
	var n [5]int64
	for i := range n {
		if n[i], err = strconv.ParseInt(fs[i+1], 10, 64); err != nil || n[i] < 0 {
			return false
		}
	}
	hi, at, from := int(n[0]), Stamp{Ino: uint64(n[1]), Mtime: n[2]}, journalPos{ino: uint64(n[3]), off: n[4]}
	if from.ino != pos.ino || from.off > pos.off || pos.off-from.off > seqFileMaxReplay {
		return false
	}
	since, err := readJournalRange(s.eng.journalPath(), from.off, pos.off)
	// Whole lines up to pos (a line is appended under the lock, so the last one is whole).
	if err != nil || pos.off > from.off && int64(len(since))+1 != pos.off-from.off {
		return false
	}
	// The same rule as seqState.journaled: each write to tasks/ through aipm moves the
	// directory's time from the one accounted for; anything else is a change beside aipm.
	for _, line := range strings.Split(string(since), "\n") {
		if !strings.HasPrefix(line, "tasks/") {
			continue
		}
		l := parseJournalLine(line)
		hi = max(hi, taskSeq(strings.TrimPrefix(l.rel, "tasks/")))
		if !l.timed || l.before != at.Mtime && l.after != at.Mtime {
			return false
		}
		at.Mtime = l.after
	}
	q := &s.seq
	q.mu.Lock()
	q.hi, q.at, q.ok = hi, at, true
	q.mu.Unlock()
	return true
}

// hasSeqFile tells whether a mint left seqFile: a one-shot command creating a task then
// need not load the tasks' index first (CreateTask).
func (s *Store) hasSeqFile() bool {
	_, err := os.Lstat(s.path(seqFile))
	return err == nil
}
