package engine

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A line over MaxLine is skipped, not an error: the lines around it are read, numbered
// and positioned as if it were there, and the report names it with its size.
func TestScanLinesSkipsOverLongLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.jsonl")
	long := strings.Repeat("a", MaxLine+1)
	longer := strings.Repeat("b", 3*MaxLine)
	data := "one\n" + long + "\ntwo\n" + longer + "\nthree\n"
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	var got []Line
	var skipped []*LineTooLongError
	err := ScanLinesReport(path, 0, func(l Line) error {
		l.Data = bytes.Clone(l.Data)
		got = append(got, l)
		return nil
	}, func(e *LineTooLongError) { skipped = append(skipped, e) })
	if err != nil {
		t.Fatalf("ScanLinesReport: %v", err)
	}
	want := []Line{
		{N: 1, Data: []byte("one"), Next: 4},
		{N: 3, Data: []byte("two"), Next: int64(4 + len(long) + 1 + 4)},
		{N: 5, Data: []byte("three"), Next: int64(len(data))},
	}
	if len(got) != len(want) {
		t.Fatalf("lines %+v, want 3", got)
	}
	for i := range want {
		if got[i].N != want[i].N || string(got[i].Data) != string(want[i].Data) || got[i].Next != want[i].Next {
			t.Errorf("line %d: %d %q next %d, want %d %q next %d", i, got[i].N, got[i].Data, got[i].Next, want[i].N, want[i].Data, want[i].Next)
		}
	}
	if len(skipped) != 2 || skipped[0].Line != 2 || skipped[0].Size != int64(len(long)) || skipped[0].Offset != 4 ||
		skipped[1].Line != 4 || skipped[1].Size != int64(len(longer)) {
		t.Fatalf("skipped %+v", skipped)
	}
	if msg := skipped[1].Error(); !strings.Contains(msg, "line 4") || !strings.Contains(msg, "skipped") {
		t.Errorf("message %q", msg)
	}
	// Resuming from a Next past a skipped line goes on from there.
	got = nil
	if err := ScanLines(path, want[1].Next, func(l Line) error { got = append(got, l); return nil }); err != nil || len(got) != 1 || got[0].Next != int64(len(data)) {
		t.Fatalf("resumed: %+v, %v", got, err)
	}
}

func TestLineLimitFromEnvOnlyLowers(t *testing.T) {
	for env, want := range map[string]int{"": defaultMaxLine, "4096": 4096, "0": defaultMaxLine, "-1": defaultMaxLine, "99999999": defaultMaxLine, "x": defaultMaxLine} {
		if got := lineLimit(env); got != want {
			t.Errorf("lineLimit(%q) = %d, want %d", env, got, want)
		}
	}
}
