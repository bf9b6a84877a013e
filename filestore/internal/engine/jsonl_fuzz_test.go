package engine

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Fuzz targets for the JSONL reader and the repair of a torn tail, which meet
// crash-damaged and hand-edited files. A plain `go test` runs only the seeds; explore
// with e.g.
//
//	go test -run='^$' -fuzz=FuzzReadLines -fuzztime=30s ./filestore/internal/engine/

// FuzzReadLines: whatever a JSONL file holds (a torn tail, no newline at all, empty lines,
// binary junk), ReadLines returns exactly its complete lines from the offset on, each with
// the offset just past it, and never skips past an unfinished last line.
func FuzzReadLines(f *testing.F) {
	for _, s := range []string{
		"",
		"\n",
		"\n\n\n",
		"no newline",
		"one\n",
		"{\"a\":1}\n{\"a\":2}\n{\"a\":3,\"b\":\"tor", // libs.md §4.3: 2 records, next=16
		"\x00\xff\n\r\n",
	} {
		f.Add([]byte(s), uint16(0))
	}
	f.Add([]byte("{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n"), uint16(8)) // resume from a Next
	f.Add([]byte("abc\ndef\n"), uint16(2))                        // an offset mid-line
	path := filepath.Join(f.TempDir(), "x.jsonl")
	f.Fuzz(func(t *testing.T, data []byte, off uint16) {
		fzWriteFile(t, path, data)
		offset := int64(off) % int64(len(data)+1) // a reader resumes from 0 or a previous Next
		lines, err := ReadLines(path, offset)
		if err != nil {
			t.Fatalf("ReadLines: %v", err)
		}
		pos, sum := offset, int64(0)
		for i, l := range lines {
			if l.N != i+1 {
				t.Fatalf("line %d numbered %d", i+1, l.N)
			}
			if bytes.IndexByte(l.Data, '\n') >= 0 {
				t.Fatalf("line %d holds a newline: %q", l.N, l.Data)
			}
			if l.Next != pos+int64(len(l.Data))+1 || l.Next > int64(len(data)) || data[l.Next-1] != '\n' {
				t.Fatalf("line %d: Next %d after %d bytes from %d", l.N, l.Next, len(l.Data), pos)
			}
			if !bytes.Equal(l.Data, data[pos:l.Next-1]) {
				t.Fatalf("line %d = %q, file holds %q there", l.N, l.Data, data[pos:l.Next-1])
			}
			sum += int64(len(l.Data)) + 1
			pos = l.Next
		}
		if len(lines) > 0 && sum != lines[len(lines)-1].Next-offset {
			t.Fatalf("lines sum to %d bytes, last Next %d from offset %d", sum, lines[len(lines)-1].Next, offset)
		}
		// What is left is at most one unfinished line: no complete line was dropped.
		if bytes.IndexByte(data[pos:], '\n') >= 0 {
			t.Fatalf("a complete line after offset %d was not returned: %q", pos, data[pos:])
		}
	})
}

// FuzzRepairTail: RepairTail cuts a file back to its last complete line (the longest prefix
// ending in '\n', or nothing), whatever the bytes and wherever the 4 KiB chunks fall, and an
// append afterwards lands on a clean line boundary.
func FuzzRepairTail(f *testing.F) {
	for _, s := range []string{
		"",
		"\n",
		"torn",
		"a\nb\n",
		"{\"a\":1}\n{\"a\":2,\"b\"", // libs.md §4.3: becomes {"a":1}\n
		"\n" + strings.Repeat("t", 4096),
		strings.Repeat("l", 4095) + "\n" + "t",
		strings.Repeat("l", 4096) + "\n",
		strings.Repeat("l", 4096) + "\n" + strings.Repeat("t", 4097),
		strings.Repeat("t", 9000),
	} {
		f.Add([]byte(s))
	}
	path := filepath.Join(f.TempDir(), "x.jsonl")
	f.Fuzz(func(t *testing.T, data []byte) {
		fzWriteFile(t, path, data)
		// Opened as AppendLine opens it.
		fh, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		err = RepairTail(fh)
		fh.Close()
		if err != nil {
			t.Fatalf("RepairTail: %v", err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) > 0 && got[len(got)-1] != '\n' {
			t.Fatalf("repaired file does not end with a newline: %q", got)
		}
		if !bytes.HasPrefix(data, got) {
			t.Fatalf("repaired file is not a prefix of the original")
		}
		if want := data[:bytes.LastIndexByte(data, '\n')+1]; !bytes.Equal(got, want) {
			t.Fatalf("repaired to %d bytes, want %d (up to the last newline)", len(got), len(want))
		}
		if err := AppendLine(path, map[string]int{"a": 1}, false); err != nil {
			t.Fatalf("AppendLine: %v", err)
		}
		after, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if want := string(got) + "{\"a\":1}\n"; string(after) != want {
			t.Fatalf("after append: %q, want %q", after, want)
		}
	})
}

// fzWriteFile puts data at path as a new file. Truncating and rewriting one file instead
// makes ext4 (auto_da_alloc) flush it on every close, which stalls fuzzing on a slow disk.
func fzWriteFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
