package filestore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// appendLine appends one compact JSON record to a JSONL file with a single write(2), after
// repairing a torn tail. The caller holds the store lock, so no two appends interleave and
// no append lands after a half-written line.
func appendLine(path string, v any, durable bool) error {
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	f, err := openSafe(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644, maxJSONLFile)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := repairTail(f); err != nil {
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

// repairTail truncates a last line that has no newline: the remains of a writer that died
// mid-write. Without this the next record would be glued onto the garbage and a good record
// would be lost with it.
func repairTail(f *os.File) error {
	info, err := f.Stat()
	if err != nil {
		return err
	}
	size := info.Size()
	if size == 0 {
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
		if end == size && buf[len(buf)-1] == '\n' {
			return nil
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

// readLines returns the complete lines of a JSONL file from byte offset on. A last line
// without '\n' is a write in progress or a crash leftover: it is neither returned nor
// skipped past, so a later read picks it up once it is finished.
func readLines(path string, offset int64) ([]Line, error) {
	f, err := openRead(path, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	defer f.Close()
	// A negative offset (a hand-edited cursor) means the start; line numbers and Next stay
	// true byte positions.
	offset = max(offset, 0)
	if fi, err := f.Stat(); err == nil && fi.Size()-offset > maxJSONLFile {
		return nil, &TooLargeError{Path: relToRepo(path), Size: fi.Size() - offset, Limit: maxJSONLFile}
	}
	if offset > 0 {
		if _, err := f.Seek(offset, io.SeekStart); err != nil {
			return nil, err
		}
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	var out []Line
	n := 0
	pos := offset
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		n++
		out = append(out, Line{N: n, Data: data[:i], Next: pos + int64(i) + 1})
		pos += int64(i) + 1
		data = data[i+1:]
	}
	return out, nil
}
