package filestore

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/aipm/aipm/filestore/internal/engine"
)

// Prepared is what Prepare did to a store that came with a clone.
type Prepared struct {
	// CreatedRuntime is set when runtime/ was missing (a fresh clone) and was created.
	CreatedRuntime bool
	// WroteGitFiles lists .gitignore and .gitattributes when they were missing or lacked
	// the merge driver and were written: changes to commit.
	WroteGitFiles []string
	// NoPasskey lists, sorted, the active AI agents with no passkey on this machine.
	NoPasskey []string
}

// Prepare opens the store at root and readies it for this machine, as `aipm init` does in a clone: it
// creates the runtime area (ignored by Git, so a clone has none), writes .gitignore and
// .gitattributes when they are missing or name no merge driver, and lists the AI agents
// that have no passkey here. It is idempotent.
func Prepare(root string, opts Options) (*Store, *Prepared, error) {
	out := &Prepared{}
	// Looked at before Open, which itself makes runtime/locks.
	if _, err := engine.Lstat(filepath.Join(root, DirName, "runtime")); errors.Is(err, os.ErrNotExist) {
		out.CreatedRuntime = true
	}
	s, err := Open(root, opts)
	if err != nil {
		return nil, nil, err
	}
	err = s.locked(func() error {
		for _, d := range runtimeDirs {
			if err := engine.EnsureDir(s.path(d)); err != nil {
				return err
			}
		}
		if _, err := engine.Lstat(s.path(".gitignore")); errors.Is(err, os.ErrNotExist) {
			if err := engine.WriteAtomic(s.path(".gitignore"), []byte(gitignore), 0o644); err != nil {
				return err
			}
			out.WroteGitFiles = append(out.WroteGitFiles, s.Rel(s.path(".gitignore")))
		}
		if want, ok := s.gitattributesWanted(); !ok {
			if err := engine.WriteAtomic(s.path(".gitattributes"), want, 0o644); err != nil {
				return err
			}
			out.WroteGitFiles = append(out.WroteGitFiles, s.Rel(s.path(".gitattributes")))
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	// This clone's machine needs an id of its own for the agent leases (machine.go).
	if _, err := s.MachineID(); err != nil {
		return nil, nil, err
	}
	agents, err := s.Agents()
	if err != nil {
		return nil, nil, err
	}
	for _, a := range agents {
		if a.Type != AgentAI || a.Status == AgentInactive {
			continue
		}
		path, err := s.credentialPath(a.ID)
		if err != nil {
			return nil, nil, err
		}
		if _, err := engine.Lstat(path); err != nil {
			out.NoPasskey = append(out.NoPasskey, a.ID)
		}
	}
	return s, out, nil
}

// gitattributesWanted returns what .gitattributes should hold and whether it already
// names the merge driver. A file someone extended keeps their lines; the driver's are
// added.
func (s *Store) gitattributesWanted() ([]byte, bool) {
	data, err := engine.ReadFile(s.path(".gitattributes"), engine.MaxEntityFile)
	switch {
	case err != nil || len(bytes.TrimSpace(data)) == 0 || string(data) == oldGitattributes:
		return []byte(gitattributes), false
	case bytes.Contains(data, []byte("tasks/*.json merge=aipm")):
		return data, true
	}
	if !bytes.HasSuffix(data, []byte("\n")) {
		data = append(data, '\n')
	}
	return append(data, gitattributesDriver...), false
}

// GitattributesProblem says what is wrong with .gitattributes for merging across clones,
// or "" when it names the merge driver.
func (s *Store) GitattributesProblem() string {
	if _, ok := s.gitattributesWanted(); ok {
		return ""
	}
	return "names no aipm merge driver for the entity files, so Git merges tasks line by line and concurrent edits conflict: run `aipm init` and commit " + strings.TrimPrefix(s.Rel(s.path(".gitattributes")), "./")
}
