package filestore

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A session's usage reaches its run record when the record closes, and the calls that
// close it (counted after they ran) are settled into it; a killed process's run keeps what
// was counted before.
func TestUsageReachesTheRunRecord(t *testing.T) {
	s := newTestStore(t)
	startTask(t, s, "w1")
	r, err := s.Authenticate(AuthRequest{AgentID: "w1", Passkey: "w1-passkey", Purpose: PurposeTask, PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	se := r.Session
	if u, err := s.SessionUsage(se.ID); err != nil || u != (Usage{}) {
		t.Errorf("usage before any call: %+v, %v", u, err)
	}
	ex, err := s.StartExecution(se.ID)
	if err != nil {
		t.Fatal(err)
	}
	var u Usage
	u.Add(40, 300)
	u.Add(2, 1200)
	if err := s.WriteUsage(se.ID, u); err != nil {
		t.Fatal(err)
	}
	// Running: the record has no figures yet, and settling leaves it alone.
	if err := s.SettleUsage(se.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Execution(ex.ID); got.Calls != 0 {
		t.Errorf("a running record got figures: %+v", got.Usage)
	}
	if err := s.EndSession(se.ID, "logout"); err != nil {
		t.Fatal(err)
	}
	got, err := s.Execution(ex.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Usage{Calls: 2, RequestBytes: 42, ResultBytes: 1500}); got.Usage != want {
		t.Errorf("closed record: %+v, want %+v", got.Usage, want)
	}
	// The closing call, counted after it ran, is settled into the closed record.
	u.Add(10, 50)
	if err := s.WriteUsage(se.ID, u); err != nil {
		t.Fatal(err)
	}
	if err := s.SettleUsage(se.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Execution(ex.ID); got.Calls != 3 || got.RequestBytes != 52 || got.ResultBytes != 1550 {
		t.Errorf("settled record: %+v", got.Usage)
	}
	if got := u.String(); got != "3 tool calls, 0.1 KB requests, 1.5 KB results" {
		t.Errorf("String() = %q", got)
	}
	if err := s.WriteUsage("../x", u); err == nil {
		t.Error("a bad session id was written")
	}
}

// The usage directory is checked like every store directory on each write, though only
// the first write walks it: a link put in its place later is refused, and nothing is
// written where it points.
func TestUsageDirectorySwappedForALink(t *testing.T) {
	s := newTestStore(t)
	id := NewID(PrefixSession, s.Now())
	if err := s.WriteUsage(id, Usage{Calls: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteUsage(id, Usage{Calls: 2}); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	dir := s.path("runtime", "usage")
	if err := os.Rename(dir, dir+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, dir); err != nil {
		t.Fatal(err)
	}
	err := s.WriteUsage(id, Usage{Calls: 3})
	var unsafe *UnsafePathError
	if !errors.As(err, &unsafe) {
		t.Errorf("write through a link: %v, want an UnsafePathError", err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("written outside the store: %v", entries)
	}
}

// A task session's run record is made by its first StartExecution only; every later one
// (each get_my_task asks) reads it without waiting for the store lock, which another
// process may hold for a while.
func TestStartExecutionOnceThenWithoutTheLock(t *testing.T) {
	s := newTestStore(t)
	startTask(t, s, "w1")
	r, err := s.Authenticate(AuthRequest{AgentID: "w1", Passkey: "w1-passkey", Purpose: PurposeTask, PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	first, err := s.StartExecution(r.Session.ID)
	if err != nil {
		t.Fatal(err)
	}
	other, err := Open(s.Root(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Another process holds the lock while this one asks again.
	got := make(chan *Execution, 1)
	errc := make(chan error, 1)
	err = other.locked(func() error {
		go func() {
			ex, err := s.StartExecution(r.Session.ID)
			if err != nil {
				errc <- err
				return
			}
			got <- ex
		}()
		select {
		case ex := <-got:
			if ex.ID != first.ID {
				t.Errorf("second StartExecution: record %s, want the first one, %s", ex.ID, first.ID)
			}
		case err := <-errc:
			t.Errorf("second StartExecution: %v", err)
		case <-time.After(5 * time.Second):
			t.Errorf("second StartExecution waited for the store lock")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// One record, one "started" event.
	entries, err := os.ReadDir(filepath.Join(s.Dir(), "executions"))
	if err != nil || len(entries) != 1 {
		t.Errorf("executions/: %d files (%v), want 1", len(entries), err)
	}
}

// The usage file is also a session's sign of life: its time is when the serving process
// last recorded a call, and it says whether a call is in flight (a long poll), which the
// coordinator does not take for silence. The counts read the same either way.
func TestSessionActivity(t *testing.T) {
	s := newTestStore(t)
	startTask(t, s, "w1")
	r, err := s.Authenticate(AuthRequest{AgentID: "w1", Passkey: "w1-passkey", Purpose: PurposeTask, PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	id := r.Session.ID
	if at, in, err := s.SessionActivity(id); err != nil || !at.IsZero() || in {
		t.Errorf("before any call: %v, %v, %v; want zero, false, nil", at, in, err)
	}
	u := Usage{Calls: 3, RequestBytes: 10, ResultBytes: 20}
	if err := s.RecordUsage(id, u, 1); err != nil {
		t.Fatal(err)
	}
	at, in, err := s.SessionActivity(id)
	if err != nil || at.IsZero() || !in {
		t.Errorf("in a call: %v, %v, %v; want a time, true, nil", at, in, err)
	}
	if got, err := s.SessionUsage(id); err != nil || got != u {
		t.Errorf("usage in a call: %+v, %v; want %+v", got, err, u)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(s.usagePath(id), old, old); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordUsage(id, u, 0); err != nil {
		t.Fatal(err)
	}
	if at2, in, err := s.SessionActivity(id); err != nil || !at2.After(old) || in {
		t.Errorf("after the call: %v, %v, %v; want later than %v, false, nil", at2, in, err, old)
	}
	if _, _, err := s.SessionActivity("../x"); err == nil {
		t.Error("a bad session id was accepted")
	}
}
