package filestore

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"time"

	"github.com/aipm/aipm/filestore/internal/engine"
)

// Usage is what a session cost its agent in tool calls: how many it made and the bytes of
// their arguments and results. Every call is one model request carrying the whole context,
// so the count is the figure to keep low.
type Usage struct {
	Calls        int   `json:"tool_calls"`
	RequestBytes int64 `json:"request_bytes"`
	ResultBytes  int64 `json:"result_bytes"`
}

// Add counts one call.
func (u *Usage) Add(request, result int) {
	u.Calls++
	u.RequestBytes += int64(request)
	u.ResultBytes += int64(result)
}

// Plus is the sum of two usages.
func (u Usage) Plus(v Usage) Usage {
	return Usage{Calls: u.Calls + v.Calls, RequestBytes: u.RequestBytes + v.RequestBytes, ResultBytes: u.ResultBytes + v.ResultBytes}
}

func (s *Store) usagePath(sessionID string) string {
	return s.path("runtime", "usage", sessionID+".json")
}

// WriteUsage records a session's usage so far in runtime/usage/<ses-id>.json. Only the
// process serving the session writes it, once per call, so it takes no store lock and no
// fsync: a count lost in a crash costs nothing, a slower call costs the agent. Nothing
// watches the file.
func (s *Store) WriteUsage(sessionID string, u Usage) error { return s.RecordUsage(sessionID, u, 0) }

// usageRecord is the usage file: the counts, and the calls the serving process was in the
// middle of when it wrote them. The file's time is when the session last called a tool
// (to within the writer's pace), which the coordinator reads as a sign of life.
type usageRecord struct {
	Usage
	InFlight int `json:"calls_in_flight,omitempty"`
}

// RecordUsage is WriteUsage that also says how many of the session's calls are in flight
// (a long poll, say): a session inside a call the server is serving is not silent.
func (s *Store) RecordUsage(sessionID string, u Usage, inFlight int) error {
	if err := ValidateEntityID(PrefixSession, sessionID); err != nil {
		return err
	}
	path := s.usagePath(sessionID)
	if err := ensureUsageDir(filepath.Dir(path)); err != nil {
		return err
	}
	data, err := json.Marshal(usageRecord{Usage: u, InFlight: max(inFlight, 0)})
	if err != nil {
		return err
	}
	return engine.ReplaceQuick(path, append(data, '\n'), 0o600)
}

// usageDirs holds each usage directory as engine.EnsureDir last found it safe.
var usageDirs sync.Map // directory path → os.FileInfo

// ensureUsageDir is engine.EnsureDir for the usage directory, which every tool call writes to: once
// the directories on the way were found real, a stat that finds the same directory at the
// path is enough (a link anywhere on the way would show another one, or none).
func ensureUsageDir(dir string) error {
	if fi, err := engine.Lstat(dir); err == nil && fi.IsDir() {
		if was, ok := usageDirs.Load(dir); ok && os.SameFile(was.(os.FileInfo), fi) {
			return nil
		}
	}
	before, _ := engine.Lstat(dir)
	if err := engine.EnsureDir(dir); err != nil {
		return err
	}
	// Remembered only if nothing was swapped while engine.EnsureDir looked.
	if fi, err := engine.Lstat(dir); err == nil && fi.IsDir() && before != nil && os.SameFile(before, fi) {
		usageDirs.Store(dir, fi)
	}
	return nil
}

// SessionActivity says when the process serving a session last recorded a tool call of it
// (the usage file's time; zero when it recorded none) and whether a call of it was in
// flight then.
func (s *Store) SessionActivity(sessionID string) (last time.Time, inFlight bool, err error) {
	if err := ValidateEntityID(PrefixSession, sessionID); err != nil {
		return time.Time{}, false, err
	}
	path := s.usagePath(sessionID)
	fi, err := engine.Lstat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return time.Time{}, false, nil
		}
		return time.Time{}, false, err
	}
	var r usageRecord
	if err := s.readJSON(path, &r); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fi.ModTime(), false, err
	}
	return fi.ModTime(), r.InFlight > 0, nil
}

// SessionUsage reads a session's usage; a session that made no counted call has none.
func (s *Store) SessionUsage(sessionID string) (Usage, error) {
	var u Usage
	if err := ValidateEntityID(PrefixSession, sessionID); err != nil {
		return u, err
	}
	if err := s.readJSON(s.usagePath(sessionID), &u); err != nil && !errors.Is(err, os.ErrNotExist) {
		return u, err
	}
	return u, nil
}

// SettleUsage copies a session's usage into its execution record once the record is
// closed: the calls that close it (report_completed, logout) are counted after they ran.
// A running record gets its figures when it closes.
func (s *Store) SettleUsage(sessionID string) error {
	return s.locked(func() error {
		se, err := s.readSession(sessionID)
		if err != nil || se.ExecutionID == "" {
			return err
		}
		ex, err := s.Execution(se.ExecutionID)
		if err != nil || ex.Status == ExecRunning {
			return err
		}
		u, err := s.SessionUsage(sessionID)
		if err != nil || u == ex.Usage {
			return err
		}
		ex.Usage = u
		ex.UpdatedAt = s.Now()
		ex.Version++
		return engine.WriteJSON(s.executionPath(ex.ID), ex, 0o644)
	})
}

// String is the usage in a few words: "12 tool calls, 1.9 KB requests, 14.2 KB results".
func (u Usage) String() string {
	kb := func(n int64) string { return strconv.FormatFloat(float64(n)/1024, 'f', 1, 64) + " KB" }
	return strconv.Itoa(u.Calls) + " tool calls, " + kb(u.RequestBytes) + " requests, " + kb(u.ResultBytes) + " results"
}
