package gitstate

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aipm/aipm/filestore"
)

// LastRound is what this clone's latest sync round did, for `aipm status` and `aipm
// doctor`. It is kept in the machine's directory for the repository (Store.MachineDir),
// outside the store, so that writing it every round wakes no watcher and it never syncs.
type LastRound struct {
	At     time.Time `json:"at"`
	Remote string    `json:"remote"`
	// Error is why the round failed; "" when it did not.
	Error string `json:"error,omitempty"`
	Round *Round `json:"round,omitempty"`
	// OKAt is the end of the latest round that did not fail; PushedAt of the latest that
	// pushed.
	OKAt     *time.Time `json:"ok_at,omitempty"`
	PushedAt *time.Time `json:"pushed_at,omitempty"`
	// Recovered is the latest round that restored what a merge aipm did not make dropped,
	// or found the remote rewound: kept past the rounds after it, which say nothing of it.
	Recovered *Recovery `json:"recovered,omitempty"`
	// Suspect is the latest round that named suspect commits (Round.Suspect), kept past
	// the rounds after it, which do not name them again.
	Suspect *Recovery `json:"suspect,omitempty"`
}

// Recovery is what one round brought back, or named, and when.
type Recovery struct {
	At   time.Time `json:"at"`
	What []string  `json:"what"` // Round.Rewound, then Round.Restored
}

const lastRoundFile = "sync.json"

// ReadLastRound returns the clone's latest sync round on this machine, nil when it made
// none.
func ReadLastRound(s *filestore.Store) (*LastRound, error) {
	dir, err := s.MachineDir()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(dir, lastRoundFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var l LastRound
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// record writes what a round did over the previous record, keeping when the clone last
// synced without error and last pushed. A record that cannot be written costs the
// round nothing: the round's own outcome is reported by its caller.
func (s *Syncer) record(r *Round, roundErr error) {
	dir, err := s.Store.MachineDir()
	if err != nil {
		return
	}
	prev, _ := ReadLastRound(s.Store)
	now := time.Now().UTC()
	l := LastRound{At: now, Remote: s.Remote, Round: r}
	if prev != nil {
		l.OKAt, l.PushedAt, l.Recovered, l.Suspect = prev.OKAt, prev.PushedAt, prev.Recovered, prev.Suspect
	}
	if r != nil && len(r.Suspect) > 0 {
		l.Suspect = &Recovery{At: now, What: r.Suspect}
		_ = rememberSuspects(dir, now, r.Suspect) // for doctor; the round has named them
	}
	if r != nil && (r.Rewound != "" || len(r.Restored) > 0) {
		l.Recovered = &Recovery{At: now}
		if r.Rewound != "" {
			l.Recovered.What = append(l.Recovered.What, r.Rewound)
		}
		l.Recovered.What = append(l.Recovered.What, r.Restored...)
	}
	if roundErr != nil {
		l.Error = roundErr.Error()
	} else {
		l.OKAt = &now
	}
	if r != nil && r.Pushed {
		l.PushedAt = &now
	}
	data, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return
	}
	path := filepath.Join(dir, lastRoundFile)
	tmp := path + ".tmp"
	if os.WriteFile(tmp, append(data, '\n'), 0o600) == nil {
		_ = os.Rename(tmp, path)
	}
}

// Unpushed counts the commits of the state branch that the remote's branch, as last
// fetched, lacks; uncommitted changes are not counted (the next round commits them).
func Unpushed(root, remote string) (int, error) {
	rref := "refs/remotes/" + remote + "/" + Branch
	g := gitCmd{dir: root}
	span := ref
	if g.ok("rev-parse", "--verify", "-q", rref) {
		span = rref + ".." + ref
	}
	out, err := g.run("rev-list", "--count", span)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(out))
}
