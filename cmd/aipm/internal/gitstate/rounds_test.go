package gitstate

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aipm/aipm/filestore"
)

func TestNextGap(t *testing.T) {
	const interval = 2 * time.Second
	quiet, busy, refused := &Round{}, &Round{Committed: true}, &Round{Committed: true, Rejected: 1}
	for _, c := range []struct {
		name     string
		gap      time.Duration
		r        *Round
		took     time.Duration
		interval time.Duration
		want     time.Duration
	}{
		{"a quiet round: a lone change leaves at once", time.Second, quiet, 10 * time.Millisecond, interval, minGap},
		{"a failed round with nothing done", time.Second, nil, 10 * time.Millisecond, interval, minGap},
		{"the first busy round", 0, busy, 10 * time.Millisecond, interval, minGap},
		{"busy rounds double the gap", minGap, busy, 10 * time.Millisecond, interval, 2 * minGap},
		{"up to the interval", 1500 * time.Millisecond, busy, 10 * time.Millisecond, interval, interval},
		{"at least twice what the round took", minGap, busy, 700 * time.Millisecond, interval, 1400 * time.Millisecond},
		{"refused: up to twice the interval", interval, refused, 10 * time.Millisecond, interval, 2 * interval},
		{"never over a short interval", 0, quiet, 0, 100 * time.Millisecond, 100 * time.Millisecond},
		{"nor when busy", time.Second, busy, time.Second, 100 * time.Millisecond, 100 * time.Millisecond},
	} {
		if got := nextGap(c.gap, c.r, c.took, c.interval); got != c.want {
			t.Errorf("%s: nextGap(%v, %+v, %v, %v) = %v, want %v", c.name, c.gap, c.r, c.took, c.interval, got, c.want)
		}
	}
}

func TestRetryWait(t *testing.T) {
	for n := 1; n <= 12; n++ {
		c := min(retryFirst<<min(n-1, 10), retryMost)
		for range 50 {
			if w := retryWait(n); w < c/2 || w >= c {
				t.Fatalf("retryWait(%d) = %v, want in [%v, %v)", n, w, c/2, c)
			}
		}
	}
}

// A tick that comes while the gap runs does not cut it short: a busy clone's rounds are
// spaced by the gap, not by the interval.
func TestPauseKeepsTheGap(t *testing.T) {
	tick := make(chan time.Time, 1)
	tick <- time.Now()
	const gap = 300 * time.Millisecond
	t0 := time.Now()
	if !pause(context.Background(), tick, nil, gap) {
		t.Fatal("pause = false without an end")
	}
	if took := time.Since(t0); took < gap {
		t.Errorf("pause returned after %v, before the gap of %v", took, gap)
	}
	// ... and the tick was not lost: with no wake (nil), pause returned for it.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if pause(ctx, make(chan time.Time), nil, time.Hour) {
		t.Error("pause = true after ctx ended")
	}
}

// A round whose pushes are refused more times than a fixed count would allow keeps
// trying within its time budget, and gets its change in without forcing: every commit
// the others pushed meanwhile stays in the remote's history.
func TestRoundOutlastsRefusals(t *testing.T) {
	a, _ := twoClones(t)
	origin := strings.TrimSpace(mustGit(t, a.Root(), "remote", "get-url", "origin"))
	// Another clone's push lands between each of A's fetches and its push, 9 times: the
	// origin's pre-receive hook moves the branch itself (outside the push's quarantine),
	// so receive-pack then finds the ref moved and refuses A's update.
	hook := filepath.Join(origin, "hooks", "pre-receive")
	count := filepath.Join(t.TempDir(), "count")
	script := `#!/bin/sh
n=$(cat "` + count + `" 2>/dev/null || echo 0)
[ "$n" -ge 9 ] && exit 0
echo $((n+1)) > "` + count + `"
unset GIT_QUARANTINE_PATH GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES
tip=$(git rev-parse refs/heads/aipm/state)
c=$(git commit-tree -p "$tip" -m "another clone $n" "$tip^{tree}")
git update-ref refs/heads/aipm/state "$c" "$tip"
`
	if err := os.WriteFile(hook, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := a.CreateTask(owner, filestore.NewTask{Title: "Made while others push"}); err != nil {
		t.Fatal(err)
	}
	r, err := (&Syncer{Store: a, Remote: "origin"}).Once(context.Background())
	if err != nil {
		t.Fatalf("round: %+v, %v", r, err)
	}
	if !r.Pushed || r.Rejected != 9 {
		t.Errorf("round = %+v, want pushed after 9 refusals", r)
	}
	data, _ := os.ReadFile(count)
	if n, _ := strconv.Atoi(strings.TrimSpace(string(data))); n != 9 {
		t.Errorf("the hook moved the branch %d times, want 9", n)
	}
	tip := mustGit(t, origin, "rev-parse", "refs/heads/"+Branch)
	if head := mustGit(t, a.Dir(), "rev-parse", "HEAD"); head != tip {
		t.Errorf("origin at %s, A's head %s", tip, head)
	}
	log := mustGit(t, origin, "log", "--format=%s", Branch)
	for i := range 9 {
		if !strings.Contains(log, "another clone "+strconv.Itoa(i)) {
			t.Errorf("the other clone's commit %d is not in origin's history:\n%s", i, log)
		}
	}
}

// pack packs the loose objects once they pass looseLimit, well before megabytes pile up.
func TestPackPacksLooseObjects(t *testing.T) {
	gitEnv(t)
	dir := t.TempDir()
	mustGit(t, dir, "init", "-q")
	// Incompressible blobs, a little over the limit in all.
	blob := make([]byte, 64<<10)
	for range (looseLimit + 256) / 64 {
		rand.Read(blob)
		if _, err := (gitCmd{dir: dir, stdin: blob}).run("hash-object", "-w", "--stdin"); err != nil {
			t.Fatal(err)
		}
	}
	loose := func() (size, packs int) {
		for _, l := range strings.Split(mustGit(t, dir, "count-objects", "-v"), "\n") {
			k, v, _ := strings.Cut(l, ": ")
			n, _ := strconv.Atoi(v)
			switch k {
			case "size":
				size = n
			case "packs":
				packs = n
			}
		}
		return size, packs
	}
	if size, _ := loose(); size <= looseLimit || size > 8<<10 {
		t.Fatalf("%d KiB loose before pack, want just over %d", size, looseLimit)
	}
	pack(dir)
	if size, packs := loose(); size != 0 || packs == 0 {
		t.Errorf("after pack: %d KiB loose, %d pack(s); want everything packed", size, packs)
	}
}
