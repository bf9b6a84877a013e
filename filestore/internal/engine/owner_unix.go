//go:build unix

package engine

import (
	"io/fs"
	"syscall"
)

// OwnerOf returns the user id owning a file, ok false where the platform has none.
func OwnerOf(fi fs.FileInfo) (uid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

// LinkCount returns how many names (hard links) a file has.
func LinkCount(fi fs.FileInfo) (uint64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(st.Nlink), true
}
