//go:build !unix

package engine

import "os"

// processAlive cannot check other processes on this platform; the session lease alone
// decides liveness there.
func ProcessAlive(pid int, start string) bool { return pid > 0 }

func ProcessStart(pid int) string { return "" }

// fileIno is not available here: size and modification time alone identify a file.
func FileIno(fi os.FileInfo) uint64 { return 0 }

// NoFollow: no O_NOFOLLOW here; Open's Lstat and Stat checks still apply.
const NoFollow = 0
