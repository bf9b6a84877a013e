package gitstate

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestSuspectsAreRememberedUntilAcknowledged: the commits rounds name are kept, once each,
// past the rounds that name others or none, at most maxRemembered of them, until one is
// acknowledged by a prefix of its id.
func TestSuspectsAreRememberedUntilAcknowledged(t *testing.T) {
	a, _ := twoClones(t)
	dir, err := a.MachineDir()
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	line := func(id, what string) string {
		return "commit " + id + " by Carol <carol@example.com> (" + what + ") was not made by aipm: look at it with `git -C .ai-pm show " + id + "`"
	}
	if err := rememberSuspects(dir, t0, []string{line("aaaaaaaaa1", "one"), line("bbbbbbbbb2", "two")}); err != nil {
		t.Fatal(err)
	}
	// A later round names one of them again, and a new one; then a round names none.
	if err := rememberSuspects(dir, t0.Add(time.Hour), []string{line("bbbbbbbbb2", "two again"), line("ccccccccc3", "three")}); err != nil {
		t.Fatal(err)
	}
	if err := rememberSuspects(dir, t0.Add(2*time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	list, err := ReadSuspects(a)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range list {
		got = append(got, c.Commit+" "+c.At.Format("15:04"))
	}
	if want := "aaaaaaaaa1 12:00,bbbbbbbbb2 12:00,ccccccccc3 13:00"; strings.Join(got, ",") != want {
		t.Fatalf("remembered %v, want %s", got, want)
	}
	if !strings.Contains(list[1].Why, "(two)") {
		t.Errorf("why = %q, want the first round's line", list[1].Why)
	}
	// Acknowledged by a prefix, or by the whole id; unknown and malformed ids are errors.
	if c, err := AckSuspect(a, "bbbbbbb"); err != nil || c.Commit != "bbbbbbbbb2" {
		t.Fatalf("ack bbbbbbb = %+v, %v", c, err)
	}
	if _, err := AckSuspect(a, "aaaaaaaaa1"+strings.Repeat("0", 30)); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"bbbbbbbbb2", "dddddddd", "abc", "not-a-commit"} {
		if _, err := AckSuspect(a, bad); err == nil {
			t.Errorf("ack %q: no error", bad)
		}
	}
	if list, _ = ReadSuspects(a); len(list) != 1 || list[0].Commit != "ccccccccc3" {
		t.Fatalf("after the acks: %+v, want ccccccccc3 alone", list)
	}
	// A remote that pushes commit after commit by hand grows the list to its bound only.
	var many []string
	for i := range maxRemembered + 50 {
		many = append(many, line(fmt.Sprintf("%010x", 0xe000000000+i), "flood"))
	}
	if err := rememberSuspects(dir, t0.Add(3*time.Hour), many); err != nil {
		t.Fatal(err)
	}
	if list, _ = ReadSuspects(a); len(list) != maxRemembered || list[len(list)-1].Commit != fmt.Sprintf("%010x", 0xe000000000+maxRemembered+49) {
		t.Fatalf("%d remembered, last %s; want the newest %d", len(list), list[len(list)-1].Commit, maxRemembered)
	}
}
