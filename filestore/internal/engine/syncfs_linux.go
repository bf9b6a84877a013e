package engine

import (
	"os"

	"golang.org/x/sys/unix"
)

// SyncFS makes durable every write to the filesystem that holds path (syncfs(2)): the
// one flush after many WriteAtomicLazy.
func SyncFS(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Syncfs(int(f.Fd()))
}
