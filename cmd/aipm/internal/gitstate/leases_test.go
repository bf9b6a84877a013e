package gitstate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aipm/aipm/filestore"
)

// TestPublishedFollowsTheRemote: the leases a round leaves on the remote are what
// Published returns, not what the clone wrote since; a round that cannot reach the remote
// makes it unreachable until one does, and the leases it last held stay known.
func TestPublishedFollowsTheRemote(t *testing.T) {
	a, _ := twoClones(t)
	if _, _, err := a.AddAgent(owner, filestore.NewAgent{ID: "w1", AIType: "sim", ParentID: "owner"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.ClaimLeases("ma", []string{"w1"}); err != nil {
		t.Fatal(err)
	}
	sy := &Syncer{Store: a, Remote: "origin"}
	p := NewPublished(a.Root(), "origin")
	if _, since, err := p.Published(); !since.IsZero() || err != nil {
		t.Fatalf("before any round: since %v, err %v", since, err)
	}
	r, err := sy.Once(context.Background())
	if err != nil || !r.Current || r.Head == "" {
		t.Fatalf("round: %+v, %v", r, err)
	}
	now := time.Now()
	p.Observe(r, err, now)
	<-p.Changed()
	leases, since, err := p.Published()
	if err != nil || !since.Equal(now) || leases["w1"] == nil || leases["w1"].MachineID != "ma" {
		t.Fatalf("after a round: %v since %v, %v", leases, since, err)
	}
	// A move written here but not pushed is not the remote's.
	if _, err := a.MoveAgent(owner, "w1", "mb"); err != nil {
		t.Fatal(err)
	}
	if leases, _, _ := p.Published(); leases["w1"].MachineID != "ma" {
		t.Fatalf("an unpushed move counts as published: %+v", leases["w1"])
	}
	// The remote goes away: the round fails, the remote is unreachable, the last leases stay.
	origin := mustGit(t, a.Root(), "remote", "get-url", "origin")
	if err := os.Rename(origin, origin+".away"); err != nil {
		t.Fatal(err)
	}
	r, err = sy.Once(context.Background())
	if err == nil || r.Current {
		t.Fatalf("a round without the remote: %+v, %v", r, err)
	}
	p.Observe(r, err, time.Now())
	leases, since, perr := p.Published()
	if !since.IsZero() || !errors.Is(perr, err) || leases["w1"].MachineID != "ma" {
		t.Fatalf("unreachable: %v since %v, %v", leases, since, perr)
	}
	// Back: the move is pushed, and published.
	if err := os.Rename(origin+".away", origin); err != nil {
		t.Fatal(err)
	}
	r, err = sy.Once(context.Background())
	p.Observe(r, err, time.Now())
	leases, since, perr = p.Published()
	if err != nil || since.IsZero() || perr != nil || leases["w1"].MachineID != "mb" || leases["w1"].MovedBy != "owner" {
		t.Fatalf("back: %+v since %v, %v / %v", leases["w1"], since, perr, err)
	}
	if _, err := os.Stat(filepath.Join(a.Dir(), "leases", "w1.json")); err != nil {
		t.Fatal(err)
	}
}
