package filestore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aipm/aipm/filestore/internal/engine"
)

// Git's conflict markers in an entity file: the merge rules write them where a field
// needs a person (package merge), `aipm doctor` and `aipm resolve` read them.

// Conflict markers, as Git writes them.
const (
	markerOurs   = "<<<<<<< "
	markerBase   = "||||||| "
	markerSep    = "======="
	markerTheirs = ">>>>>>> "
)

// MarkConflicts writes ours with Git's conflict markers around the top-level fields in
// which theirs differs. Both are the store's formatting of one entity struct: the same
// keys, one top-level field starting each chunk of lines.
func MarkConflicts(ours, theirs []byte) []byte {
	oc, tc := topChunks(ours), topChunks(theirs)
	var out bytes.Buffer
	var hunkO, hunkT []string
	flush := func() {
		if len(hunkO) == 0 && len(hunkT) == 0 {
			return
		}
		out.WriteString(markerOurs + "ours\n")
		for _, s := range hunkO {
			out.WriteString(s)
		}
		out.WriteString(markerSep + "\n")
		for _, s := range hunkT {
			out.WriteString(s)
		}
		out.WriteString(markerTheirs + "theirs\n")
		hunkO, hunkT = nil, nil
	}
	i, j := 0, 0
	for i < len(oc) || j < len(tc) {
		switch {
		case i < len(oc) && j < len(tc) && oc[i].key == tc[j].key:
			if oc[i].text == tc[j].text {
				flush()
				out.WriteString(oc[i].text)
			} else {
				hunkO, hunkT = append(hunkO, oc[i].text), append(hunkT, tc[j].text)
			}
			i, j = i+1, j+1
		case i < len(oc) && !slices.ContainsFunc(tc[j:], func(c chunk) bool { return c.key == oc[i].key }):
			hunkO = append(hunkO, oc[i].text)
			i++
		default:
			hunkT = append(hunkT, tc[j].text)
			j++
		}
	}
	flush()
	return out.Bytes()
}

type chunk struct{ key, text string }

// topChunks splits an indented JSON object into its opening line, one chunk per
// top-level field (the field's lines), and the closing line.
func topChunks(data []byte) []chunk {
	var out []chunk
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if line == "" {
			continue
		}
		key := ""
		switch {
		case strings.HasPrefix(line, "  \""):
			key, _, _ = strings.Cut(line[3:], "\"")
		case strings.HasPrefix(line, "  "):
			out[len(out)-1].text += line
			continue
		default:
			key = "\x00" + line // the braces
		}
		out = append(out, chunk{key: key, text: line})
	}
	return out
}

// SplitConflict returns the two sides of a file holding conflict markers: ours keeps the
// first part of every conflict, theirs the last (a diff3 base part is dropped). ok is
// false when the markers are not well nested.
func SplitConflict(data []byte) (ours, theirs []byte, ok bool) {
	var o, t bytes.Buffer
	state := 0 // 0 outside, 1 ours, 2 base, 3 theirs
	for _, line := range strings.SplitAfter(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, markerOurs) || line == strings.TrimSpace(markerOurs)+"\n":
			if state != 0 {
				return nil, nil, false
			}
			state = 1
		case strings.HasPrefix(line, markerBase) && state == 1:
			state = 2
		case strings.TrimRight(line, "\r\n") == markerSep && (state == 1 || state == 2):
			state = 3
		case (strings.HasPrefix(line, markerTheirs) || line == strings.TrimSpace(markerTheirs)+"\n") && state == 3:
			state = 0
		default:
			switch state {
			case 0:
				o.WriteString(line)
				t.WriteString(line)
			case 1:
				o.WriteString(line)
			case 3:
				t.WriteString(line)
			}
		}
	}
	if state != 0 {
		return nil, nil, false
	}
	return o.Bytes(), t.Bytes(), true
}

// ConflictFields lists, sorted, the top-level fields in which the two sides of a
// conflicted JSON file differ. An error says a side is not a JSON object.
func ConflictFields(ours, theirs []byte) ([]string, error) {
	var o, t Object
	if err := DecodeObject(ours, &o); err != nil {
		return nil, fmt.Errorf("ours: %w", err)
	}
	if err := DecodeObject(theirs, &t); err != nil {
		return nil, fmt.Errorf("theirs: %w", err)
	}
	keys := map[string]bool{}
	for k := range o {
		keys[k] = true
	}
	for k := range t {
		keys[k] = true
	}
	var out []string
	for _, k := range SortedKeys(keys) {
		if !SameJSON(o[k], t[k]) && k != "version" {
			out = append(out, k)
		}
	}
	return out, nil
}

// HasConflictMarkers reports whether data holds a line Git writes around a conflict.
func HasConflictMarkers(data []byte) bool {
	for _, m := range []string{markerOurs, markerSep + "\n", markerTheirs} {
		if bytes.HasPrefix(data, []byte(m)) || bytes.Contains(data, []byte("\n"+m)) {
			return true
		}
	}
	return false
}

func CompactJSON(v json.RawMessage) string {
	if v == nil {
		return "null"
	}
	var buf bytes.Buffer
	if json.Compact(&buf, v) != nil {
		return string(v)
	}
	return buf.String()
}

// Object is one JSON object, its values kept raw so that a field nobody changed is written
// back exactly.
type Object = map[string]json.RawMessage

func DecodeObject(data []byte, v *Object) error {
	if err := json.Unmarshal(data, v); err != nil {
		return err
	}
	if *v == nil {
		return fmt.Errorf("not a JSON object")
	}
	return nil
}

// SameJSON compares two raw values as JSON, whatever their formatting; an absent value is
// only the same as another absent one.
func SameJSON(a, b json.RawMessage) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return CompactJSON(a) == CompactJSON(b)
}

func SortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// EntityConflict is what an entity file that holds Git's conflict markers holds besides
// our side (two clones changed one field, and no rule decides): the fields both sides
// changed, and their values on the other side (compact JSON). The entity is read as our
// side, marked with it, listed and counted as it, and refused any write that would settle
// the conflict without a word, until a person settles it (`aipm resolve`). It is never
// read from a file: a file that carries it is read without it.
type EntityConflict struct {
	Fields []string          `json:"fields"`
	Theirs map[string]string `json:"theirs"`
}

// String says the fields in conflict with both values: title (ours "A", theirs "B");
// ours is the entity as read (our side).
func (c *EntityConflict) String(ours any) string {
	var o Object
	if data, err := json.Marshal(ours); err == nil {
		json.Unmarshal(data, &o)
	}
	parts := make([]string, 0, len(c.Fields))
	for _, f := range c.Fields {
		parts = append(parts, fmt.Sprintf("%s (ours %s, theirs %s)", f, clip(CompactJSON(o[f])), clip(c.Theirs[f])))
	}
	return strings.Join(parts, ", ")
}

// clone is a deep copy.
func (c *EntityConflict) clone() *EntityConflict {
	if c == nil {
		return nil
	}
	return &EntityConflict{Fields: slices.Clone(c.Fields), Theirs: maps.Clone(c.Theirs)}
}

// readOurSide decodes our side of a file that holds Git's conflict markers into v (the
// zero value of its type) and returns the conflict; nil when the sides are not both
// objects that decode (the file stays unreadable: doctor names it).
func readOurSide(data []byte, v any) *EntityConflict {
	ours, theirs, ok := SplitConflict(data)
	if !ok {
		return nil
	}
	var other Object
	if json.Unmarshal(ours, v) != nil || DecodeObject(theirs, &other) != nil {
		return nil
	}
	fields, err := ConflictFields(ours, theirs)
	if err != nil {
		return nil
	}
	c := &EntityConflict{Fields: fields, Theirs: map[string]string{}}
	for _, f := range fields {
		c.Theirs[f] = CompactJSON(other[f])
	}
	return c
}

// readEntityFile reads the entity file at path into v. A file that holds Git's conflict
// markers is read as our side, and its conflict returned (nil otherwise: a "conflict" the
// file itself claims counts for nothing, the caller sets the field from this).
func readEntityFile[T any](s *Store, path string, v *T) (*EntityConflict, error) {
	data, err := engine.ReadFile(path, engine.MaxEntityFile)
	if err != nil {
		return nil, err
	}
	err = s.decodeJSON(path, data, v)
	if err == nil || !HasConflictMarkers(data) {
		return nil, err
	}
	var ours T
	c := readOurSide(data, &ours)
	if c == nil {
		return nil, err
	}
	*v = ours
	return c, nil
}
