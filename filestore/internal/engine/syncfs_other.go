//go:build !linux

package engine

import "os"

// SyncFS makes durable the writes of WriteAtomicLazy under path. Without syncfs(2) it
// flushes path itself (a directory: the names written into it); the files' data is
// left to the system, as after `git checkout`.
func SyncFS(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
