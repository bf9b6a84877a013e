package ui

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// On Linux, a loopback connection's client is the user that opened it: the test's own,
// and, when the test may start a process as another user, that user's.
func TestPeerUID(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accept := func() net.Conn {
		t.Helper()
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	mine, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Close()
	if uid, ok := peerUID(accept()); !ok || uid != uint32(os.Getuid()) {
		t.Fatalf("peerUID of this process's connection: %d, %v; want %d", uid, ok, os.Getuid())
	}
	if got := clientOf(accept2(t, ln)); got != "uid "+strconv.Itoa(os.Getuid()) {
		t.Errorf("clientOf: %q, want this user", got)
	}

	if os.Getuid() != 0 {
		t.Log("not root: the connection of another user is not tried")
		return
	}
	const bash = "/bin/bash" // a system-wide one: another user may not reach this user's tools
	if _, err := os.Stat(bash); err != nil {
		t.Log("no /bin/bash: the connection of another user is not tried")
		return
	}
	const nobody = 65534
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	cmd := exec.Command(bash, "-c", "exec 3<>/dev/tcp/127.0.0.1/"+port+"; read line")
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	stdin, _ := cmd.StdinPipe()
	var out strings.Builder
	cmd.Stderr = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	theirs := accept()
	if uid, ok := peerUID(theirs); !ok || uid != nobody {
		t.Fatalf("peerUID of another user's connection: %d, %v; want %d (%s)", uid, ok, nobody, out.String())
	}
}

// accept2 dials ln once more and returns the accepted end.
func accept2(t *testing.T, ln net.Listener) net.Conn {
	t.Helper()
	var wg sync.WaitGroup
	wg.Add(1)
	var c net.Conn
	go func() {
		defer wg.Done()
		c, _ = ln.Accept()
	}()
	d, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	wg.Wait()
	if c == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close() })
	return c
}
