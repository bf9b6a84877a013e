//go:build unix

package engine

import (
	"os"
	"syscall"
)

// LockFile takes an exclusive flock on an open file, waiting for it. The lock is released
// by unlock or by closing the file.
func LockFile(f *os.File) (unlock func(), err error) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err == nil {
			return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }, nil
		}
		if err != syscall.EINTR {
			return nil, err
		}
	}
}

// TryLockFile takes an exclusive flock on an open file if no one holds it; ok is false
// when someone does.
func TryLockFile(f *os.File) (unlock func(), ok bool) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }, true
		}
		if err != syscall.EINTR {
			return nil, false
		}
	}
}
