package merge

import (
	"testing"
)

func TestMergeLines(t *testing.T) {
	msg := func(id, at string) string {
		return `{"id":"` + id + `","senderId":"a","content":"x","createdAt":"2026-01-01T00:00:` + at + `Z"}` + "\n"
	}
	base := msg("m1", "01")
	ours := base + msg("m2", "02") + msg("m4", "04")
	theirs := base + msg("m3", "03") + msg("m5", "05") + msg("m2", "02")
	got := string(Lines("agents/a/chat.jsonl", []byte(base), []byte(ours), []byte(theirs)))
	want := base + msg("m2", "02") + msg("m3", "03") + msg("m4", "04") + msg("m5", "05")
	if got != want {
		t.Errorf("union:\n%s\nwant\n%s", got, want)
	}
	// Merging the result again with either side changes nothing: every record once.
	if again := string(Lines("agents/a/chat.jsonl", []byte(base), []byte(got), []byte(theirs))); again != want {
		t.Errorf("second merge:\n%s\nwant\n%s", again, want)
	}
	// A record twice in ours (an old union by line) is kept once; a torn tail is dropped.
	dup := base + msg("m2", "02") + msg("m2", "02") + `{"id":"m9"`
	if got := string(Lines("agents/a/chat.jsonl", nil, []byte(dup), nil)); got != base+msg("m2", "02") {
		t.Errorf("dedupe:\n%s", got)
	}
	// History lines share the entity id: only identical bytes are one record.
	ev := func(id, change, at string) string {
		return `{"at":"2026-01-01T00:00:` + at + `Z","actor":"a","via":"cli","entity":"task","id":"` + id + `","change":"` + change + `"}` + "\n"
	}
	o := ev("t1", "created", "01") + ev("t1", "status", "03")
	th := ev("t1", "created", "01") + ev("t1", "title", "02")
	if got, want := string(Lines("events.jsonl", nil, []byte(o), []byte(th))), ev("t1", "created", "01")+ev("t1", "title", "02")+ev("t1", "status", "03"); got != want {
		t.Errorf("events:\n%s\nwant\n%s", got, want)
	}
}
