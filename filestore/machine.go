package filestore

import (
	"crypto/rand"
	"errors"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/aipm/aipm/filestore/internal/engine"
)

// EnvMachineID overrides this machine's id (runtime/machine.json): two `aipm run` on one
// store with different ids behave as two machines whose files a sync joins.
const EnvMachineID = "AIPM_MACHINE_ID"

// machineFile is runtime/machine.json: this machine's id, made once.
type machineFile struct {
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"created_at"`
}

// ValidateMachineID checks a machine id: the agent-id alphabet.
func ValidateMachineID(id string) error {
	if !validName(id) {
		return newErr(ErrInvalid, "invalid_machine_id", "use lower-case letters, digits, '.', '_' or '-', at most 63 characters; `aipm agent leases` shows this machine's id",
			"invalid machine id %q", clip(id))
	}
	return nil
}

// MachineID returns the id of the machine this process runs on: EnvMachineID if set, else
// the one in runtime/machine.json (machine-local, never committed), made on first use from
// the host name and random letters so that two clones on two hosts never share one.
func (s *Store) MachineID() (string, error) {
	if v := os.Getenv(EnvMachineID); v != "" {
		if err := ValidateMachineID(v); err != nil {
			return "", newErr(ErrInvalid, "invalid_machine_id", "set "+EnvMachineID+" to a name like laptop-1, or unset it",
				"%s=%q is not a valid machine id", EnvMachineID, clip(v))
		}
		return v, nil
	}
	id, err := s.knownMachineID()
	if id != "" || err != nil && !errors.Is(err, fs.ErrNotExist) {
		return id, err
	}
	path := s.path("runtime", "machine.json")
	var m machineFile
	err = s.locked(func() error {
		if s.readJSON(path, &m) == nil && ValidateMachineID(m.ID) == nil {
			return nil // made meanwhile by another process
		}
		m = machineFile{ID: newMachineID(), CreatedAt: s.Now()}
		return engine.WriteJSON(path, &m, 0o644)
	})
	return m.ID, err
}

// knownMachineID is MachineID without making one: "" when this machine has none yet. It
// takes no lock, for readers that may hold it.
func (s *Store) knownMachineID() (string, error) {
	if v := os.Getenv(EnvMachineID); v != "" {
		return v, ValidateMachineID(v)
	}
	var m machineFile
	if err := s.readJSON(s.path("runtime", "machine.json"), &m); err != nil {
		return "", err
	}
	return m.ID, ValidateMachineID(m.ID)
}

// newMachineID is the host name in the id alphabet plus six random letters.
func newMachineID() string {
	host, _ := os.Hostname()
	var b strings.Builder
	for _, r := range strings.ToLower(host) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '.':
			b.WriteRune(r)
		}
		if b.Len() >= 40 {
			break
		}
	}
	name := strings.Trim(b.String(), ".-")
	if name == "" {
		name = "machine"
	}
	const letters = "abcdefghjkmnpqrstvwxyz0123456789"
	buf := make([]byte, 6)
	rand.Read(buf)
	for i := range buf {
		buf[i] = letters[int(buf[i])%len(letters)]
	}
	return name + "-" + string(buf)
}
