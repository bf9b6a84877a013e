//go:build !unix

package engine

import (
	"os"

	"github.com/gofrs/flock"
)

// lockFile takes an exclusive lock on an open file's path, waiting for it; unlock releases
// it.
func LockFile(f *os.File) (unlock func(), err error) {
	lk := flock.New(f.Name())
	if err := lk.Lock(); err != nil {
		return nil, err
	}
	return func() { lk.Unlock() }, nil
}

// tryLockFile takes an exclusive lock on an open file's path if no one holds it; ok is
// false when someone does.
func TryLockFile(f *os.File) (unlock func(), ok bool) {
	lk := flock.New(f.Name())
	if got, err := lk.TryLock(); err != nil || !got {
		return nil, false
	}
	return func() { lk.Unlock() }, true
}
