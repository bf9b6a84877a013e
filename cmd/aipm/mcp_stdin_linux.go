package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// guardStdin keeps the requests of `aipm mcp` to the process that started it. Everything
// the server reads on stdin speaks for the session it authenticated, so:
//
//   - the process is made not dumpable: /proc/<pid>/fd/0, through which any process of the
//     same user could open the stdin pipe anew and write requests into it (as well as
//     /proc/<pid>/mem and environ, and ptrace), is then open to privileged processes only
//     (CAP_SYS_PTRACE). Another user's processes have no access to it in any case.
//   - a stdin that has a path, a named pipe or a file, is refused when a user other than
//     this one (or root) could open it for writing by that path: group or others may
//     write, or another user owns it (and may change that).
//
// A pipe made by the agent CLI that started the server (the usual way) has no path, and a
// terminal or /dev/null takes no requests from another user.
func guardStdin(in io.Reader) error {
	// Failing to set it leaves the server as before; nothing else depends on it.
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	f, ok := in.(*os.File)
	if !ok {
		return nil
	}
	return checkStdin(f)
}

// checkStdin says why f, the server's stdin, can be written by another user by its path;
// nil when it cannot.
func checkStdin(f *os.File) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil // not a file this process can look at: nothing another user can open either
	}
	var kind string
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFIFO:
		kind = "a named pipe"
	case unix.S_IFREG:
		kind = "a file"
	default:
		return nil // a terminal, /dev/null, a socket: not opened anew through a path
	}
	path, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
	if err != nil || strings.HasPrefix(path, "pipe:[") {
		return nil // a pipe without a name: only the processes holding it write to it
	}
	perm := os.FileMode(st.Mode & 0o777)
	me := uint32(os.Geteuid())
	var why string
	switch {
	case st.Uid != me && st.Uid != 0:
		why = fmt.Sprintf("is owned by another user (uid %d)", st.Uid)
	case perm&0o022 != 0:
		why = fmt.Sprintf("may be written by other users (mode %04o)", perm)
	default:
		return nil
	}
	return fmt.Errorf("refused to serve: standard input is %s, %s, that %s: a process of theirs could write requests into this server's session; "+
		"start aipm mcp from the agent CLI (it gives it a pipe of its own), or make the file yours and private (chmod go-w %s)",
		kind, path, why, path)
}
