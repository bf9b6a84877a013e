package ui

import (
	"encoding/binary"
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// peerUID is the user that opened the other end of c, a TCP connection between two
// sockets of this machine, as the kernel's socket table says (the sock_diag netlink
// query `ss -e` makes, for that one socket); false when it cannot be told.
func peerUID(c net.Conn) (uint32, bool) {
	la, ok1 := c.LocalAddr().(*net.TCPAddr)
	ra, ok2 := c.RemoteAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return 0, false
	}
	family, size := byte(unix.AF_INET6), 16
	if ra.IP.To4() != nil && la.IP.To4() != nil {
		family, size = unix.AF_INET, 4
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return 0, false
	}
	defer unix.Close(fd)
	tv := unix.NsecToTimeval(int64(time.Second))
	if unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv) != nil {
		return 0, false
	}

	// struct nlmsghdr, then struct inet_diag_req_v2 naming the peer's socket: its source
	// is the remote end of c, its destination the local one.
	req := make([]byte, 16+56)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(req[8:], 1)
	b := req[16:]
	b[0], b[1] = family, unix.IPPROTO_TCP
	ne.PutUint32(b[4:], 0xffffffff) // every state
	id := b[8:]
	binary.BigEndian.PutUint16(id[0:], uint16(ra.Port))
	binary.BigEndian.PutUint16(id[2:], uint16(la.Port))
	copy(id[4:], ipBytes(ra.IP, size))
	copy(id[20:], ipBytes(la.IP, size))
	ne.PutUint32(id[40:], 0xffffffff) // no cookie
	ne.PutUint32(id[44:], 0xffffffff)
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, false
	}

	buf := make([]byte, 8192)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil || n < 16+72 {
		return 0, false
	}
	if ne.Uint16(buf[4:]) != unix.SOCK_DIAG_BY_FAMILY {
		return 0, false // NLMSG_ERROR: no such socket, or the query is not allowed
	}
	// struct inet_diag_msg: the socket found must be the one asked for.
	m := buf[16:]
	got := m[4:]
	if binary.BigEndian.Uint16(got[0:]) != uint16(ra.Port) || binary.BigEndian.Uint16(got[2:]) != uint16(la.Port) {
		return 0, false
	}
	return ne.Uint32(m[64:]), true
}

// ipBytes is ip as the kernel writes an address of the family size bytes long.
func ipBytes(ip net.IP, size int) []byte {
	if size == 4 {
		return ip.To4()
	}
	return ip.To16()
}
