package merge

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/aipm/aipm/filestore"
	"github.com/aipm/aipm/filestore/internal/engine"
)

// FuzzMerge feeds the merge driver's logic arbitrary sides: it must never panic, and
// whatever it merges without conflict must be a task the store reads back to the same
// bytes; with conflicts, the markers it writes must split back into two sides.
func FuzzMerge(f *testing.F) {
	base, err := engine.EncodeJSON(&filestore.Task{ID: "tsk_x", Title: "t", Status: filestore.StatusInProgress, Priority: "high", Dependencies: []string{"tsk_y"}, Version: 3})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(base, []byte(`{"id":"tsk_x","title":"u","status":"blocked","version":4}`), []byte(`{"id":"tsk_x","title":"v","status":"done","priority":"low","version":4}`))
	f.Add(base, []byte(`{"status":"nope","dependencies":["a","b"]}`), []byte(`{"status":"cancelled","dependencies":"x"}`))
	f.Add([]byte{}, []byte(`{}`), []byte(`[]`))
	f.Fuzz(func(t *testing.T, b, o, th []byte) {
		r, err := Merge(filestore.KindTask, b, o, th)
		if err != nil {
			return
		}
		if len(r.Conflicts) > 0 {
			if _, _, ok := filestore.SplitConflict(r.Data); !ok {
				t.Fatalf("conflict markers do not split:\n%s", r.Data)
			}
			return
		}
		var got filestore.Task
		if err := json.Unmarshal(r.Data, &got); err != nil {
			t.Fatalf("merged task does not decode: %v\n%s", err, r.Data)
		}
		again, err := engine.EncodeJSON(&got)
		if err != nil || !bytes.Equal(again, r.Data) {
			t.Fatalf("merged task is not in the store's format:\n%s", r.Data)
		}
	})
}
