package merge

import (
	"bytes"
	"encoding/json"
	"path"
	"time"
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
		for len(data) > 0 {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				break
			}
			line := data[:i]
			data = data[i+1:]
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			key, at := lineKey(line, byBytes)
			out = append(out, rec{line, at})
			keys = append(keys, key)
		}
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
