package watch

import (
	"io/fs"
	"syscall"
)

// leafDir tells a directory that has no directory below it, from its link count: on
// Linux's file systems a directory has two links and one more per subdirectory (btrfs,
// which says one, is listed as usual). Such a directory need not be listed to be
// watched, which spares listing the hundred thousand files of a large tasks/.
func leafDir(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Nlink == 2
}
