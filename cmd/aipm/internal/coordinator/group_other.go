//go:build !unix

package coordinator

import (
	"os"
	"os/exec"
)

// ownGroup: no process groups here; the agent is stopped alone.
func ownGroup(cmd *exec.Cmd) {}

// signalGroup kills the process pid: there is neither a group nor a polite stop here.
func signalGroup(pid int, kill bool) {
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
	}
}

// pidLive cannot tell here; an open spawn whose process is gone is judged by its
// sessions alone.
func pidLive(pid int) bool { return false }

// groupLive cannot tell here either.
func groupLive(pid int) bool { return false }
