package filestore

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"hash/fnv"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/aipm/aipm/filestore/internal/engine"
)

// The history index on disk: runtime/index/events.idx, machine-local, so that a process
// finds an entity's lines in events.jsonl without reading the whole history and without
// holding an offset per line of it in memory. It lists, sorted, a 64-bit hash of each
// line's entity id and the line's offset; a process opens it, checks it whole once, and
// then looks ids up where they lie (a binary search read from the file), holding in
// memory only the lines appended since it was written. A line found through it is read
// and its id compared, so a hash shared by two ids, or a line that is no longer what was
// indexed, is passed over. It is only a cache: another inode of events.jsonl (a merge
// rewrote it), a file shorter than it covers or whose last bytes before that point are
// not those it saw (a new file that got the old one's inode), another format or a
// checksum that does not match, and it is not used; the history is then indexed from the
// top and the file written anew.
//
// Format:
//
//	aipm-events-index <format> <events.jsonl inode> <bytes covered> <entries> <crc32 of the 256 bytes before>
//	<entries × (hash, offset): little-endian uint64 pairs, sorted>
//	end <crc32 of everything before this line, hex>

const eventsIndexFormat = 1

// eventsIndexEvery is how many entries of the lines appended since the file was written
// make a process write it again.
const eventsIndexEvery = 4096

// EventsIndexPath is the history index file, relative to .ai-pm.
const EventsIndexPath = IndexDir + "/events.idx"

func eventHash(id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()
}

// eventsBase is an open history index file.
type eventsBase struct {
	f     *os.File
	ino   uint64 // of the events.jsonl it indexes
	off   int64  // how much of it
	tail  string // crcHex of the bytes of it before off (historyTail)
	n     int64  // entries
	start int64  // where the entries begin in the file
}

// openEventsBase opens and checks a history index file.
func openEventsBase(p string) (*eventsBase, error) {
	f, err := engine.OpenRead(p, 0)
	if err != nil {
		return nil, err
	}
	b, err := checkEventsBase(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return b, nil
}

func checkEventsBase(f *os.File) (*eventsBase, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	head := make([]byte, 256)
	n, _ := f.ReadAt(head, 0)
	i := bytes.IndexByte(head[:n], '\n')
	if i < 0 {
		return nil, errors.New("no header")
	}
	fs := strings.Split(string(head[:i]), "\t")
	if len(fs) != 6 || fs[0] != "aipm-events-index" || fs[1] != strconv.Itoa(eventsIndexFormat) {
		return nil, errors.New("another format")
	}
	ino, err1 := strconv.ParseUint(fs[2], 10, 64)
	off, err2 := strconv.ParseInt(fs[3], 10, 64)
	cnt, err3 := strconv.ParseInt(fs[4], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || off < 0 || cnt < 0 {
		return nil, errors.New("bad header")
	}
	b := &eventsBase{f: f, ino: ino, off: off, n: cnt, start: int64(i) + 1, tail: fs[5]}
	body := b.start + 16*cnt
	endLine := len("end\t") + 8 + 1
	if fi.Size() != body+int64(endLine) {
		return nil, errors.New("truncated or grown")
	}
	// The whole file, through a small buffer: nothing of it is held.
	crc := crc32.NewIEEE()
	if _, err := io.Copy(crc, io.NewSectionReader(f, 0, body)); err != nil {
		return nil, err
	}
	tail := make([]byte, endLine)
	if _, err := f.ReadAt(tail, body); err != nil {
		return nil, err
	}
	if string(tail) != "end\t"+crcHex(crc.Sum32())+"\n" {
		return nil, errors.New("checksum does not match")
	}
	return b, nil
}

// historyTail fingerprints a history up to off: the crc32 of the 256 bytes before it.
func historyTail(f *os.File, off int64) string {
	start := max(off-256, 0)
	buf := make([]byte, off-start)
	if _, err := f.ReadAt(buf, start); err != nil {
		return ""
	}
	return crcHex(crc32.ChecksumIEEE(buf))
}

func crcHex(sum uint32) string {
	s := strconv.FormatUint(uint64(sum), 16)
	return strings.Repeat("0", 8-len(s)) + s
}

// entry reads entry i.
func (b *eventsBase) entry(i int64) (hash uint64, off int64, err error) {
	var buf [16]byte
	if _, err := b.f.ReadAt(buf[:], b.start+16*i); err != nil {
		return 0, 0, err
	}
	return binary.LittleEndian.Uint64(buf[:8]), int64(binary.LittleEndian.Uint64(buf[8:])), nil
}

// lookup returns the offsets filed under hash h, ascending.
func (b *eventsBase) lookup(h uint64) ([]int64, error) {
	lo, hi := int64(0), b.n
	for lo < hi {
		mid := lo + (hi-lo)/2
		v, _, err := b.entry(mid)
		if err != nil {
			return nil, err
		}
		if v < h {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	var out []int64
	for i := lo; i < b.n; i++ {
		v, off, err := b.entry(i)
		if err != nil {
			return nil, err
		}
		if v != h {
			break
		}
		out = append(out, off)
	}
	return out, nil
}

// each calls fn with every entry, in order.
func (b *eventsBase) each(fn func(hash uint64, off int64)) error {
	r := bufio.NewReaderSize(io.NewSectionReader(b.f, b.start, 16*b.n), 64<<10)
	var buf [16]byte
	for range b.n {
		if _, err := io.ReadFull(r, buf[:]); err != nil {
			return err
		}
		fn(binary.LittleEndian.Uint64(buf[:8]), int64(binary.LittleEndian.Uint64(buf[8:])))
	}
	return nil
}

type eventsEntry struct {
	hash uint64
	off  int64
}

// writeEventsBase writes the index of events.jsonl (inode ino, off bytes covered): the
// entries of old (nil: none) and add (sorted here), merged in order.
func writeEventsBase(p string, ino uint64, off int64, tail string, old *eventsBase, add []eventsEntry) error {
	slices.SortFunc(add, func(a, b eventsEntry) int {
		if a.hash != b.hash {
			if a.hash < b.hash {
				return -1
			}
			return 1
		}
		return int(a.off - b.off)
	})
	var total int64 = int64(len(add))
	if old != nil {
		total += old.n
	}
	// Written as it is made, through a small buffer: the history's index is not held
	// twice.
	return engine.WriteStreamed(p, 0o600, func(f io.Writer) error {
		crc := crc32.NewIEEE()
		w := bufio.NewWriterSize(io.MultiWriter(f, crc), 64<<10)
		w.WriteString("aipm-events-index\t" + strconv.Itoa(eventsIndexFormat) + "\t" + strconv.FormatUint(ino, 10) + "\t" +
			strconv.FormatInt(off, 10) + "\t" + strconv.FormatInt(total, 10) + "\t" + tail + "\n")
		var pair [16]byte
		put := func(e eventsEntry) {
			binary.LittleEndian.PutUint64(pair[:8], e.hash)
			binary.LittleEndian.PutUint64(pair[8:], uint64(e.off))
			w.Write(pair[:])
		}
		j := 0
		if old != nil {
			err := old.each(func(h uint64, o int64) {
				for j < len(add) && (add[j].hash < h || add[j].hash == h && add[j].off < o) {
					put(add[j])
					j++
				}
				put(eventsEntry{h, o})
			})
			if err != nil {
				return err
			}
		}
		for ; j < len(add); j++ {
			put(add[j])
		}
		if err := w.Flush(); err != nil {
			return err
		}
		// Not fsynced, like the other index files: one cut short fails its checksum.
		_, err := io.WriteString(f, "end\t"+crcHex(crc.Sum32())+"\n")
		return err
	})
}
