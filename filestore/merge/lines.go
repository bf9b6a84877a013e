package merge

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"time"

	"github.com/aipm/aipm/filestore"
)

// Lines is the three-way merge of a JSONL file (a mailbox, an inbox, the history):
// the union of both sides' lines, each record once, in time order. Lines are append-only,
// so base only tells what both sides already had; a line is the same record on both
// sides (both already hold every line of base, so a union needs only them) when it has the same "id" (a message, a notification) or, in events.jsonl whose
// lines carry the entity's id, the same bytes. Ours keeps its order and its bytes; each
// line only theirs has is placed before the first of ours that is later than it (by
// "createdAt", "created_at" or "at"), theirs keeping its own order, so a file both sides
// wrote in time order stays in time order and a line already read keeps its place
// whenever the other side's lines are newer. A last line without '\n' (a torn write) is
// dropped, as readers ignore it.
func Lines(name string, _, ours, theirs []byte) []byte {
	byBytes := path.Base(name) == "events.jsonl"
	type rec struct {
		line []byte
		at   time.Time
	}
	parse := func(data []byte) (out []rec, keys []string) {
		eachLine(data, func(line []byte) {
			key, at := lineKey(line, byBytes)
			out = append(out, rec{line, at})
			keys = append(keys, key)
		})
		return out, keys
	}
	o, okeys := parse(ours)
	t, tkeys := parse(theirs)
	seen := make(map[string]bool, len(okeys))
	for _, k := range okeys {
		seen[k] = true
	}
	var only []rec
	for i, r := range t {
		if !seen[tkeys[i]] {
			seen[tkeys[i]] = true
			only = append(only, r)
		}
	}
	var buf bytes.Buffer
	buf.Grow(len(ours) + len(theirs))
	dup := make(map[string]bool, len(okeys))
	j := 0
	for i, r := range o {
		if dup[okeys[i]] {
			continue // a record twice in ours (an earlier union by line): keep the first
		}
		dup[okeys[i]] = true
		for j < len(only) && !only[j].at.IsZero() && !r.at.IsZero() && only[j].at.Before(r.at) {
			buf.Write(only[j].line)
			buf.WriteByte('\n')
			j++
		}
		buf.Write(r.line)
		buf.WriteByte('\n')
	}
	for ; j < len(only); j++ {
		buf.Write(only[j].line)
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

// lineKey is what makes a JSONL line the same record on two sides (its "id", or in
// events.jsonl its bytes: byBytes) and its time.
func lineKey(line []byte, byBytes bool) (key string, at time.Time) {
	var v struct {
		ID        string    `json:"id"`
		CreatedAt time.Time `json:"createdAt"`
		Created   time.Time `json:"created_at"`
		At        time.Time `json:"at"`
	}
	key = string(line)
	if id, t, ok := filestore.QuickLineKey(line); ok {
		// A line as aipm writes it, read without decoding: what the decoding finds.
		if id != "" && !byBytes {
			key = "id:" + id
		}
		return key, t
	}
	if json.Unmarshal(line, &v) == nil {
		if v.ID != "" && !byBytes {
			key = "id:" + v.ID
		}
		for _, t := range []time.Time{v.CreatedAt, v.Created, v.At} {
			if !t.IsZero() {
				at = t
				break
			}
		}
	}
	return key, at
}

// Tails writes to w the merge of what two sides appended to a JSONL file since their
// common version: ours, the lines this side appended (held), and theirs, the other
// side's (read as a stream, never held whole) — the merge Lines makes of base+ours and
// base+theirs, less the base, for a file too large to hold three times. Ours keeps its
// order and bytes; each line of theirs whose record ours does not hold is placed before
// the first line of ours later than it, in theirs' order. Unlike Lines, it does not look
// for theirs' lines among the base's, nor for a record twice in theirs: a side that
// appends only appends new records. A line over maxLine bytes in theirs is an error; a
// last line without '\n' is dropped.
func Tails(name string, ours []byte, theirs io.Reader, w io.Writer, maxLine int) error {
	byBytes := path.Base(name) == "events.jsonl"
	type rec struct {
		line []byte
		at   time.Time
	}
	var o []rec
	seen := map[string]bool{}
	eachLine(ours, func(line []byte) {
		key, at := lineKey(line, byBytes)
		if !seen[key] { // a record twice in ours: keep the first
			seen[key] = true
			o = append(o, rec{line, at})
		}
	})
	r := bufio.NewReaderSize(theirs, 64<<10)
	var next *rec // the next line of theirs that ours does not hold
	var buf []byte
	more := true
	read := func() error {
		for next == nil && more {
			buf = buf[:0]
			for {
				chunk, err := r.ReadSlice('\n')
				buf = append(buf, chunk...)
				if len(buf) > maxLine+1 {
					return fmt.Errorf("a line of %s over %d bytes", name, maxLine)
				}
				if err == bufio.ErrBufferFull {
					continue
				}
				if err == io.EOF {
					more = false
					if len(buf) > 0 && buf[len(buf)-1] != '\n' {
						buf = buf[:0] // a torn last line
					}
					break
				}
				if err != nil {
					return err
				}
				break
			}
			line := bytes.TrimSuffix(buf, []byte{'\n'})
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			key, at := lineKey(line, byBytes)
			if seen[key] {
				continue
			}
			next = &rec{line, at}
		}
		return nil
	}
	emit := func(line []byte) error {
		if _, err := w.Write(line); err != nil {
			return err
		}
		_, err := w.Write([]byte{'\n'})
		return err
	}
	for _, mine := range o {
		for {
			if err := read(); err != nil {
				return err
			}
			if next == nil || next.at.IsZero() || mine.at.IsZero() || !next.at.Before(mine.at) {
				break
			}
			if err := emit(next.line); err != nil {
				return err
			}
			next = nil
		}
		if err := emit(mine.line); err != nil {
			return err
		}
	}
	for {
		if err := read(); err != nil {
			return err
		}
		if next == nil {
			return nil
		}
		if err := emit(next.line); err != nil {
			return err
		}
		next = nil
	}
}
