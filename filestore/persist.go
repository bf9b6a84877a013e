package filestore

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The index files: a copy of a directory cache (cache.go) kept in runtime/index/<dir>.idx,
// machine-local like the rest of runtime/, so that a process starts from it instead of
// reading every file of a directory that holds the project's whole history, and holds
// only what it uses. It is only a cache of a cache: whenever it cannot be trusted —
// another format, a checksum that does not match (truncated, edited by hand), another
// directory (a copied clone), a journal that no longer reaches back to it — the directory
// is compared with it file by file, and whatever it says is checked against the files
// before it is used:
//
//   - the journal lines written since the index was (runtime/journal/changes.log) name the files
//     changed through aipm, which are re-checked; each also carries its directory's
//     modification time before and after the write, so a change made beside aipm (a file
//     created, removed or renamed by hand or by git) shows as a directory whose
//     modification time the journal does not account for, and the directory is then
//     compared file by file;
//   - the files held in full (unfinished work, unreadable files) are compared by identity;
//     a finished entity's file is compared when it is read.
//
// Cost that does not grow with history: the file has two parts. The live part — the
// entities held in full, unfinished work and unreadable files, few whatever the age of
// the project — is parsed into the cache at start. The cold part — every finished entity
// (a done task, an ended conversation) — is a set of flat arrays (cold.go: ids sorted,
// their identities and keys, and per secondary index the ids under each key in id order)
// that a process reads (but for the entities' identities, read from the file when one is
// compared with its file) and queries where it lies, without building a map or an object
// per entity: opening 100,000 finished tasks costs reading some ten megabytes, not
// parsing them. What changed since the file was written is held in memory and shadows
// the records it replaces; a page of done tasks, a parent's children, a count by status
// read the arrays (and only the page's files).
//
// Format: text lines, then the cold part, then the end line:
//
//	aipm-index <format> <dir>
//	journal <journal inode> <offset> dir <directory inode> <directory mtime ns>
//	live <records> <bytes>
//	<id> <inode> <size> <mtime ns> <ctime ns> f <n> <key>×n <json>   an entity held in full
//	<id> <inode> <size> <mtime ns> <ctime ns> k <n> <key>×n        unfinished, known from the journal
//	<id> <inode> <size> <mtime ns> <ctime ns> x            a file that did not parse
//	cold <bytes>
//	<the cold part, binary (cold.go)>
//	end <crc32 of everything before this line, hex>
//
// Fields are separated by tabs, keys escaped (\\, \t, \n); a live entity's keys are read
// at start, its JSON parsed when it is first asked for. A "k" record is an unfinished
// entity another process wrote since this one last read it: its keys and identity are
// what that write's journal line said, and its file is read when it is first asked for,
// as in the process that wrote the index file. (Reading them all to write their JSON was
// a third of a save while a team writes.) Any process writes the file
// (atomically) after it compared the directory file by file, or when the journal has
// grown well past it, and then holds the file it wrote in place of the finished entities
// it held.

// indexFormat changes whenever the records or the values they hold change meaning.
// (2: a file's identity includes its status change time. 3: finished work in flat
// arrays. 4: "k" records.)
const indexFormat = 4

// indexSaveEvery is how many changed entries make a process bring the index file up to
// date (when the file on disk is that far behind the journal).
const indexSaveEvery = 1024

// indexLag is how far (journal bytes) the index file may lag before a process that has
// changed indexSaveEvery entries writes it again.
const indexLag = 64 << 10

// indexSavePace is how long, per entity it holds, an index file counts as fresh after it
// was written, however far it lags. A save costs time in proportion to the entities
// (about a fifth of a second of CPU at 100,000 tasks, its finished part rebuilt whole),
// and a team writing without pause reaches indexLag
// every half second or so: at this pace the saves of a large store take a few percent of
// one core, not a tenth of all thirty servers' CPU, and the journal a process starting
// meanwhile reads past the file stays a few seconds of writes long.
const indexSavePace = 20 * time.Microsecond

// indexStartGrace is how long after it started from the index file a process does not
// write it, while the journal since the file is shorter than indexStartLag (about a
// thousand writes, a few milliseconds of catching up) (maybeSaveLocked).
const indexStartGrace = time.Second

const indexStartLag = 4 * indexLag

// indexMax is the largest index file read (a million tasks make about 110 MiB).
const indexMax = 1 << 30

var keyEscaper = strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`)
var keyUnescaper = strings.NewReplacer(`\\`, `\`, `\t`, "\t", `\n`, "\n")

// IndexDir is where the index files live, relative to .ai-pm.
const IndexDir = "runtime/index"

func (c *dirCache[T]) indexPath() string { return c.d.path(IndexDir, c.dir+".idx") }

// lockIndex takes the lock of writing the index file, if no other process holds it. A
// lock file that cannot be made (a read-only store) lets the process go on alone, as
// before there was a lock.
func (c *dirCache[T]) lockIndex() (unlock func(), ok bool) {
	p := c.d.path(IndexDir, c.dir+".lock")
	if err := ensureDir(filepath.Dir(p)); err != nil {
		return func() {}, true
	}
	f, err := openSafe(p, os.O_RDWR|os.O_CREATE, 0o644, 0)
	if err != nil {
		return func() {}, true
	}
	release, ok := tryLockFile(f)
	if !ok {
		f.Close()
		return nil, false
	}
	return func() { release(); f.Close() }, true
}

// indexHeader is what the first two lines of an index file say.
type indexHeader struct {
	journal journalPos
	dir     Stamp
	written time.Time // the file's modification time (readIndexHeader)
}

// parseIndex checks an index file whole and returns its header, its live records and its
// cold part.
func parseIndex(data []byte, dir string) (indexHeader, []string, []byte, error) {
	return parseIndexCut(data, dir, 0, false)
}

// parseIndexCut is parseIndex on an index file read without the cut bytes of its cold
// part's identities (readIndexLean), whose checksum the reader checked.
func parseIndexCut(data []byte, dir string, cut int, checked bool) (indexHeader, []string, []byte, error) {
	var h indexHeader
	if !bytes.HasSuffix(data, []byte("\n")) {
		return h, nil, nil, errors.New("truncated")
	}
	i := bytes.LastIndexByte(data[:len(data)-1], '\n')
	if i < 0 {
		return h, nil, nil, errors.New("no end line")
	}
	end := strings.Split(string(data[i+1:len(data)-1]), "\t")
	if len(end) != 2 || end[0] != "end" {
		return h, nil, nil, errors.New("no end line")
	}
	sum, err := strconv.ParseUint(end[1], 16, 32)
	if err != nil || !checked && uint32(sum) != crc32.ChecksumIEEE(data[:i+1]) {
		return h, nil, nil, errors.New("checksum does not match")
	}
	body := data[:i+1]
	line := func() (string, bool) {
		j := bytes.IndexByte(body, '\n')
		if j < 0 || j > 4096 {
			return "", false
		}
		l := string(body[:j])
		body = body[j+1:]
		return l, true
	}
	if l, ok := line(); !ok || l != "aipm-index\t"+strconv.Itoa(indexFormat)+"\t"+dir {
		return h, nil, nil, errors.New("another format or directory")
	}
	l, _ := line()
	f := strings.Split(l, "\t")
	if len(f) != 6 || f[0] != "journal" || f[3] != "dir" {
		return h, nil, nil, errors.New("bad header")
	}
	var nums [4]uint64
	for k, s := range []string{f[1], f[2], f[4], f[5]} {
		if nums[k], err = strconv.ParseUint(s, 10, 64); err != nil {
			return h, nil, nil, errors.New("bad header")
		}
	}
	h.journal = journalPos{ino: nums[0], off: int64(nums[1])}
	h.dir = Stamp{Ino: nums[2], Mtime: int64(nums[3])}
	size := func(prefix string, fields int) []int {
		l, ok := line()
		f := strings.Split(l, "\t")
		if !ok || len(f) != fields+1 || f[0] != prefix {
			return nil
		}
		out := make([]int, fields)
		for k := range out {
			if out[k], err = strconv.Atoi(f[k+1]); err != nil || out[k] < 0 {
				return nil
			}
		}
		return out
	}
	lv := size("live", 2)
	if lv == nil || lv[1] > len(body) {
		return h, nil, nil, errors.New("bad live part")
	}
	var recs []string
	if lv[1] > 0 {
		live := string(body[:lv[1]])
		if !strings.HasSuffix(live, "\n") {
			return h, nil, nil, errors.New("bad live part")
		}
		recs = strings.Split(live[:len(live)-1], "\n")
	}
	if len(recs) != lv[0] {
		return h, nil, nil, errors.New("record count does not match")
	}
	body = body[lv[1]:]
	cd := size("cold", 1)
	if cd == nil || cd[0]-cut+1 != len(body) || body[cd[0]-cut] != '\n' {
		return h, nil, nil, errors.New("bad cold part")
	}
	return h, recs, body[:cd[0]-cut], nil
}

// readIndexLean reads an index file but for the identities of its finished entities (32
// bytes each, a quarter of the file), which stay in the file, read from f at stampsAt
// when an entity is compared with its file; it checks the checksum of the whole file.
// cut is how many bytes were left out (0: the whole file, f nil).
func readIndexLean(p string) (data []byte, f *os.File, stampsAt int64, cut int, err error) {
	f, err = openRead(p, indexMax)
	if err != nil {
		return nil, nil, 0, 0, err
	}
	fail := func(err error) ([]byte, *os.File, int64, int, error) {
		f.Close()
		return nil, nil, 0, 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		return fail(err)
	}
	size := fi.Size()
	if size > indexMax {
		return fail(errors.New("too large"))
	}
	// Where the cold part's identities lie: after the header, the live part, the cold
	// line, and the cold part's counts and id ends.
	line := func(at int64) (string, int64, bool) {
		buf := make([]byte, 256)
		n, _ := f.ReadAt(buf, at)
		i := bytes.IndexByte(buf[:n], '\n')
		if i < 0 {
			return "", 0, false
		}
		return string(buf[:i]), at + int64(i) + 1, true
	}
	at := int64(0)
	var l string
	ok := true
	for range 2 {
		if _, at, ok = line(at); !ok {
			break
		}
	}
	var liveLen, coldLen, n int64
	if ok {
		l, at, ok = line(at)
		fs := strings.Split(l, "\t")
		ok = ok && len(fs) == 3 && fs[0] == "live"
		if ok {
			liveLen, err = strconv.ParseInt(fs[2], 10, 64)
			ok = err == nil && liveLen >= 0
		}
	}
	if ok {
		l, at, ok = line(at + liveLen)
		fs := strings.Split(l, "\t")
		ok = ok && len(fs) == 2 && fs[0] == "cold"
		if ok {
			coldLen, err = strconv.ParseInt(fs[1], 10, 64)
			ok = err == nil && coldLen >= 12
		}
	}
	if ok {
		var cnt [4]byte
		_, err := f.ReadAt(cnt[:], at)
		n = int64(binary.LittleEndian.Uint32(cnt[:]))
		stampsAt = at + 12 + 4*n
		ok = err == nil && stampsAt+32*n <= at+coldLen && at+coldLen < size
	}
	if !ok || n == 0 {
		stampsAt, n = 0, 0 // what is wrong, parseIndex says
	}
	cut = int(32 * n)
	data = make([]byte, size-int64(cut))
	if _, err := f.ReadAt(data[:stampsAt], 0); err != nil && !errors.Is(err, io.EOF) {
		return fail(err)
	}
	if _, err := f.ReadAt(data[stampsAt:], stampsAt+int64(cut)); err != nil && !errors.Is(err, io.EOF) {
		return fail(err)
	}
	if cut == 0 {
		f.Close()
		return data, nil, 0, 0, nil
	}
	// The checksum, over the identities too, read through a small buffer.
	i := bytes.LastIndexByte(data[:len(data)-1], '\n')
	if i < int(stampsAt) {
		return fail(errors.New("no end line"))
	}
	crc := crc32.NewIEEE()
	crc.Write(data[:stampsAt])
	if _, err := io.Copy(crc, io.NewSectionReader(f, stampsAt, int64(cut))); err != nil {
		return fail(err)
	}
	crc.Write(data[stampsAt : i+1])
	if string(data[i+1:]) != "end\t"+strconv.FormatUint(uint64(crc.Sum32()), 16)+"\n" {
		return fail(errors.New("checksum does not match"))
	}
	return data, f, stampsAt, cut, nil
}

// loadIndexLocked fills an empty cache from its index file and applies the journal since,
// and tells whether it did; on false the caller reads the directory. pos is where this
// process has read the journal to.
func (c *dirCache[T]) loadIndexLocked(pos journalPos) (loaded bool) {
	raw, f, stampsAt, cut, err := readIndexLean(c.indexPath())
	if err != nil {
		return false
	}
	if f != nil {
		defer func() {
			if !loaded {
				f.Close()
			}
		}()
	}
	h, recs, coldPart, err := parseIndexCut(raw, c.dir, cut, f != nil)
	if err != nil {
		return false
	}
	var dirIno uint64
	if fi, err := os.Lstat(c.d.path(c.dir)); err == nil {
		dirIno = fileIno(fi)
	}
	if h.dir.Ino != 0 && dirIno != h.dir.Ino {
		return false // another directory: a copied clone, a replaced directory
	}
	// Lines written after the index, up to where this process reads the journal on.
	var since []byte
	switch {
	case pos.off-max(h.journal.off, 0) > journalMax:
		// More than a journal holds since the file (one grown by hand, a sparse file of
		// gigabytes): comparing the files costs less than reading it.
		return false
	case h.journal.ino == pos.ino && h.journal.off <= pos.off:
		since, err = readJournalRange(c.d.journalPath(), h.journal.off, pos.off)
	case h.journal.ino == 0 && pos.ino != 0:
		since, err = readJournalRange(c.d.journalPath(), 0, pos.off) // no journal back then
	default:
		return false // the journal was started anew since: it no longer says what changed
	}
	if err != nil {
		return false
	}
	cold, err := parseCold(coldPart, c.nidx, c.minKeys, f == nil)
	if err != nil {
		return false
	}
	cold.f, cold.stampsAt = f, stampsAt
	ents := make(map[string]*cacheEntry[T], len(recs))
	for _, r := range recs {
		id, e, ok := c.parseRecord(r)
		if !ok {
			return false
		}
		ents[id] = e
	}
	c.ents = make(map[string]*cacheEntry[T], len(ents))
	c.setCold(cold)
	c.reset()
	for id, e := range ents {
		c.ents[id] = e
		c.index(id, nil, e.k)
		if _, dup := cold.find(id); dup { // not what aipm writes
			return false
		}
	}
	c.loaded, c.since, c.rebuilt, c.fromIndex = true, 0, false, true
	c.loadedAt = time.Now()
	at := h.dir
	rescan := false
	prefix := c.dir + "/"
	for _, line := range strings.Split(string(since), "\n") {
		// A line begins with the path it names: the lines of other directories (most of
		// them, for a directory written less often than tasks/) are not parsed.
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		l := parseJournalLine(line)
		dir, name, ok := strings.Cut(l.rel, "/")
		if !ok || dir != c.dir {
			continue
		}
		if id, ok := strings.CutSuffix(name, ".json"); ok && (l.keys == nil || !c.know(id, l.st, l.keys)) {
			c.mark(id)
		}
		if !l.timed || l.before != at.Mtime && l.after != at.Mtime {
			rescan = true
		}
		at.Mtime = l.after
	}
	if at.Ino == 0 { // the directory was made since
		at.Ino = dirIno
	}
	c.dmu.Lock()
	c.dirAt, c.dirAtOK = at, true
	c.rescan = c.rescan || rescan
	c.dmu.Unlock()
	return true
}

// readJournalRange reads the whole lines of the journal between two offsets.
func readJournalRange(p string, from, to int64) ([]byte, error) {
	if to <= from {
		return nil, nil
	}
	f, err := openRead(p, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, to-from)
	n, err := f.ReadAt(buf, from)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	buf = buf[:n]
	if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
		return buf[:i], nil
	}
	return nil, nil
}

// parseRecord reads one live record of an index file.
func (c *dirCache[T]) parseRecord(r string) (string, *cacheEntry[T], bool) {
	id, r, ok1 := strings.Cut(r, "\t")
	ino, r, ok2 := strings.Cut(r, "\t")
	size, r, ok3 := strings.Cut(r, "\t")
	mtime, r, ok4 := strings.Cut(r, "\t")
	ctime, r, ok5 := strings.Cut(r, "\t")
	kind, rest, more := strings.Cut(r, "\t")
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !c.valid(id) {
		return "", nil, false
	}
	i, err1 := strconv.ParseUint(ino, 10, 64)
	n, err2 := strconv.ParseInt(size, 10, 64)
	m, err3 := strconv.ParseInt(mtime, 10, 64)
	ct, err4 := strconv.ParseInt(ctime, 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		return "", nil, false
	}
	st := Stamp{Ino: i, Size: n, Mtime: m, Ctime: ct}
	switch kind {
	case "x":
		return id, &cacheEntry[T]{st: st}, !more
	case "f":
		// The keys, then the JSON, parsed when the entity is first asked for.
		keys, rest, tail := c.parseKeys(rest, more)
		if keys == nil || !tail || !strings.HasPrefix(rest, "{") {
			return "", nil, false
		}
		return id, &cacheEntry[T]{k: keys, st: st, raw: rest}, true
	case "k":
		// The keys only: the file is read when the entity is first asked for.
		keys, _, tail := c.parseKeys(rest, more)
		if keys == nil || tail || c.doneKeys == nil || c.doneKeys(keys) {
			return "", nil, false
		}
		return id, &cacheEntry[T]{k: keys, st: st, lazy: true}, true
	}
	return "", nil, false
}

// parseKeys reads a record's "<n> <key>×n" from r (more: r is there) and returns the keys
// (nil if they do not parse), what follows them, and whether a tab followed them.
func (c *dirCache[T]) parseKeys(r string, more bool) (keys []string, rest string, tail bool) {
	if !more {
		return nil, "", false
	}
	n, r, more := strings.Cut(r, "\t")
	nk, err := strconv.Atoi(n)
	if err != nil || nk < c.minKeys || nk > len(r)+1 {
		return nil, "", false
	}
	keys = make([]string, nk)
	for i := range keys {
		if !more {
			return nil, "", false
		}
		var k string
		k, r, more = strings.Cut(r, "\t")
		if strings.IndexByte(k, '\\') >= 0 {
			k = keyUnescaper.Replace(k)
		}
		keys[i] = k
	}
	return keys, r, more
}

// maybeSaveLocked writes the index file when this process compared the directory file by
// file, or has seen many changes and the file on disk lags far behind the journal. pos is
// where the cache stands in the journal. The process then holds the file's cold part in
// place of the finished entities it held.
func (c *dirCache[T]) maybeSaveLocked(pos journalPos) {
	now := c.rebuilt || c.coldStale // written at once, however fresh the file
	if !now && c.since < indexSaveEvery {
		return
	}
	// A process that started from the index file leaves it alone for its first moments:
	// its first answers wait for the catch-up on the journal, which would otherwise write
	// a large store's file right then (a tenth of a second at 100,000 tasks, while a team
	// writes). It writes the file later, if it still lags. A file far behind is written at
	// once all the same: short-lived processes alone (one-shot commands) must not let every
	// start read more and more of the journal.
	if !now && c.fromIndex && time.Since(c.loadedAt) < indexStartGrace {
		if h, err := c.readIndexHeader(); err == nil && h.journal.ino == pos.ino && pos.off-h.journal.off < indexStartLag {
			return
		}
	}
	c.dmu.Lock()
	at, ok := c.dirAt, c.dirAtOK && !c.unsure
	c.dmu.Unlock()
	if !ok {
		return
	}
	entities := len(c.ents)
	if c.cold != nil {
		entities += c.cold.n
	}
	fresh := func() bool {
		h, err := c.readIndexHeader()
		return err == nil && h.journal.ino == pos.ino && indexFresh(pos.off-h.journal.off, time.Since(h.written), entities)
	}
	if !now && fresh() {
		c.since = 0
		return
	}
	// One process writes the file at a time. The processes of a team see the same changes
	// and reach indexSaveEvery together; at 100,000 tasks a save costs a tenth of a
	// second, and each of them writing it in turn cost more than the changes themselves.
	// A process that finds another saving leaves it to that one.
	unlock, ok := c.lockIndex()
	if !ok {
		c.since = 0
		return
	}
	defer unlock()
	if !now && fresh() { // written meanwhile by the one that held the lock
		c.since = 0
		return
	}
	// What only the journal told of is read now when its keys cannot tell whether it is
	// finished; otherwise it is written as the journal named it (a "k" record, or a
	// record of the cold part), to be read when first asked for.
	if c.doneKeys == nil {
		var lazy []string
		for id, e := range c.ents {
			if e.lazy {
				lazy = append(lazy, id)
			}
		}
		for _, id := range lazy {
			c.get(id)
		}
	}
	var live strings.Builder
	nlive := 0
	// keyed starts a live record that carries keys: its id, identity, kind and keys.
	keyed := func(id, kind string, e *cacheEntry[T]) {
		live.WriteString(id + "\t" + stampFields(e.st) + "\t" + kind + "\t" + strconv.Itoa(len(e.k)))
		for _, k := range e.k {
			live.WriteString("\t" + keyEscaper.Replace(k))
		}
		nlive++
	}
	var hot []coldRec // finished entities held in memory
	for id, e := range c.ents {
		switch {
		case e.raw != "" || e.v != nil && (c.done == nil || !c.done(e.v)):
			data := []byte(e.raw)
			if e.raw == "" {
				var err error
				if data, err = json.Marshal(e.v); err != nil {
					return
				}
			}
			keyed(id, "f", e)
			live.WriteByte('\t')
			live.Write(data)
			live.WriteByte('\n')
		case e.lazy && c.doneKeys != nil && !c.doneKeys(e.k):
			keyed(id, "k", e)
			live.WriteByte('\n')
		case e.k != nil:
			hot = append(hot, coldRec{id, e.st, e.k})
		default:
			live.WriteString(id + "\t" + stampFields(e.st) + "\tx\n")
			nlive++
		}
	}
	coldPart := buildCold(c.coldRecsLocked(hot), c.nidx, c.slot)
	var b bytes.Buffer
	b.Grow(live.Len() + len(coldPart) + 256)
	b.WriteString("aipm-index\t" + strconv.Itoa(indexFormat) + "\t" + c.dir + "\n")
	b.WriteString("journal\t" + strconv.FormatUint(pos.ino, 10) + "\t" + strconv.FormatInt(pos.off, 10) +
		"\tdir\t" + strconv.FormatUint(at.Ino, 10) + "\t" + strconv.FormatInt(at.Mtime, 10) + "\n")
	b.WriteString("live\t" + strconv.Itoa(nlive) + "\t" + strconv.Itoa(live.Len()) + "\n")
	b.WriteString(live.String())
	b.WriteString("cold\t" + strconv.Itoa(len(coldPart)) + "\n")
	b.Write(coldPart)
	b.WriteByte('\n')
	b.WriteString("end\t" + strconv.FormatUint(uint64(crc32.ChecksumIEEE(b.Bytes())), 16) + "\n")
	// Not fsynced: a file cut short by a crash fails its checksum and is rebuilt.
	if err := writeIndexFile(c.indexPath(), b.Bytes()); err != nil {
		return
	}
	c.since, c.rebuilt, c.coldStale = 0, false, false
	// Hold the file just written: what it has in its cold part leaves memory.
	cold, err := parseCold(coldPart, c.nidx, c.minKeys, true)
	if err != nil {
		return
	}
	for _, r := range hot {
		if e := c.ents[r.id]; e != nil {
			delete(c.ents, r.id)
			c.index(r.id, e.k, nil)
		}
	}
	c.setCold(cold)
}

// coldRecsLocked is every finished entity for the next cold section, in id order: those
// held in memory (hot, in any order) merged with the records of the index file's cold
// part that memory does not shadow, which come in id order already. The cold part's
// identities are read in one piece and its keys share one buffer: at 100,000 tasks this
// is a save's other large cost after buildCold.
func (c *dirCache[T]) coldRecsLocked(hot []coldRec) []coldRec {
	slices.SortFunc(hot, cmpRecID)
	x := c.cold
	if x == nil {
		return hot
	}
	recs := make([]coldRec, 0, len(hot)+x.n)
	block, whole := x.allStamps()
	keys := make([]string, 0, len(x.recKey)/4)
	h := 0
	for i := range x.n {
		id := x.id(i)
		for h < len(hot) && hot[h].id < id {
			recs = append(recs, hot[h])
			h++
		}
		if _, gone := c.shadow[id]; gone {
			continue
		}
		if h < len(hot) && hot[h].id == id {
			continue // held in memory as well: memory's record counts
		}
		st := Stamp{} // a file cut short reads as no identity: the entity is read again
		if whole {
			st = stampIn(block, i)
		}
		from := len(keys)
		keys = x.appendRecKeys(keys, i)
		recs = append(recs, coldRec{id, st, keys[from:len(keys):len(keys)]})
	}
	return append(recs, hot[h:]...)
}

// indexFresh tells whether an index file of entities, lag bytes of journal behind and
// written age ago, need not be written again yet. A file dated in the future (a clock
// set back) is not fresh.
func indexFresh(lag int64, age time.Duration, entities int) bool {
	return lag < indexLag || (age >= 0 && age < time.Duration(entities)*indexSavePace)
}

func stampFields(st Stamp) string {
	return strconv.FormatUint(st.Ino, 10) + "\t" + strconv.FormatInt(st.Size, 10) + "\t" +
		strconv.FormatInt(st.Mtime, 10) + "\t" + strconv.FormatInt(st.Ctime, 10)
}

// readIndexHeader reads the first two lines of the index file (not its checksum).
func (c *dirCache[T]) readIndexHeader() (indexHeader, error) {
	var h indexHeader
	f, err := openRead(c.indexPath(), 0)
	if err != nil {
		return h, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil {
		h.written = fi.ModTime()
	}
	buf := make([]byte, 256)
	n, _ := io.ReadFull(f, buf)
	lines := strings.SplitN(string(buf[:n]), "\n", 3)
	if len(lines) < 3 {
		return h, errors.New("short")
	}
	fs := strings.Split(lines[1], "\t")
	if len(fs) != 6 || fs[0] != "journal" {
		return h, errors.New("bad header")
	}
	ino, err1 := strconv.ParseUint(fs[1], 10, 64)
	off, err2 := strconv.ParseInt(fs[2], 10, 64)
	if err1 != nil || err2 != nil {
		return h, errors.New("bad header")
	}
	h.journal = journalPos{ino, off}
	return h, nil
}

// writeIndexFile replaces an index file by rename, without fsync: a file cut short by a
// crash fails its checksum and is rebuilt.
func writeIndexFile(p string, data []byte) (err error) {
	dir, base := filepath.Split(p)
	if err := ensureDir(dir); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}
