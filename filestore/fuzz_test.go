package filestore

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aipm/aipm/filestore/internal/engine"
)

// Fuzz targets for the parsers that meet hand-edited or crash-damaged files and hostile
// IDs. A plain `go test` runs only the seeds below; explore with e.g.
//
//	go test -run='^$' -fuzz=FuzzReadLines -fuzztime=30s ./filestore/

// FuzzValidateIDs: an ID the validators accept can never name anything but one file or
// directory inside the directory it is joined to.
func FuzzValidateIDs(f *testing.F) {
	for _, s := range []string{
		"worker-frontend-01", "owner", "a", "a..", "a.b_c-d",
		".", "..", ".hidden", "a/b", "../x", "a\\b", "a\x00b", "a\n", "\nowner", "A", "", " a",
		strings.Repeat("a", 63), strings.Repeat("a", 64),
		"tsk_01jd2x0k8m3q7v5w9z1b4c6e8f", "tsk_..", "tsk_a/../../x", "tsk_", "tsk_x\x00", "ses_x", "tsk_é",
	} {
		f.Add(s)
	}
	prefixes := []string{PrefixTask, PrefixSession, PrefixEvent, PrefixExecution, PrefixMessage,
		PrefixConversation, PrefixDelegation, PrefixNotification, PrefixProject}
	dir := filepath.Join(string(filepath.Separator), "repo", DirName, "agents")
	safe := func(t *testing.T, kind, id string) {
		t.Helper()
		if strings.ContainsAny(id, "/\\\x00") || id == "." || id == ".." || strings.HasPrefix(id, ".") {
			t.Fatalf("%s accepted %q", kind, id)
		}
		for i := 0; i < len(id); i++ {
			if c := id[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
				t.Fatalf("%s accepted %q: byte %q is outside [a-z0-9._-]", kind, id, c)
			}
		}
		for _, name := range []string{id, id + ".json"} { // agents/<id>, tasks/<id>.json
			p := filepath.Join(dir, name)
			if filepath.Dir(p) != dir || filepath.Base(p) != name || !filepath.IsLocal(name) {
				t.Fatalf("%s accepted %q, which joins to %s outside %s", kind, id, p, dir)
			}
		}
	}
	rejected := func(t *testing.T, kind, id string, err error) {
		t.Helper()
		var e *Error
		if !errors.As(err, &e) || e.Code != "invalid_id" || !errors.Is(err, ErrInvalid) {
			t.Fatalf("%s(%q) = %#v, want an invalid_id *Error", kind, id, err)
		}
		// The message echoes the input clipped (80 characters, each quoted in at most 10
		// bytes), so hostile input cannot blow up error output.
		if len(e.Message) > 1000 {
			t.Fatalf("%s(%d-byte id): %d-byte message", kind, len(id), len(e.Message))
		}
	}
	f.Fuzz(func(t *testing.T, id string) {
		if err := ValidateAgentID(id); err == nil {
			safe(t, "ValidateAgentID", id)
			if len(id) > 63 {
				t.Fatalf("ValidateAgentID accepted %d characters", len(id))
			}
		} else {
			rejected(t, "ValidateAgentID", id, err)
		}
		for _, prefix := range prefixes {
			if err := ValidateEntityID(prefix, id); err == nil {
				safe(t, "ValidateEntityID("+prefix+")", id)
				if !strings.HasPrefix(id, prefix+"_") {
					t.Fatalf("ValidateEntityID(%s) accepted %q without its prefix", prefix, id)
				}
			} else {
				rejected(t, "ValidateEntityID", id, err)
			}
		}
	})
}

// FuzzTaskDecode: a task file holding anything at all — as a human with an editor or a bad
// merge may leave it — is read by Store.Task without panicking, as a task, as a task
// marked conflicted (Git's markers around two task objects), or as a *CorruptError that
// points into the file, and Check reports the same file.
func FuzzTaskDecode(f *testing.F) {
	s, err := Init(f.TempDir(), InitOptions{Name: "fuzz"}, Options{})
	if err != nil {
		f.Fatal(err)
	}
	valid, err := engine.EncodeJSON(&Task{ID: "tsk_x", Title: "t", Status: StatusTodo, Priority: "high", Dependencies: []string{"tsk_y"}, Version: 3})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Add(valid[:len(valid)/2]) // a truncated write
	for _, s := range []string{
		"", "null", "{}", "[]", "\"tsk_x\"", "{\n", "{\n  \"id\": \"tsk_x\",\n  \"title\": \"t\"\n}\n",
		"{\n  \"version\": \"three\"\n}\n",           // wrong type on line 2
		"{\n  \"created_at\": \"yesterday\"\n}\n",    // a time that does not parse
		"{\n  \"dependencies\": {\"a\": 1}\n}\n",     // object for a list
		"{\"id\":\"tsk_x\"}{\"id\":\"tsk_y\"}",       // two writes glued together
		"<<<<<<< HEAD\n{}\n=======\n{}\n>>>>>>> b\n", // a merge conflict left in place
		"\xef\xbb\xbf{}",                             // a byte order mark
	} {
		f.Add([]byte(s))
	}
	path := s.taskPath("tsk_x")
	rel := DirName + "/tasks/tsk_x.json"
	f.Fuzz(func(t *testing.T, data []byte) {
		fzWriteFile(t, path, data)
		task, err := s.Task("tsk_x")
		if (task == nil) == (err == nil) {
			t.Fatalf("Task = %v, %v; want exactly one of a task or an error", task, err)
		}
		problems, cerr := s.Check()
		if cerr != nil {
			t.Fatalf("Check: %v", cerr)
		}
		var mine []Problem
		for _, p := range problems {
			if p.Path == rel {
				mine = append(mine, p)
			}
		}
		if err == nil && task.Conflict != nil {
			// A merge conflict left in place is read as our side, marked; doctor still
			// reports the file, and a write is refused.
			if !HasConflictMarkers(data) || len(mine) == 0 {
				t.Fatalf("%q read as a conflicted task (%+v); Check says %v", data, task.Conflict, mine)
			}
			if werr := s.writeTask(task); !errors.Is(werr, ErrConflict) {
				t.Fatalf("a write to a conflicted task: %v", werr)
			}
			return
		}
		if err == nil {
			if !json.Valid(data) {
				t.Fatalf("invalid JSON %q read as a task", data)
			}
			if task.Dependencies == nil || task.Priority == "" || task.Approval == "" {
				t.Fatalf("task not normalized: %+v", task)
			}
			return
		}
		var ce *CorruptError
		if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Task error %T %v, want a *CorruptError", err, err)
		}
		if ce.Path != rel {
			t.Fatalf("CorruptError path %q, want %q", ce.Path, rel)
		}
		lines := bytes.Count(data, []byte("\n")) + 1
		if ce.Line < 0 || ce.Line > lines {
			t.Fatalf("CorruptError line %d, the file has %d lines", ce.Line, lines)
		}
		// Syntax errors always have a position. (A value that is valid JSON but fails its
		// own decoding, like a time that does not parse, may have none: Line 0.)
		if !json.Valid(data) && ce.Line < 1 {
			t.Fatalf("undecodable JSON %q reported without a line: %v", data, ce)
		}
		// doctor reports what a write would refuse, at the same place.
		if len(mine) != 1 || mine[0].Line != max(ce.Line, 1) {
			t.Fatalf("Task says %v; Check says %v", ce, mine)
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
