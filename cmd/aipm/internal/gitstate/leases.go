package gitstate

import (
	"strings"
	"sync"
	"time"

	"github.com/aipm/aipm/filestore"
)

// Published follows what the remote holds of the agent leases, round by round: the
// leases as of the last commit the remote's branch held at the end of a round, and since
// when the rounds reach it. `aipm run` starts an agent only once the remote holds this
// machine's lease of it (the remote accepted the claim: a push is a compare-and-swap),
// and stops it before that lease can lapse there.
type Published struct {
	root    string
	remote  string
	mu      sync.Mutex
	leases  map[string]*filestore.Lease
	head    string
	since   time.Time // zero while the rounds fail
	err     error     // why the last round failed
	changed chan struct{}
}

// NewPublished follows the remote of the clone at root.
func NewPublished(root, remote string) *Published {
	return &Published{root: root, remote: remote, changed: make(chan struct{}, 1)}
}

// Remote names the remote.
func (p *Published) Remote() string { return p.remote }

// Observe takes in what a round did (Syncer.Loop's report): a round that left the remote
// at this clone's head publishes the leases of that commit; a round that did not reach it
// makes the remote unreachable until one does.
func (p *Published) Observe(r *Round, roundErr error, now time.Time) {
	switch {
	case r != nil && r.Current && r.Head != "":
		p.mu.Lock()
		same := r.Head == p.head
		p.mu.Unlock()
		var leases map[string]*filestore.Lease
		var err error
		if !same {
			if leases, err = leasesAt(gitCmd{dir: p.root}, r.Head, now); err != nil {
				roundErr = err
				break
			}
		}
		p.mu.Lock()
		if !same {
			p.leases, p.head = leases, r.Head
		}
		if p.since.IsZero() {
			p.since = now
		}
		p.err = nil
		p.mu.Unlock()
		p.signal()
		return
	case roundErr == nil:
		return // no remote to reach (commits only)
	}
	p.mu.Lock()
	p.since, p.err = time.Time{}, roundErr
	p.mu.Unlock()
	p.signal()
}

func (p *Published) signal() {
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

// Published returns the remote's leases by agent as of the last round that reached it,
// and since when the rounds have reached it without a failure (zero when the last
// failed, err then saying why, or when none ran yet).
func (p *Published) Published() (leases map[string]*filestore.Lease, reachableSince time.Time, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.leases, p.since, p.err
}

// Changed is signalled after every round it observed.
func (p *Published) Changed() <-chan struct{} { return p.changed }

// leasesAt reads the lease files of commit head.
func leasesAt(g gitCmd, head string, now time.Time) (map[string]*filestore.Lease, error) {
	out, err := g.raw("ls-tree", "-z", "--name-only", head, "leases/")
	if err != nil {
		return nil, err
	}
	var specs []string
	for _, name := range strings.Split(string(out), "\x00") {
		if strings.HasSuffix(name, ".json") {
			specs = append(specs, head+":"+name)
		}
	}
	leases := map[string]*filestore.Lease{}
	if len(specs) == 0 {
		return leases, nil
	}
	sizes, err := g.catSizes(specs)
	if err != nil {
		return nil, err
	}
	var small []string
	for i, n := range sizes {
		if n >= 0 && n <= maxLeaseFile {
			small = append(small, specs[i])
		}
	}
	objs, err := g.catBatch(small)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		if !o.ok {
			continue
		}
		if l, err := filestore.ParseLease(o.data, now); err == nil {
			leases[l.AgentID] = l
		}
	}
	return leases, nil
}

// maxLeaseFile bounds a lease file read from the remote: a real one is a few hundred
// bytes.
const maxLeaseFile = 64 << 10
