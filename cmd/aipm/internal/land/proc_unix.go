//go:build unix

package land

import (
	"os/exec"
	"syscall"
)

// ownGroup starts cmd in a process group of its own, and makes its cancel kill that whole
// group: a check that starts servers or test runners leaves none behind when it times out.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
