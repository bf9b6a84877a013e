//go:build unix

package engine

import (
	"os"
	"os/exec"
	"testing"
)

// TestProcessAliveOwnPid: a record of this process is alive, one of an earlier holder of
// its pid (another start time) is not, without reading /proc each time.
func TestProcessAliveOwnPid(t *testing.T) {
	if selfStart() == "" {
		t.Skip("no process start times here")
	}
	if !ProcessAlive(os.Getpid(), selfStart()) || !ProcessAlive(os.Getpid(), "") {
		t.Fatal("this process's own record is not alive")
	}
	if ProcessAlive(os.Getpid(), selfStart()+"0") {
		t.Fatal("a record of an earlier process with this pid counts as alive")
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip(err)
	}
	if ProcessAlive(cmd.Process.Pid, "") {
		t.Fatalf("exited child %d counts as alive", cmd.Process.Pid)
	}
}
