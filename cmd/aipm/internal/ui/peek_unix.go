//go:build unix

package ui

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// peek copies into buf what c received and nobody has read yet, without taking it and
// without waiting, and returns how much.
func peek(c net.Conn, buf []byte) int {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return 0
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	// Control, not Read: the server's own read of c may be waiting, and Read would wait
	// behind it.
	rc.Control(func(fd uintptr) {
		m, _, err := unix.Recvfrom(int(fd), buf, unix.MSG_PEEK|unix.MSG_DONTWAIT)
		if err == nil && m > 0 {
			n = m
		}
	})
	return n
}
