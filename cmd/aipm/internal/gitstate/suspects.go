package gitstate

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aipm/aipm/filestore"
	"github.com/gofrs/flock"
)

// SuspectCommit is a commit a round on this machine took in and named as suspect
// (Round.Suspect): made by hand, or holding a change its author may not make. `aipm
// doctor` names it until someone who looked at it acknowledges it.
type SuspectCommit struct {
	Commit string    `json:"commit"` // abbreviated, as the round named it
	At     time.Time `json:"at"`     // when a round first named it
	Why    string    `json:"why"`    // the round's line
}

const (
	suspectsFile = "suspects.json"
	// maxRemembered bounds the list: a remote that pushes commit after commit by hand must
	// not grow a file of this machine without end. The oldest go first.
	maxRemembered = 1000
)

// ReadSuspects returns the suspect commits this machine's rounds named and no one
// acknowledged, oldest first.
func ReadSuspects(s *filestore.Store) ([]SuspectCommit, error) {
	dir, err := s.MachineDir()
	if err != nil {
		return nil, err
	}
	return readSuspects(dir)
}

func readSuspects(dir string) ([]SuspectCommit, error) {
	data, err := os.ReadFile(filepath.Join(dir, suspectsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var list []SuspectCommit
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, suspectsFile), err)
	}
	return list, nil
}

// editSuspects changes the list under its own lock (a round and `aipm doctor --ack` may
// run at once) and writes it back atomically.
func editSuspects(dir string, edit func([]SuspectCommit) ([]SuspectCommit, error)) error {
	lk := flock.New(filepath.Join(dir, suspectsFile+".lock"))
	if err := lk.Lock(); err != nil {
		return err
	}
	defer lk.Unlock()
	list, err := readSuspects(dir)
	if err != nil {
		list = nil // a damaged list is started again: the rounds' own lines stand
	}
	if list, err = edit(list); err != nil {
		return err
	}
	data, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(dir, suspectsFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// rememberSuspects adds the commits a round named (its Round.Suspect lines, each
// "commit <id> …") that the list does not hold yet.
func rememberSuspects(dir string, at time.Time, lines []string) error {
	if len(lines) == 0 {
		return nil
	}
	return editSuspects(dir, func(list []SuspectCommit) ([]SuspectCommit, error) {
		for _, l := range lines {
			f := strings.Fields(l)
			if len(f) < 2 || f[0] != "commit" {
				continue
			}
			known := false
			for _, c := range list {
				known = known || c.Commit == f[1]
			}
			if !known {
				list = append(list, SuspectCommit{Commit: f[1], At: at, Why: l})
			}
		}
		if len(list) > maxRemembered {
			list = list[len(list)-maxRemembered:]
		}
		return list, nil
	})
}

// AckSuspect removes the suspect commit that id (at least 7 hex digits, or the whole
// id) names from the list, and returns it. An id that names none, or more than one, is an
// error that says so.
func AckSuspect(s *filestore.Store, id string) (SuspectCommit, error) {
	dir, err := s.MachineDir()
	if err != nil {
		return SuspectCommit{}, err
	}
	id = strings.ToLower(strings.TrimSpace(id))
	if len(id) < 7 || strings.Trim(id, "0123456789abcdef") != "" {
		return SuspectCommit{}, fmt.Errorf("%q is not a commit id: give at least 7 of its hex digits, as `aipm doctor` names it", id)
	}
	var got SuspectCommit
	err = editSuspects(dir, func(list []SuspectCommit) ([]SuspectCommit, error) {
		at := -1
		for i, c := range list {
			if strings.HasPrefix(c.Commit, id) || strings.HasPrefix(id, c.Commit) {
				if at >= 0 {
					return nil, fmt.Errorf("%s names more than one suspect commit (%s, %s): give more of its digits", id, list[at].Commit, c.Commit)
				}
				at = i
			}
		}
		if at < 0 {
			return nil, fmt.Errorf("no suspect commit %s is named on this machine: `aipm doctor` lists those there are", id)
		}
		got = list[at]
		return append(list[:at:at], list[at+1:]...), nil
	})
	return got, err
}
