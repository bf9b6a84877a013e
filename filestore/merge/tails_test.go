package merge

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// Tails makes, of what two sides appended since their common version, the merge Lines
// makes of the two whole files — without holding theirs.
func TestTailsIsLinesOfAppendedFiles(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	line := func(id string, at time.Time) string {
		return fmt.Sprintf(`{"id":%q,"senderId":"a","content":"x","createdAt":%q}`+"\n", id, at.Format(time.RFC3339Nano))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for run := range 300 {
		var base, ours, theirs strings.Builder
		n := 0
		for range rng.IntN(5) {
			n++
			base.WriteString(line(fmt.Sprint("b", n), t0.Add(time.Duration(n)*time.Second)))
		}
		at := time.Duration(n+1) * time.Second
		both := rng.IntN(3) // records both sides appended (a message delivered to both)
		for i := range rng.IntN(6) + both {
			at += time.Duration(rng.IntN(3)) * time.Second
			l := line(fmt.Sprint("o", run, "-", i), t0.Add(at))
			if i < both {
				l = line(fmt.Sprint("s", run, "-", i), t0.Add(at))
				theirs.WriteString(l)
			}
			ours.WriteString(l)
		}
		at = time.Duration(n+1) * time.Second
		for i := range rng.IntN(6) {
			at += time.Duration(rng.IntN(3)) * time.Second
			theirs.WriteString(line(fmt.Sprint("t", run, "-", i), t0.Add(at)))
		}
		want := Lines("agents/w1/chat.jsonl", nil, []byte(base.String()+ours.String()), []byte(base.String()+theirs.String()))
		var got bytes.Buffer
		got.WriteString(base.String())
		if err := Tails("agents/w1/chat.jsonl", []byte(ours.String()), strings.NewReader(theirs.String()), &got, 1<<20); err != nil {
			t.Fatal(err)
		}
		if got.String() != string(want) {
			t.Fatalf("run %d:\nbase:\n%sours:\n%stheirs:\n%sLines:\n%sTails:\n%s", run, base.String(), ours.String(), theirs.String(), want, got.String())
		}
	}
}

func TestTailsRefusesAnOverLongLine(t *testing.T) {
	long := `{"id":"x","content":"` + strings.Repeat("a", 100) + `"}` + "\n"
	var out bytes.Buffer
	if err := Tails("events.jsonl", nil, strings.NewReader(long), &out, 64); err == nil || !strings.Contains(err.Error(), "over 64 bytes") {
		t.Errorf("err = %v; want the line named as over the limit", err)
	}
}
