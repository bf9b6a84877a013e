package coordinator

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	cases := []struct {
		line  string
		pgrp  int
		ticks int64
		ok    bool
	}{
		{"4242 (node) S 1 4242 4242 0 -1 4194560 100 0 0 0 150 30 7 3 20 0 11 0 100 0 0", 4242, 190, true},
		// a command name with spaces and parentheses
		{"77 (a (b) c) R 1 70 70 0 -1 0 0 0 0 0 5 5 0 0 20 0 1 0 1 0 0", 70, 10, true},
		{"77 (short) R 1 70", 0, 0, false},
		{"no parens here", 0, 0, false},
	}
	for _, tc := range cases {
		pgrp, ticks, ok := parseStat(tc.line)
		if pgrp != tc.pgrp || ticks != tc.ticks || ok != tc.ok {
			t.Errorf("parseStat(%q) = %d, %d, %v; want %d, %d, %v", tc.line, pgrp, ticks, ok, tc.pgrp, tc.ticks, tc.ok)
		}
	}
}

// A process group that works shows CPU time; the count covers a child that has exited.
func TestGroupCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("burns CPU for a moment")
	}
	cmd := exec.Command("sh", "-c", `sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'; exec sleep 30`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		cpu, ok := groupCPU(cmd.Process.Pid)
		if !ok {
			t.Fatal("groupCPU: not known on Linux")
		}
		if cpu >= 50*time.Millisecond {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("groupCPU = %v after the loop, want some", cpu)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
