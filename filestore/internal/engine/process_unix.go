//go:build unix

package engine

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"sync"
	"syscall"
)

// ProcessAlive reports whether pid is a running process and, where the start time is
// recorded, the same process (a recycled pid is not the session's server).
func ProcessAlive(pid int, start string) bool {
	if pid <= 0 {
		return false
	}
	// This process is alive; whether the record is of it or of an earlier holder of its
	// pid is told by the start time read once. A server asks of its own sessions on
	// every call.
	if pid == os.Getpid() {
		return start == "" || selfStart() == "" || start == selfStart()
	}
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	if start != "" {
		if now := ProcessStart(pid); now != "" && now != start {
			return false
		}
	}
	return true
}

// selfStart is this process's start time (processStart of its own pid).
var selfStart = sync.OnceValue(func() string { return ProcessStart(os.Getpid()) })

// ProcessStart returns the process start time in clock ticks since boot from
// /proc/<pid>/stat (Linux), or "" where that is not available. A zombie still has its
// entry, so a dead-but-unreaped server counts as gone by its state field.
func ProcessStart(pid int) string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name (field 2) may hold spaces and parentheses; fields resume after the
	// last ')'.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return ""
	}
	fields := bytes.Fields(data[i+1:])
	// fields[0] is field 3 (state); field 22 (starttime) is fields[19].
	if len(fields) < 20 {
		return ""
	}
	if string(fields[0]) == "Z" || string(fields[0]) == "X" {
		return "dead"
	}
	return string(fields[19])
}

// FileIno is the inode number of a file, part of its identity in the caches.
func FileIno(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}

// NoFollow are the open flags that refuse a link at the final component and keep a
// named pipe from blocking the open.
const NoFollow = syscall.O_NOFOLLOW | syscall.O_NONBLOCK
