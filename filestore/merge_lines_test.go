package filestore

import (
	"bytes"
	"fmt"
	"testing"
)

func TestMergeLines(t *testing.T) {
	msg := func(id, at string) string {
		return `{"id":"` + id + `","senderId":"a","content":"x","createdAt":"2026-01-01T00:00:` + at + `Z"}` + "\n"
	}
	base := msg("m1", "01")
	ours := base + msg("m2", "02") + msg("m4", "04")
	theirs := base + msg("m3", "03") + msg("m5", "05") + msg("m2", "02")
	got := string(MergeLines("agents/a/chat.jsonl", []byte(base), []byte(ours), []byte(theirs)))
	want := base + msg("m2", "02") + msg("m3", "03") + msg("m4", "04") + msg("m5", "05")
	if got != want {
		t.Errorf("union:\n%s\nwant\n%s", got, want)
	}
	// Merging the result again with either side changes nothing: every record once.
	if again := string(MergeLines("agents/a/chat.jsonl", []byte(base), []byte(got), []byte(theirs))); again != want {
		t.Errorf("second merge:\n%s\nwant\n%s", again, want)
	}
	// A record twice in ours (an old union by line) is kept once; a torn tail is dropped.
	dup := base + msg("m2", "02") + msg("m2", "02") + `{"id":"m9"`
	if got := string(MergeLines("agents/a/chat.jsonl", nil, []byte(dup), nil)); got != base+msg("m2", "02") {
		t.Errorf("dedupe:\n%s", got)
	}
	// History lines share the entity id: only identical bytes are one record.
	ev := func(id, change, at string) string {
		return `{"at":"2026-01-01T00:00:` + at + `Z","actor":"a","via":"cli","entity":"task","id":"` + id + `","change":"` + change + `"}` + "\n"
	}
	o := ev("t1", "created", "01") + ev("t1", "status", "03")
	th := ev("t1", "created", "01") + ev("t1", "title", "02")
	if got, want := string(MergeLines("events.jsonl", nil, []byte(o), []byte(th))), ev("t1", "created", "01")+ev("t1", "title", "02")+ev("t1", "status", "03"); got != want {
		t.Errorf("events:\n%s\nwant\n%s", got, want)
	}
}

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
