package engine

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// AppendLine appends one compact JSON record to a JSONL file with a single write(2), after
// repairing a torn tail. The caller holds the store lock, so no two appends interleave and
// no append lands after a half-written line.
func AppendLine(path string, v any, durable bool) error {
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	f, err := Open(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644, MaxJSONLFile)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := RepairTail(f); err != nil {
		return fmt.Errorf("repair %s: %w", filepath.Base(path), err)
	}
	if _, err := f.Write(line); err != nil {
		return err
	}
	if durable {
		return f.Sync()
	}
	return nil
}

// RepairTail truncates a last line that has no newline: the remains of a writer that died
// mid-write. Without this the next record would be glued onto the garbage and a good record
// would be lost with it.
func RepairTail(f *os.File) error {
	info, err := f.Stat()
	if err != nil {
		return err
	}
	size := info.Size()
	if size == 0 {
		return nil
	}
	// Almost always the file ends with its newline: one byte says so.
	var last [1]byte
	if _, err := f.ReadAt(last[:], size-1); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if last[0] == '\n' {
		return nil
	}
	// Look back in chunks for the last newline.
	const chunk = 4096
	end := size
	for end > 0 {
		start := max(end-chunk, 0)
		buf := make([]byte, end-start)
		if _, err := f.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			return truncateSync(f, start+int64(i)+1)
		}
		end = start
	}
	return truncateSync(f, 0)
}

func truncateSync(f *os.File, size int64) error {
	if err := f.Truncate(size); err != nil {
		return err
	}
	return f.Sync()
}

// Line is one complete record of a JSONL file with its 1-based line number and the byte
// offset just past it (where a reader resumes).
type Line struct {
	N    int
	Data []byte
	Next int64
}

// MaxLine is the longest JSONL line aipm reads. The longest a record ever is — a
// message of 4000 characters, JSON-escaped — is far below it. A longer line is skipped
// by every reader (doctor names it) and refused by the sync round that would take it in.
// AIPM_MAX_LINE may lower it (tests use it to stay small and fast); it never raises it.
var MaxLine = lineLimit(os.Getenv("AIPM_MAX_LINE"))

const defaultMaxLine = 1 << 20

func lineLimit(env string) int {
	if n, err := strconv.Atoi(env); err == nil && n > 0 && n < defaultMaxLine {
		return n
	}
	return defaultMaxLine
}

// LineTooLongError is a JSONL line longer than any record aipm writes: a hostile or broken
// file, refused rather than read into memory.
type LineTooLongError struct {
	Path   string
	Line   int   // 1-based, counted from where the read started; 0 if unknown
	Offset int64 // where the line starts
	Size   int64 // its length without the newline; 0 if unknown
}

func (e *LineTooLongError) Error() string {
	where := fmt.Sprintf("line %d", e.Line)
	if e.Line == 0 {
		where = fmt.Sprintf("the line at byte %d", e.Offset)
	}
	size := "over " + strconv.Itoa(MaxLine) + " bytes"
	if e.Size > 0 {
		size = fmt.Sprintf("%d bytes, over the %d a line may have", e.Size, MaxLine)
	}
	return fmt.Sprintf("%s %s is %s, far longer than any record aipm writes: it is skipped, never read into memory; "+
		"delete that line or move the file out of %s", e.Path, where, size, DirName)
}

// ScanLines calls fn with each complete line of a JSONL file from byte offset on, oldest
// first, reading through a fixed buffer: memory does not grow with the file. A last line
// without '\n' is a write in progress or a crash leftover: it is neither passed nor
// skipped past, so a later read picks it up once it is finished. A line over MaxLine (a
// hostile or broken file) is skipped, never held: it still counts in line numbers and
// offsets. Line.Data is valid only during the call. fn returning ErrStop ends the scan
// without error. A missing file has no lines.
func ScanLines(path string, offset int64, fn func(Line) error) error {
	return ScanLinesReport(path, offset, fn, nil)
}

// ScanLinesReport is ScanLines that also tells long, when not nil, of each line over
// MaxLine it skipped (doctor reports them).
func ScanLinesReport(path string, offset int64, fn func(Line) error, cb func(*LineTooLongError)) error {
	f, err := OpenRead(path, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	defer f.Close()
	// A negative offset (a hand-edited cursor) means the start; line numbers and Next stay
	// true byte positions.
	offset = max(offset, 0)
	// The reader's buffer fits what is left to read: most scans start near the end (past
	// a read cursor) and read a few lines, many times a second in a busy team.
	size := 64 << 10
	if fi, err := f.Stat(); err == nil {
		if fi.Size()-offset > MaxJSONLFile {
			return &TooLargeError{Path: RelToRepo(path), Size: fi.Size() - offset, Limit: MaxJSONLFile}
		}
		size = int(min(max(fi.Size()-offset+1, 512), int64(size)))
	}
	if offset > 0 {
		if _, err := f.Seek(offset, io.SeekStart); err != nil {
			return err
		}
	}
	r := bufio.NewReaderSize(f, size)
	var long []byte   // a line longer than the reader's buffer, assembled
	skipping := false // inside a line over MaxLine: its bytes are dropped
	var skipped int64 // its length so far
	n := 0
	pos := offset
	for {
		chunk, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if !skipping && len(long)+len(chunk) > MaxLine {
				skipping, skipped = true, int64(len(long))
				long = nil
			}
			if skipping {
				skipped += int64(len(chunk))
				continue
			}
			long = append(long, chunk...)
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil // a torn last line, if any, is left for later
			}
			return err
		}
		line := chunk[:len(chunk)-1]
		if !skipping && long != nil && len(long)+len(line) > MaxLine {
			skipping, skipped = true, int64(len(long))
		}
		if skipping {
			n++
			length := skipped + int64(len(line))
			if cb != nil {
				cb(&LineTooLongError{Path: RelToRepo(path), Line: n, Offset: pos, Size: length})
			}
			pos += length + 1
			skipping, skipped, long = false, 0, nil
			continue
		}
		if long != nil {
			long = append(long, line...)
			line = long
		}
		n++
		pos += int64(len(line)) + 1
		if err := fn(Line{N: n, Data: line, Next: pos}); err != nil {
			if errors.Is(err, ErrStop) {
				return nil
			}
			return err
		}
		long = nil
	}
}

// ErrStop ends a ScanLines early.
var ErrStop = errors.New("stop")

// ReadLines returns the complete lines of a JSONL file from byte offset on (see ScanLines),
// for files whose every line the caller keeps anyway.
func ReadLines(path string, offset int64) ([]Line, error) {
	var out []Line
	err := ScanLines(path, offset, func(l Line) error {
		l.Data = bytes.Clone(l.Data)
		out = append(out, l)
		return nil
	})
	return out, err
}
