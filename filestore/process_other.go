//go:build !unix

package filestore

import "os"

// processAlive cannot check other processes on this platform; the session lease alone
// decides liveness there.
func processAlive(pid int, start string) bool { return pid > 0 }

func processStart(pid int) string { return "" }

// fileIno is not available here: size and modification time alone identify a file.
func fileIno(fi os.FileInfo) uint64 { return 0 }

// openNoFollow: no O_NOFOLLOW here; openSafe's Lstat and Stat checks still apply.
const openNoFollow = 0
