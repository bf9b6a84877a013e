//go:build linux

package filestore

import (
	"io/fs"
	"os"
	"syscall"
)

// fileCtime is a file's status change time: unlike the modification time, no one can set it
// back, so an edit in place that keeps the size and restores the mtime still changes it.
func fileCtime(fi os.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ctim.Nano()
	}
	return 0
}

// lstatStamp is the identity of the file at p and whether it is a regular file: os.Lstat
// without the FileInfo it allocates. Every process of a team stats the file of each write
// another one makes (knowLocked), and each query stats the journal.
func lstatStamp(p string) (Stamp, bool, error) {
	var st syscall.Stat_t
	for {
		err := syscall.Lstat(p, &st)
		if err == nil {
			break
		}
		if err != syscall.EINTR {
			return Stamp{}, false, &fs.PathError{Op: "lstat", Path: p, Err: err}
		}
	}
	return Stamp{Ino: st.Ino, Size: st.Size, Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano()}, st.Mode&syscall.S_IFMT == syscall.S_IFREG, nil
}
