package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
)

// The change journal, runtime/journal/changes.log: every write through aipm, by any
// process, appends the path it replaced (and, for an entity, what the write left), under
// the store lock, right after the rename; every process reads on from where it last
// looked and re-checks exactly those paths in its caches.

// journalMax is the size past which the writer that finds the journal larger starts a new
// one; readers that see a new journal re-check every cached file by identity.
const journalMax = 16 << 20

// journal is the process's position in runtime/journal/changes.log.
type journal struct {
	mu sync.Mutex
	// f is the journal file of ino, kept open between looks.
	f *os.File
	// w is the journal file of inode wino, open for appending (append, under wmu).
	wmu     sync.Mutex
	w       *os.File
	wino    uint64
	ino     uint64
	off     int64
	started bool
	watched bool
	// buf is the read buffer of the looks, kept for the next one when small.
	buf []byte
}

// JournalPos is a position in the journal: every line before off of the journal file ino.
type JournalPos struct {
	Ino uint64
	Off int64
}

// journalChunk is the most of the journal's growth read at once (see PullJournal).
const journalChunk = 1 << 20

// journalBufKeep is the largest read buffer a store keeps between looks of the journal:
// the lines of a few dozen writes.
const journalBufKeep = 16 << 10

// JournalDir holds the change journal and the record of a send under way: files written
// on every write, which no reader waits on, so no watcher watches the directory
// (UnwatchedDirs). Beside runtime/'s other files, each line appended would wake every
// watching process of the team.
const JournalDir = "runtime/journal"

// JournalPath is the change journal's path relative to .ai-pm.
const JournalPath = JournalDir + "/changes.log"

func (d *Dir) JournalFile() string { return d.Path(JournalPath) }

// DirBefore is the identity of the directory of rel (a path under .ai-pm) before a write
// into it; the caller holds the store lock and passes it to NoteWrite after the write.
func (d *Dir) DirBefore(rel string) Stamp {
	fi, err := os.Lstat(d.Path(path.Dir(rel)))
	if err != nil {
		return Stamp{}
	}
	return DirStamp(fi)
}

// NoteWrite appends rel (a path under .ai-pm) to the change journal, with the
// modification time its directory had before the write (before, from dirBefore; zero when
// unknown) and has after it, so that a reader can tell whether anything but writes
// through aipm changed the directory in between (cacheEntry, checkLocked). The caller holds
// the store lock and has just replaced the file. A journal that cannot be written costs
// other processes freshness only until their watcher reports the file, so it is not an
// error of the write.
func (d *Dir) NoteWrite(rel string, before ...Stamp) {
	d.noteWriteKnown(rel, "", before...)
}

// noteWriteKnown is NoteWrite with, for an entity, what the write left (known, from
// written): the file's identity and its index keys. It is written only with the
// directory's times.
func (d *Dir) noteWriteKnown(rel, known string, before ...Stamp) {
	line := rel
	if len(before) > 0 { // before is zero when the directory did not exist
		if fi, err := os.Lstat(d.Path(path.Dir(rel))); err == nil {
			line += "\t" + strconv.FormatInt(before[0].Mtime, 10) + "\t" + strconv.FormatInt(fi.ModTime().UnixNano(), 10)
			if known != "" {
				line += "\t" + known
			}
		}
	}
	d.journal.append(d.JournalFile(), line+"\n")
}

// append writes one line at the end of the journal at p, starting it anew past
// journalMax. The file is kept open while the path names it; the caller holds the store
// lock, which orders the writers.
func (j *journal) append(p, line string) {
	j.wmu.Lock()
	defer j.wmu.Unlock()
	fi, err := os.Lstat(p)
	if err == nil && fi.Size() > journalMax {
		WriteAtomic(p, nil, 0o644)
		fi, err = os.Lstat(p)
	}
	if j.w != nil && (err != nil || !fi.Mode().IsRegular() || FileIno(fi) != j.wino) {
		j.w.Close()
		j.w = nil
	}
	if j.w == nil {
		f, err := Open(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644, 0)
		if err != nil {
			return
		}
		ofi, err := f.Stat()
		if err != nil {
			f.Close()
			return
		}
		j.w, j.wino = f, FileIno(ofi)
	}
	j.w.WriteString(line)
}

// JournalLine is one line of the change journal (noteWriteKnown): the path written; the
// modification times of its directory before and after the write (timed); and, for an
// entity, the identity its file was given and the index keys of what it holds (keys nil
// when the line does not say).
type JournalLine struct {
	Rel           string
	Before, After int64
	Timed         bool
	st            Stamp
	keys          []string
}

func ParseJournalLine(line string) JournalLine {
	rel, rest, _ := strings.Cut(line, "\t")
	l := JournalLine{Rel: rel}
	if rest == "" {
		return l
	}
	fs := strings.Split(rest, "\t")
	var err1, err2 error
	l.Before, err1 = strconv.ParseInt(fs[0], 10, 64)
	if len(fs) > 1 {
		l.After, err2 = strconv.ParseInt(fs[1], 10, 64)
	}
	l.Timed = len(fs) > 1 && err1 == nil && err2 == nil
	if !l.Timed || len(fs) != 7 {
		return l
	}
	var st Stamp
	var err [4]error
	st.Ino, err[0] = strconv.ParseUint(fs[2], 10, 64)
	st.Size, err[1] = strconv.ParseInt(fs[3], 10, 64)
	st.Mtime, err[2] = strconv.ParseInt(fs[4], 10, 64)
	st.Ctime, err[3] = strconv.ParseInt(fs[5], 10, 64)
	keys, ok := ParseJournalKeys(fs[6])
	if errors.Join(err[:]...) != nil || !ok {
		return l
	}
	l.st, l.keys = st, keys
	return l
}

// ParseJournalKeys reads the index keys of a journal line: a JSON array of strings, as
// json.Marshal wrote it. Every process reads every line another one writes, and a process
// that starts reads all those since its index file was saved, so the usual form (printable
// ASCII, no space, no escape) is cut apart here; anything else is left to encoding/json.
// ok is false when it is not an array of strings.
func ParseJournalKeys(s string) (keys []string, ok bool) {
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
		return parseJournalKeysJSON(s)
	}
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '\\' {
			return parseJournalKeysJSON(s)
		}
	}
	body := s[1 : len(s)-1]
	keys = make([]string, 0, strings.Count(body, ",")+1)
	for body != "" {
		if body[0] != '"' {
			return parseJournalKeysJSON(s)
		}
		end := strings.IndexByte(body[1:], '"')
		if end < 0 {
			return parseJournalKeysJSON(s)
		}
		keys = append(keys, body[1:1+end])
		body = body[2+end:]
		if body == "" {
			break
		}
		if body[0] != ',' || len(body) == 1 {
			return parseJournalKeysJSON(s)
		}
		body = body[1:]
	}
	return keys, true
}

func parseJournalKeysJSON(s string) ([]string, bool) {
	var keys []string
	if json.Unmarshal([]byte(s), &keys) != nil || keys == nil {
		return nil, false
	}
	return keys, true
}

// PullJournal reads what other writers appended to the journal since the last look and
// marks those paths in the caches. A journal that was started anew marks everything. It
// returns the position read to.
func (d *Dir) PullJournal() JournalPos {
	j := &d.journal
	j.mu.Lock()
	defer j.mu.Unlock()
	// Most looks find nothing new: a stat says so for a fraction of an open and a read.
	lst, regular, lerr := LstatStamp(d.JournalFile())
	if j.started && lerr == nil && regular && lst.Ino == j.ino && lst.Size == j.off {
		return JournalPos{j.ino, j.off}
	}
	// The journal grew: read on from the file kept open, while the path still names it.
	if j.f != nil && lerr == nil && regular && lst.Ino == j.ino && lst.Size > j.off {
		return d.readJournalLocked(j.f, lst.Size)
	}
	if j.f != nil {
		j.f.Close()
		j.f = nil
	}
	f, err := OpenRead(d.JournalFile(), 0)
	if err != nil {
		if !j.started {
			j.started = true
		}
		if j.off > 0 || j.ino != 0 {
			j.off, j.ino = 0, 0
			d.markAll()
		}
		return JournalPos{}
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return JournalPos{j.ino, j.off}
	}
	j.f = f
	ino := FileIno(fi)
	if !j.started {
		// Everything before now is covered by the first read of each cache (from the
		// files, or from its index file and the journal since: loadIndexLocked).
		j.started, j.ino, j.off = true, ino, fi.Size()
		return JournalPos{j.ino, j.off}
	}
	if ino != j.ino || fi.Size() < j.off {
		j.ino, j.off = ino, 0
		d.markAll()
	}
	return d.readJournalLocked(f, fi.Size())
}

// readJournalLocked reads the journal f (size: its size now) on from the position of
// the last look, and marks what it names.
func (d *Dir) readJournalLocked(f *os.File, size int64) JournalPos {
	j := &d.journal
	if size == j.off {
		return JournalPos{j.ino, j.off}
	}
	if size-j.off > journalChunk {
		// More than a chunk since the last look (a burst of writes, or a file grown by
		// hand: a sparse file of gigabytes): reading it would cost memory and time in
		// proportion, while comparing every cached file costs what the store holds. So
		// the caches are rescanned and the journal is followed from its end.
		j.off = size
		d.markAll()
		return JournalPos{j.ino, j.off}
	}
	want := int(size - j.off)
	if cap(j.buf) < want {
		j.buf = make([]byte, want)
	}
	buf := j.buf[:want]
	if cap(j.buf) > journalBufKeep {
		j.buf = nil // a burst's buffer is not kept
	}
	n, err := f.ReadAt(buf, j.off)
	if err != nil && !errors.Is(err, io.EOF) {
		return JournalPos{j.ino, j.off}
	}
	buf = buf[:n]
	end := bytes.LastIndexByte(buf, '\n')
	if end < 0 {
		return JournalPos{j.ino, j.off}
	}
	for rest := buf[:end+1]; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		d.markJournalLine(string(rest[:i]), j.watched)
		rest = rest[i+1:]
	}
	j.off += int64(end + 1)
	return JournalPos{j.ino, j.off}
}

// markJournalLine marks the path of one journal line, or tells its cache what the write
// left (know), and follows its directory's modification times.
func (d *Dir) markJournalLine(line string, watched bool) {
	l := ParseJournalLine(line)
	if l.keys == nil || !d.knowPath(l) {
		d.MarkPath(l.Rel)
	}
	dir, _, _ := strings.Cut(l.Rel, "/")
	{
		if d.OnJournal != nil {
			d.OnJournal(l.Rel, l.Before, l.After, l.Timed)
		}
	}
	for _, c := range d.caches() {
		if c.dirName() == dir {
			c.follow(l.Before, l.After, l.Timed, watched)
		}
	}
}

// knowPath hands a journal line that says what a write left to the cache of its
// directory; false when no cache takes it.
func (d *Dir) knowPath(l JournalLine) bool {
	dir, name, ok := strings.Cut(l.Rel, "/")
	if !ok {
		return false
	}
	id, ok := strings.CutSuffix(name, ".json")
	if !ok {
		return false
	}
	for _, c := range d.caches() {
		if c.dirName() == dir && !c.nested() {
			return c.know(id, l.st, l.keys)
		}
	}
	return false
}
