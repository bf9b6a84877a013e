package filestore

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aipm/aipm/filestore/internal/engine"
)

// EnvLeaseSeconds overrides how long an agent lease lasts without renewal (default
// DefaultLeaseSeconds); tests shorten it to see a takeover.
const EnvLeaseSeconds = "AIPM_LEASE_SECONDS"

// DefaultLeaseSeconds is how long a lease lasts: a machine renews it every third of that,
// so a few missed renewals (a slow sync) do not lose it, and a machine that stopped frees
// its agents within a minute.
const DefaultLeaseSeconds = 60

// Lease is leases/<agent-id>.json: which machine runs the agent, until when, and whether
// the agent has a live chat session there. It is committed, so a sync carries it to every
// clone: `aipm run` starts an agent only where its lease is its own or free, and a
// conversation partner on another machine reads the agent's presence from it.
type Lease struct {
	AgentID   string `json:"agent_id"`
	MachineID string `json:"machine_id"`
	// AcquiredAt is when this machine took the lease (by a claim, a takeover or a move);
	// a merge of two claims keeps the later.
	AcquiredAt time.Time `json:"acquired_at"`
	RenewedAt  time.Time `json:"renewed_at"`
	// ExpiresAt is when the lease lapses unless renewed; past it, any machine may take it.
	ExpiresAt time.Time `json:"expires_at"`
	// ChatLive says the agent had a live chat session on the machine at the last renewal
	// (renewals happen at once when this changes). ChatSeenAt is the last moment the
	// machine knew such a session live: the renewal that saw it, or when it ended.
	ChatLive   bool       `json:"chat_live"`
	ChatSeenAt *time.Time `json:"chat_seen_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
	Version    int        `json:"version"`
	// MovedBy names the human whose `aipm agent move` gave the lease to its machine (kept
	// over renewals, empty after a claim or takeover): where two machines' changes meet in
	// a merge, a move made since the common version beats a claim, so that no takeover
	// undoes a placement a person chose.
	MovedBy string `json:"moved_by,omitempty"`
	// Home is the machine a human's move placed the agent on, kept over renewals and
	// takeovers: when another machine took the agent over while its home was away, the
	// home, running again, asks for it back (HomeBackAt, renewed while it runs) and the
	// holder lets it go as soon as the agent has no process there.
	Home       string     `json:"home,omitempty"`
	HomeBackAt *time.Time `json:"home_back_at,omitempty"`
}

// HomeWaits says whether machine must leave l alone because the agent's home is another
// machine that asked for it back within the lease duration.
func (l *Lease) HomeWaits(machine string, now time.Time, ttl time.Duration) bool {
	return l != nil && l.Home != "" && l.Home != machine && l.HomeBackAt != nil && now.Sub(*l.HomeBackAt) < ttl
}

// Held reports whether the lease binds its agent to its machine at now.
func (l *Lease) Held(now time.Time) bool { return l != nil && now.Before(l.ExpiresAt) }

// LeaseDuration is how long a lease lasts: EnvLeaseSeconds, else DefaultLeaseSeconds.
func LeaseDuration() (time.Duration, error) {
	d := DefaultLeaseSeconds * time.Second
	if v := os.Getenv(EnvLeaseSeconds); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return 0, newErr(ErrInvalid, "invalid_setting", "set "+EnvLeaseSeconds+" to a whole number of seconds, or unset it",
				"%s=%q is not a positive number of seconds", EnvLeaseSeconds, clip(v))
		}
		d = time.Duration(n) * time.Second
	}
	return d, nil
}

func (s *Store) leasePath(agentID string) string { return s.path("leases", agentID+".json") }

// Lease reads an agent's lease; nil (and no error) when it has none.
func (s *Store) Lease(agentID string) (*Lease, error) {
	if err := ValidateAgentID(agentID); err != nil {
		return nil, err
	}
	var l Lease
	if err := s.readJSON(s.leasePath(agentID), &l); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	if ttl, err := LeaseDuration(); err == nil {
		l.clamp(s.Now(), ttl)
	}
	return &l, nil
}

// ParseLease decodes a lease file read from elsewhere (the remote's copy of the state
// branch) and bounds it as Lease does a local one.
func ParseLease(data []byte, now time.Time) (*Lease, error) {
	var l Lease
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, err
	}
	if err := ValidateAgentID(l.AgentID); err != nil {
		return nil, err
	}
	if ttl, err := LeaseDuration(); err == nil {
		l.clamp(now, ttl)
	}
	return &l, nil
}

// clamp bounds what a lease file can claim, wherever it came from (a sync brings other
// machines' files): a lease lasts at most twice the lease duration from its renewal (a
// margin for machines whose setting or clock differs a little), and a renewal dated more
// than that ahead of this machine's clock renews nothing. A lease pushed with an expiry in
// 2126 would otherwise keep its agent off every other machine for a century.
func (l *Lease) clamp(now time.Time, ttl time.Duration) {
	if limit := l.RenewedAt.Add(2 * ttl); l.ExpiresAt.After(limit) {
		l.ExpiresAt = limit
	}
	if l.RenewedAt.After(now.Add(2*ttl)) && l.ExpiresAt.After(now) {
		l.ExpiresAt = now
	}
}

// Leases lists every lease, by agent. A file that does not decode is skipped here and
// reported by `aipm doctor`.
func (s *Store) Leases() ([]*Lease, error) {
	entries, err := engine.ReadDir(s.path("leases"))
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	var out []*Lease
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || e.IsDir() || ValidateAgentID(id) != nil {
			continue
		}
		if l, err := s.Lease(id); err == nil && l != nil {
			out = append(out, l)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].AgentID < out[j].AgentID })
	return out, nil
}

// chatNow is what this machine knows of an agent's chat sessions: one is live, or when the
// latest ended (nil if never).
func (s *Store) chatNow(agentID string) (live bool, ended *time.Time, err error) {
	ss, err := s.Sessions(agentID)
	if err != nil {
		return false, nil, err
	}
	now := s.Now()
	for _, se := range ss {
		if se.Purpose == PurposeChat && se.Live(now) {
			return true, nil, nil
		}
	}
	return false, s.latestChatRecord(agentID).EndedAt, nil
}

// leaseDue says whether machine must write agent's lease l now: free or lapsed (a claim),
// a third of the lease gone (a renewal), or the chat presence changed.
func leaseDue(l *Lease, machine string, now time.Time, ttl time.Duration, chat bool) bool {
	if l == nil || !l.Held(now) {
		return true
	}
	if l.MachineID != machine {
		return false
	}
	return l.ExpiresAt.Sub(now) < ttl*2/3 || l.ChatLive != chat
}

// ClaimLeases takes or renews, for machine, the leases of the agents named: a free or
// lapsed lease is taken (recorded in the history, with whose it was), one of machine's own
// is renewed when a third of it is gone or the agent's chat presence changed, another
// machine's live lease is left alone. It returns every named agent's lease as it now
// stands: the caller runs only the agents whose lease is machine's. It takes the lock only
// when something is to be written.
func (s *Store) ClaimLeases(machine string, agents []string) (map[string]*Lease, error) {
	ttl, err := LeaseDuration()
	if err != nil {
		return nil, err
	}
	out := map[string]*Lease{}
	due := false
	now := s.Now()
	for _, id := range agents {
		l, err := s.Lease(id)
		if err != nil {
			return nil, err
		}
		out[id] = l
		if l.Held(now) && l.MachineID != machine || l.HomeWaits(machine, now, ttl) && l.MachineID != machine {
			continue
		}
		chat, _, err := s.chatNow(id)
		if err != nil {
			return nil, err
		}
		due = due || leaseDue(l, machine, now, ttl, chat)
	}
	if !due {
		return out, nil
	}
	err = s.locked(func() error {
		now := s.Now()
		for _, id := range agents {
			l, err := s.Lease(id)
			if err != nil {
				return err
			}
			out[id] = l
			if l.HomeWaits(machine, now, ttl) && l.MachineID != machine {
				continue // its home machine is back and takes it
			}
			chat, ended, err := s.chatNow(id)
			if err != nil {
				return err
			}
			if !leaseDue(l, machine, now, ttl, chat) {
				continue
			}
			if l == nil || l.MachineID != machine || !l.Held(now) {
				prev := &Lease{}
				if l != nil {
					prev = l
				}
				reason := "the agent had no lease"
				if l != nil && l.MachineID != machine {
					reason = fmt.Sprintf("the lease of %s expired at %s", l.MachineID, l.ExpiresAt.Format(time.RFC3339))
				} else if l != nil {
					reason = fmt.Sprintf("this machine's lease had expired at %s", l.ExpiresAt.Format(time.RFC3339))
				}
				nl := &Lease{AgentID: id, MachineID: machine, AcquiredAt: now, Version: prev.Version, Home: prev.Home}
				if prev.Home != "" && prev.Home != machine {
					nl.HomeBackAt = prev.HomeBackAt
				}
				if err := s.writeLeaseLocked(Actor{ID: SystemSender, Via: ViaCoordinator}, nl, now, ttl, chat, ended,
					Event{Change: "lease", From: prev.MachineID, To: machine, Reason: reason}); err != nil {
					return err
				}
				out[id] = nl
				continue
			}
			if err := s.writeLeaseLocked(Actor{}, l, now, ttl, chat, ended, Event{}); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// writeLeaseLocked renews l for ttl from now with the chat presence given and writes it,
// recording ev in the history when it has a Change. The caller holds the lock.
func (s *Store) writeLeaseLocked(actor Actor, l *Lease, now time.Time, ttl time.Duration, chat bool, ended *time.Time, ev Event) error {
	l.RenewedAt, l.ExpiresAt = now, now.Add(ttl)
	setPresence(l, now, chat, ended)
	return s.saveLeaseLocked(actor, l, now, ev)
}

// setPresence records the chat presence: seen now while live, else when it ended (never
// earlier than what the lease already said).
func setPresence(l *Lease, now time.Time, chat bool, ended *time.Time) {
	l.ChatLive = chat
	switch {
	case chat:
		l.ChatSeenAt = &now
	case ended != nil && (l.ChatSeenAt == nil || ended.After(*l.ChatSeenAt)):
		t := *ended
		l.ChatSeenAt = &t
	}
}

func (s *Store) saveLeaseLocked(actor Actor, l *Lease, now time.Time, ev Event) error {
	l.UpdatedAt = now
	l.Version++
	if err := engine.EnsureDir(s.path("leases")); err != nil {
		return err
	}
	if err := engine.WriteJSON(s.leasePath(l.AgentID), l, 0o644); err != nil {
		return err
	}
	if ev.Change == "" {
		return nil
	}
	ev.At, ev.Actor, ev.Via, ev.Entity, ev.ID = now, actor.ID, actor.Via, "agent", l.AgentID
	return s.appendEvent(ev)
}

// LeavePresence records, in machine's leases, the chat presence as it stands now without
// extending them: a coordinator that stops says its agents' chat sessions ended, so their
// conversation partners elsewhere count the grace from then; the leases themselves lapse
// when they expire (or at once with ReleaseAgent).
func (s *Store) LeavePresence(machine string) error {
	leases, err := s.Leases()
	if err != nil {
		return err
	}
	return s.locked(func() error {
		now := s.Now()
		for _, old := range leases {
			l, err := s.Lease(old.AgentID)
			if err != nil || l == nil || l.MachineID != machine || !l.Held(now) {
				if err != nil {
					return err
				}
				continue
			}
			chat, ended, err := s.chatNow(l.AgentID)
			if err != nil {
				return err
			}
			if !chat && ended == nil && l.ChatLive {
				ended = &now
			}
			if chat == l.ChatLive && !l.ChatLive {
				continue
			}
			setPresence(l, now, chat, ended)
			if err := s.saveLeaseLocked(Actor{}, l, now, Event{}); err != nil {
				return err
			}
		}
		return nil
	})
}

// MoveAgent binds an agent to another machine, for a lease's length: the machine that ran
// it stops its processes at its next look, and the target starts it when it has work (and
// renews the lease). The move is recorded in the history.
func (s *Store) MoveAgent(actor Actor, agentID, machine string) (*Lease, error) {
	if err := ValidateMachineID(machine); err != nil {
		return nil, err
	}
	if _, err := s.Agent(agentID); err != nil {
		return nil, err
	}
	ttl, err := LeaseDuration()
	if err != nil {
		return nil, err
	}
	var out *Lease
	err = s.locked(func() error {
		l, err := s.Lease(agentID)
		if err != nil {
			return err
		}
		from, version := "", 0
		if l != nil {
			from, version = l.MachineID, l.Version
		}
		now := s.Now()
		out = &Lease{AgentID: agentID, MachineID: machine, AcquiredAt: now, RenewedAt: now, ExpiresAt: now.Add(ttl), Version: version, MovedBy: actor.ID, Home: machine}
		return s.saveLeaseLocked(actor, out, now, Event{Change: "lease", From: from, To: machine, Reason: "moved by " + actor.ID})
	})
	return out, err
}

// ReleaseAgent ends an agent's lease now, so that any machine's `aipm run` may take it (its
// own included, if it still runs: release a stopped machine's agents, move a live one's).
func (s *Store) ReleaseAgent(actor Actor, agentID string) (*Lease, error) {
	if _, err := s.Agent(agentID); err != nil {
		return nil, err
	}
	var out *Lease
	err := s.locked(func() error {
		l, err := s.Lease(agentID)
		if err != nil {
			return err
		}
		if l == nil {
			return newErr(ErrNotFound, "no_lease", "nothing to release: any machine's `aipm run` may start it",
				"agent %s has no lease", agentID)
		}
		now := s.Now()
		from := l.MachineID
		if l.ExpiresAt.After(now) {
			l.ExpiresAt = now
		}
		l.ChatLive = false
		out = l
		return s.saveLeaseLocked(actor, l, now, Event{Change: "lease", From: from, To: "", Reason: "released by " + actor.ID})
	})
	return out, err
}

// AskHome records, for each of the agents named whose home is machine but whose lease
// another machine holds (a takeover while the home was away), that the home runs again
// and wants it back; renewed every third of the lease while the home runs, so a home that
// stops again lets the agent stay where it is. It writes only what is due.
func (s *Store) AskHome(machine string, agents []string) error {
	ttl, err := LeaseDuration()
	if err != nil {
		return err
	}
	due := func(l *Lease, now time.Time) bool {
		return l != nil && l.Home == machine && l.MachineID != machine &&
			(l.HomeBackAt == nil || now.Sub(*l.HomeBackAt) >= ttl/3)
	}
	var want []string
	now := s.Now()
	for _, id := range agents {
		if l, err := s.Lease(id); err == nil && due(l, now) {
			want = append(want, id)
		}
	}
	if len(want) == 0 {
		return nil
	}
	return s.locked(func() error {
		now := s.Now()
		for _, id := range want {
			l, err := s.Lease(id)
			if err != nil || !due(l, now) {
				if err != nil {
					return err
				}
				continue
			}
			t := now
			l.HomeBackAt = &t
			if err := s.saveLeaseLocked(Actor{}, l, now, Event{}); err != nil {
				return err
			}
		}
		return nil
	})
}

// ReturnHome lets machine's lease of agentID go, now, when the agent's home (another
// machine) asked for it back: the home then takes it, and no other machine does. The
// caller knows the agent has no process here. It reports whether it let the lease go.
func (s *Store) ReturnHome(machine, agentID string) (bool, error) {
	ttl, err := LeaseDuration()
	if err != nil {
		return false, err
	}
	done := false
	err = s.locked(func() error {
		l, err := s.Lease(agentID)
		now := s.Now()
		if err != nil || l == nil || l.MachineID != machine || !l.HomeWaits(machine, now, ttl) {
			return err
		}
		if l.ExpiresAt.After(now) {
			l.ExpiresAt = now
		}
		l.ChatLive = false
		done = true
		return s.saveLeaseLocked(Actor{ID: SystemSender, Via: ViaCoordinator}, l, now,
			Event{Change: "lease", From: machine, To: "", Reason: "back to its home machine " + l.Home + ", running again"})
	})
	return done, err
}
