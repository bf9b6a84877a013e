//go:build linux

package filestore

import (
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
