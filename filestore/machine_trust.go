package filestore

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sync"

	"github.com/aipm/aipm/filestore/internal/engine"
)

// What this machine trusts never comes from the repository. Everything under .ai-pm —
// runtime/ included, since anyone can force-add it — arrives with a clone or a pull, so the
// approvals of agent commands and the passkey hashes live in the user's own configuration
// directory, one directory per repository, as direnv keeps its allow list:
//
//	<user config dir>/aipm/repos/<name>-<hash>/
//	  repo             the store directory this entry belongs to (for people reading it)
//	  key              32 random bytes: binds session tokens and spawn tickets to this machine
//	  commands.json    the approved agent commands (trust.go)
//	  credentials/<agent-id>.json  salted passkey hashes
//
// <user config dir> is $XDG_CONFIG_HOME, else ~/.config (os.UserConfigDir); <hash> is a
// SHA-256 of the store directory's absolute, link-resolved path. A repository that moves
// or is cloned starts with nothing approved and no passkeys: `aipm trust` and `aipm agent
// passkey` set them up again.

// MachineDirError says the per-user directory that holds this machine's trust cannot be
// used.
type MachineDirError struct{ Err error }

func (e *MachineDirError) Error() string {
	return fmt.Sprintf("the per-user aipm directory is unusable (%v): aipm keeps approvals and passkeys outside the repository, "+
		"in $XDG_CONFIG_HOME/aipm or ~/.config/aipm; set HOME or XDG_CONFIG_HOME to a directory you own", e.Err)
}

func (e *MachineDirError) Unwrap() error { return e.Err }

var unsafeNameChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

type machineState struct {
	once sync.Once
	dir  string
	key  []byte
	err  error
}

// MachineDir returns the directory that holds what this machine trusts for this
// repository, creating it (0700) on first use.
func (s *Store) MachineDir() (string, error) {
	s.loadMachine()
	return s.machine.dir, s.machine.err
}

// machineKey returns the per-repository secret of this machine.
func (s *Store) machineKey() ([]byte, error) {
	s.loadMachine()
	return s.machine.key, s.machine.err
}

func (s *Store) loadMachine() {
	s.machine.once.Do(func() {
		s.machine.dir, s.machine.key, s.machine.err = openMachineDir(s.dir)
	})
}

func openMachineDir(storeDir string) (string, []byte, error) {
	base, err := os.UserConfigDir()
	if err != nil {
		return "", nil, &MachineDirError{Err: err}
	}
	real, err := filepath.EvalSymlinks(storeDir)
	if err != nil {
		return "", nil, err
	}
	sum := sha256.Sum256([]byte(real))
	name := unsafeNameChars.ReplaceAllString(filepath.Base(filepath.Dir(real)), "_")
	if len(name) > 40 {
		name = name[:40]
	}
	dir := filepath.Join(base, "aipm", "repos", name+"-"+hex.EncodeToString(sum[:8]))
	if err := engine.PrivateDir(dir); err != nil {
		var ue *engine.UnsafePathError
		if errors.As(err, &ue) {
			err = fmt.Errorf("%s is %s", dir, ue.Problem)
		}
		return "", nil, &MachineDirError{Err: err}
	}
	if engine.Missing(filepath.Join(dir, "repo")) {
		engine.WriteAtomic(filepath.Join(dir, "repo"), []byte(real+"\n"), 0o600)
	}
	key, err := machineKeyIn(dir)
	if err != nil {
		return "", nil, &MachineDirError{Err: err}
	}
	return dir, key, nil
}

// machineKeyIn reads the key file of a machine directory, making it on first use. Two
// processes making it at once agree: the file appears by link(2), which never replaces.
func machineKeyIn(dir string) ([]byte, error) {
	path := filepath.Join(dir, "key")
	read := func() ([]byte, error) {
		f, err := engine.Open(path, os.O_RDONLY, 0, 0)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		key := make([]byte, 33)
		n, _ := f.Read(key)
		if n != 32 {
			return nil, fmt.Errorf("%s is not a 32-byte key: remove it (approvals and passkeys stay, sessions end)", path)
		}
		return key[:32], nil
	}
	if key, err := read(); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	var key [32]byte
	if _, err := rand.Read(key[:]); err != nil {
		return nil, err
	}
	if err := engine.CreateOnce(path, key[:], 0o600); err != nil {
		return nil, err
	}
	return read()
}

// machinePath is a file in the machine directory (see MachineDir).
func (s *Store) machinePath(elem ...string) (string, error) {
	dir, err := s.MachineDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(append([]string{dir}, elem...)...), nil
}

// boundHash hashes a secret with a salt and this machine's key, so that a hash written in
// a file of the repository (a committed session or spawn record) matches nothing here.
func (s *Store) boundHash(salt, secret string) (string, error) {
	key, err := s.machineKey()
	if err != nil {
		return "", err
	}
	return hashSecret(hex.EncodeToString(key)+"\x00"+salt, secret), nil
}
