package merge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/aipm/aipm/filestore"
)

// What a merge made outside aipm (a forge's pull request, `git merge -X ours`) may drop,
// found by comparing it with the merge aipm makes of the same parents: a JSONL line
// either parent had (Missing), or an entity field change Merge keeps (LostFields). The
// functions here decide; the caller reads the versions from Git and writes the store.

// Missing returns the lines of want (JSONL, as Lines reads it) whose record have lacks,
// in want's order, each once; nil when have holds every record of want.
func Missing(name string, have, want []byte) []byte {
	byBytes := path.Base(name) == "events.jsonl"
	seen := map[string]bool{}
	eachLine(have, func(line []byte) {
		k, _ := lineKey(line, byBytes)
		seen[k] = true
	})
	var out []byte
	eachLine(want, func(line []byte) {
		k, _ := lineKey(line, byBytes)
		if !seen[k] {
			seen[k] = true
			out = append(append(out, line...), '\n')
		}
	})
	return out
}

// CountLines counts the complete, non-blank lines of a JSONL file.
func CountLines(data []byte) int {
	n := 0
	eachLine(data, func([]byte) { n++ })
	return n
}

// eachLine calls fn with every complete, non-blank line of data.
func eachLine(data []byte, fn func(line []byte)) {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return
		}
		if line := data[:i]; len(bytes.TrimSpace(line)) > 0 {
			fn(line)
		}
		data = data[i+1:]
	}
}

// noisyFields change on every write and never count as a change lost: version (the
// restoring write sets it) and updated_at (set with what is restored).
var noisyFields = map[string]bool{"version": true, "updated_at": true}

// LostFields compares hand, a merge of ours and theirs made outside aipm, with Merge's
// result for the same three versions (base empty when both sides added the file): the
// top-level fields whose value Merge keeps and hand does not hold, with Merge's values
// (nil for a field Merge leaves out).
// A field both sides changed in a way Merge leaves to a person (free text) is hand's
// choice, not a loss. Leases are left out: the next renewal rewrites them whole.
func LostFields(kind string, base, ours, theirs, hand []byte) (filestore.Object, error) {
	if kind == filestore.KindLease {
		return nil, nil
	}
	if len(bytes.TrimSpace(base)) == 0 {
		base = ours // added on both sides: ours stands for the ancestor, as in a sync round
	}
	res, err := Merge(kind, base, ours, theirs)
	if err != nil {
		return nil, err
	}
	data := res.Data
	skip := map[string]bool{}
	if len(res.Conflicts) > 0 {
		for _, c := range res.Conflicts {
			top, _, _ := strings.Cut(c.Field, ".")
			skip[top] = true
		}
		if data, err = ResolveConflict(kind, data, true); err != nil {
			return nil, err
		}
	}
	var want, got obj
	if err := filestore.DecodeObject(data, &want); err != nil {
		return nil, err
	}
	if err := filestore.DecodeObject(hand, &got); err != nil {
		return nil, fmt.Errorf("the merge's version: %w", err)
	}
	lost := obj{}
	for k, v := range want {
		if noisyFields[k] || skip[k] || filestore.SameJSON(v, got[k]) {
			continue
		}
		lost[k] = v
	}
	for k := range got {
		if _, ok := want[k]; !ok && !noisyFields[k] && !skip[k] {
			lost[k] = nil // a field Merge removes (a blocked_reason cleared, say)
		}
	}
	if len(lost) == 0 {
		return nil, nil
	}
	if v, ok := want["updated_at"]; ok {
		lost["updated_at"] = v
	}
	return lost, nil
}

// RestoreFields sets, in current (the file as it is now), each field of lost whose value
// is still the one hand (the merge that dropped it) holds: a field changed since is left
// as it is. It returns the file stably formatted, with version one more, and the names of
// the fields set; nil data when there is nothing to set. updated_at is set only along
// with another field, and only to a later time.
func RestoreFields(kind string, current, hand []byte, lost filestore.Object) ([]byte, []string, error) {
	r, ok := mergeRulesFor[kind]
	if !ok {
		return nil, nil, fmt.Errorf("restore: unknown entity kind %q", kind)
	}
	var cur, h obj
	if err := filestore.DecodeObject(current, &cur); err != nil {
		return nil, nil, err
	}
	if err := filestore.DecodeObject(hand, &h); err != nil {
		return nil, nil, err
	}
	var set []string
	for k, v := range lost {
		if noisyFields[k] || !filestore.SameJSON(cur[k], h[k]) || filestore.SameJSON(cur[k], v) {
			continue
		}
		if v == nil {
			delete(cur, k)
		} else {
			cur[k] = v
		}
		set = append(set, k)
	}
	if len(set) == 0 {
		return nil, nil, nil
	}
	sort.Strings(set)
	if v, ok := lost["updated_at"]; ok && cmpTime(v, cur["updated_at"]) > 0 {
		cur["updated_at"] = v
	}
	cur["version"] = json.RawMessage(fmt.Sprint(intField(cur, "version") + 1))
	data, err := r.encode(cur)
	if err != nil {
		return nil, nil, err
	}
	return data, set, nil
}
