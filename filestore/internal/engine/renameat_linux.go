//go:build linux

package engine

import (
	"os"
	"runtime"
	"syscall"
)

// renameAt renames fromName in the directory from to toName in the directory to: one
// renameat(2) on the directories held open, where os.Root.Rename opens and closes each
// directory on both paths. ok is false where it is not available.
func renameAt(from *os.File, fromName string, to *os.File, toName string) (ok bool, err error) {
	err = syscall.Renameat(int(from.Fd()), fromName, int(to.Fd()), toName)
	runtime.KeepAlive(from)
	runtime.KeepAlive(to)
	if err != nil {
		return true, &os.LinkError{Op: "renameat", Old: fromName, New: toName, Err: err}
	}
	return true, nil
}
