package filestore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aipm/aipm/filestore/internal/engine"
)

// readJSON decodes the entity at path into v. A file that does not decode becomes a
// *CorruptError naming the line, so the caller refuses to overwrite a hand-broken file.
func (s *Store) readJSON(path string, v any) error {
	data, err := engine.ReadFile(path, engine.MaxEntityFile)
	if err != nil {
		return err
	}
	return s.decodeJSON(path, data, v)
}

func (s *Store) decodeJSON(path string, data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return s.corrupt(path, data, err)
	}
	return nil
}

func (s *Store) corrupt(path string, data []byte, err error) *CorruptError {
	line, problem := 0, err.Error()
	if HasConflictMarkers(data) {
		return &CorruptError{Path: s.Rel(path), Line: firstMarkerLine(data), Problem: "unresolved merge conflict (Git's markers): `aipm doctor` says which fields and how to settle them"}
	}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		line = lineAt(data, se.Offset)
		problem = "invalid JSON: " + se.Error()
	case errors.As(err, &te):
		line = lineAt(data, te.Offset)
		problem = fmt.Sprintf("field %q: cannot use JSON %s as %s", te.Field, te.Value, te.Type)
	}
	return &CorruptError{Path: s.Rel(path), Line: line, Problem: problem}
}

func lineAt(data []byte, offset int64) int {
	if offset > int64(len(data)) {
		offset = int64(len(data))
	}
	if offset < 0 {
		offset = 0
	}
	n := bytes.Count(data[:offset], []byte("\n")) + 1
	// An error reported just after a newline (e.g. unexpected end of input) belongs to the
	// line before it.
	if offset > 0 && data[offset-1] == '\n' && n > 1 {
		n--
	}
	return n
}

// firstMarkerLine is the 1-based line of the first of Git's conflict markers in data, as
// doctor names it; 1 when none is at the start of a line.
func firstMarkerLine(data []byte) int {
	for i, l := range bytes.Split(data, []byte("\n")) {
		if isMarkerLine(l) {
			return i + 1
		}
	}
	return 1
}
