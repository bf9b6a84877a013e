package filestore

import (
	"bytes"
	"fmt"
	"testing"
)

func TestFilesReplaceRemove(t *testing.T) {
	s := newTestStore(t)
	tk := mustTask(t, s, NewTask{Title: "Before"})
	other, err := Open(s.Root(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := other.Task(tk.ID); err != nil || got.Title != "Before" { // warms its cache
		t.Fatalf("Task = %v, %v", got, err)
	}
	rel := "tasks/" + tk.ID + ".json"
	err = s.Exclusive(func(f *Files) error {
		for _, bad := range []string{"../x", "/etc/passwd", "runtime/sessions/x.json", "a/../b", ".git", ""} {
			if err := f.Replace(bad, []byte("x")); err == nil {
				t.Errorf("Replace(%q) accepted", bad)
			}
		}
		data, ok, err := f.Read(rel)
		if err != nil || !ok {
			return fmt.Errorf("Read(%s) = %v, %v", rel, ok, err)
		}
		if err := f.Replace(rel, bytes.Replace(data, []byte(`"Before"`), []byte(`"After"`), 1)); err != nil {
			return err
		}
		if err := f.Replace("notes/hello.txt", []byte("hi\n")); err != nil {
			return err
		}
		if err := f.Remove("notes/hello.txt"); err != nil {
			return err
		}
		if _, ok, _ := f.Read("notes/hello.txt"); ok {
			t.Error("file still there after Remove")
		}
		return f.Remove("notes/never.txt")
	})
	if err != nil {
		t.Fatal(err)
	}
	// Both the writing store and another one with a warm cache see the new file: the
	// write went through the journal like the store's own.
	for _, st := range []*Store{s, other} {
		if got, err := st.Task(tk.ID); err != nil || got.Title != "After" {
			t.Errorf("after Replace: Task = %+v, %v", got, err)
		}
	}
}

// The allowed-signers list is a file of the state, at the top only and by its exact name.
func TestStatePathAllowedSigners(t *testing.T) {
	if err := StatePath(AllowedSignersFile); err != nil {
		t.Errorf("StatePath(%q) = %v, want it taken", AllowedSignersFile, err)
	}
	for _, p := range []string{"ALLOWED_SIGNERS", "Allowed_Signers", "tasks/allowed_signers", "allowed_signers.d/x", "runtime/allowed_signers"} {
		if StatePath(p) == nil {
			t.Errorf("StatePath(%q) = nil, want it refused", p)
		}
	}
}
