package merge

import (
	"slices"
	"strings"
	"testing"

	"github.com/aipm/aipm/filestore"
)

func TestMissing(t *testing.T) {
	msg := func(id, at string) string {
		return `{"id":"` + id + `","senderId":"a","content":"x","createdAt":"2026-01-01T00:00:0` + at + `Z"}` + "\n"
	}
	have := msg("m1", "1") + msg("m3", "3")
	want := msg("m1", "1") + msg("m2", "2") + msg("m3", "3") + msg("m4", "4") + msg("m2", "2")
	got := string(Missing("agents/a/chat.jsonl", []byte(have), []byte(want)))
	if got != msg("m2", "2")+msg("m4", "4") {
		t.Errorf("Missing = %q", got)
	}
	if m := Missing("agents/a/chat.jsonl", []byte(want), []byte(have)); m != nil {
		t.Errorf("Missing of a subset = %q, want nil", m)
	}
	// the history compares whole lines: two events of one entity are two records
	ev1 := `{"at":"2026-01-01T00:00:01Z","id":"tsk_1","change":"created"}` + "\n"
	ev2 := `{"at":"2026-01-01T00:00:02Z","id":"tsk_1","change":"status"}` + "\n"
	if got := string(Missing("events.jsonl", []byte(ev1), []byte(ev1+ev2))); got != ev2 {
		t.Errorf("Missing in events.jsonl = %q, want the second event", got)
	}
	if n := CountLines([]byte(ev1 + ev2 + "\n" + `{"torn`)); n != 2 {
		t.Errorf("CountLines = %d, want 2", n)
	}
}

func TestLostFieldsAndRestore(t *testing.T) {
	base := mergeBaseTask()
	ours := base
	ours.Title = "Ours renamed"
	ours.UpdatedAt = *mtAt(1)
	ours.Version = 4
	theirs := base
	theirs.Priority = "urgent"
	theirs.UpdatedAt = *mtAt(2)
	theirs.Version = 4
	// a hand merge that took ours whole (`git merge -X ours` on overlapping lines)
	hand := ours
	hand.Version = 5
	lost, err := LostFields(filestore.KindTask, enc(t, base), enc(t, ours), enc(t, theirs), enc(t, hand))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := lost["priority"]; !ok || len(lost) != 2 { // priority, and updated_at with it
		t.Fatalf("LostFields = %v, want priority (and updated_at)", lost)
	}
	// nothing lost when the hand merge holds Merge's result
	whole := ours
	whole.Priority = "urgent"
	if l, err := LostFields(filestore.KindTask, enc(t, base), enc(t, ours), enc(t, theirs), enc(t, whole)); err != nil || l != nil {
		t.Errorf("LostFields of a full merge = %v, %v", l, err)
	}
	// free text both sides changed is the hand merge's choice
	theirs2 := theirs
	theirs2.Title = "Theirs renamed"
	if l, err := LostFields(filestore.KindTask, enc(t, base), enc(t, ours), enc(t, theirs2), enc(t, hand)); err != nil || l["title"] != nil || l["priority"] == nil {
		t.Errorf("LostFields with a title conflict = %v, %v; want priority only", l, err)
	}

	// the current file still holds the hand merge's priority: restored, version bumped
	data, set, err := RestoreFields(filestore.KindTask, enc(t, hand), enc(t, hand), lost)
	if err != nil || !slices.Equal(set, []string{"priority"}) {
		t.Fatalf("RestoreFields = %v, %v", set, err)
	}
	got := decTask(t, data)
	if got.Priority != "urgent" || got.Version != 6 || got.Title != "Ours renamed" || !got.UpdatedAt.Equal(*mtAt(2)) {
		t.Errorf("restored task = %+v", got)
	}
	// a priority changed since the hand merge is a newer decision: left alone
	later := hand
	later.Priority = "low"
	later.Version = 6
	if data, set, err := RestoreFields(filestore.KindTask, enc(t, later), enc(t, hand), lost); err != nil || data != nil || set != nil {
		t.Errorf("RestoreFields over a later change = %s, %v, %v", data, set, err)
	}
	// already restored (by another clone): nothing to do
	if data, _, err := RestoreFields(filestore.KindTask, enc(t, got), enc(t, hand), lost); err != nil || data != nil {
		t.Errorf("RestoreFields twice = %s, %v", data, err)
	}
	if _, err := LostFields(filestore.KindTask, nil, enc(t, ours), enc(t, theirs), []byte("<<<<<<<")); err == nil || !strings.Contains(err.Error(), "merge's version") {
		t.Errorf("LostFields of a broken file: %v", err)
	}
}
