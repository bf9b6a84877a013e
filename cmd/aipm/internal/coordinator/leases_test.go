package coordinator

import (
	"strings"
	"testing"
	"time"

	"github.com/aipm/aipm/filestore"
)

// remoteAt is a remote whose answers the test sets.
type remoteAt struct{}

func (remoteAt) Remote() string { return "origin" }
func (remoteAt) Published() (map[string]*filestore.Lease, time.Time, error) {
	return nil, time.Time{}, nil
}
func (remoteAt) Changed() <-chan struct{} { return nil }

// TestLeaseRulesWithARemote: the rules by which a machine claims and holds an agent when
// the remote decides the leases (lease of 60 s: takeover wait 60 s, fencing margin 10 s).
func TestLeaseRulesWithARemote(t *testing.T) {
	c := &Coordinator{machine: "ma", leaseTTL: time.Minute, opt: Options{Remote: remoteAt{}}}
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	lapsed := &filestore.Lease{AgentID: "w1", MachineID: "mb", AcquiredAt: at(-100), RenewedAt: at(-70), ExpiresAt: at(-10)}
	held := &filestore.Lease{AgentID: "w1", MachineID: "mb", AcquiredAt: at(-100), RenewedAt: at(-5), ExpiresAt: at(55)}
	for _, tc := range []struct {
		name  string
		l     *filestore.Lease
		since time.Time
		may   bool
	}{
		{"free, remote unreachable", nil, time.Time{}, false},
		{"free, remote answers", nil, at(-1), true},
		{"held elsewhere (the claim leaves it alone)", held, at(-1), true},
		{"lapsed elsewhere, remote back 59 s ago", lapsed, at(-59), false},
		{"lapsed elsewhere, remote back 60 s ago", lapsed, at(-60), true},
		{"lapsed elsewhere, remote unreachable", lapsed, time.Time{}, false},
	} {
		if why := c.mayClaim(tc.l, at(0), tc.since); (why == "") != tc.may {
			t.Errorf("%s: may claim %v (%q), want %v", tc.name, why == "", why, tc.may)
		}
	}

	local := &filestore.Lease{AgentID: "w1", MachineID: "ma", AcquiredAt: at(-40), RenewedAt: at(-1), ExpiresAt: at(59)}
	pub := func(machine string, acquired, expires int) *filestore.Lease {
		return &filestore.Lease{AgentID: "w1", MachineID: machine, AcquiredAt: at(acquired), RenewedAt: at(expires - 60), ExpiresAt: at(expires)}
	}
	for _, tc := range []struct {
		name  string
		pub   *filestore.Lease
		until time.Time
		why   string
	}{
		{"not on the remote yet", nil, time.Time{}, "starts once origin holds the claim"},
		{"the remote kept another machine's claim", pub("mb", -40, 50), time.Time{}, "starts once origin holds the claim"},
		{"an older claim of ours", pub("ma", -300, 50), time.Time{}, "starts once origin holds the claim"},
		{"held there: runs until the margin", pub("ma", -40, 30), at(20), ""},
		{"renewals stopped reaching it", pub("ma", -40, 10), time.Time{}, "no renewal has reached origin"},
		{"inside the margin", pub("ma", -40, 9), time.Time{}, "stopped before the lease lapses there"},
	} {
		until, why := c.published(local, tc.pub, at(0))
		if !until.Equal(tc.until) || (tc.why == "") != (why == "") || !strings.Contains(why, tc.why) {
			t.Errorf("%s: until %v, %q; want %v, %q", tc.name, until, why, tc.until, tc.why)
		}
	}
}
