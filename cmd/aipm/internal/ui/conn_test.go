package ui

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// pipeListener hands the test's connections to a Gate: one end of a net.Pipe each, named
// by the client the test says it comes from.
type pipeListener struct{ conns chan net.Conn }

func (l *pipeListener) Accept() (net.Conn, error) {
	c, ok := <-l.conns
	if !ok {
		return nil, net.ErrClosed
	}
	return c, nil
}
func (l *pipeListener) Close() error   { return nil }
func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

type namedConn struct {
	net.Conn
	client string
}

// gateHarness accepts connections from named clients through a Gate and tells which of
// them the gate closed.
type gateHarness struct {
	t  *testing.T
	g  *Gate
	ln *pipeListener
}

func newGateHarness(t *testing.T, wait time.Duration) *gateHarness {
	ln := &pipeListener{conns: make(chan net.Conn, 1)}
	g := NewGate(ln, testToken)
	g.wait = wait
	g.client = func(c net.Conn) string { return c.(namedConn).client }
	return &gateHarness{t: t, g: g, ln: ln}
}

// open accepts a connection from client and returns the client's end.
func (h *gateHarness) open(client string) net.Conn {
	h.t.Helper()
	server, peer := net.Pipe()
	h.ln.conns <- namedConn{Conn: server, client: client}
	if _, err := h.g.Accept(); err != nil {
		h.t.Fatal(err)
	}
	return peer
}

// closed says whether the gate closed the server end of peer (a pipe's read fails at once
// when the other end is closed, and blocks otherwise: a short deadline tells them apart).
func closed(peer net.Conn) bool {
	peer.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	_, err := peer.Read(make([]byte, 1))
	return err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
}

// A client past its share of connections without the token pushes out its own oldest,
// and one past the total pushes out the oldest of the client holding most: a flood never
// closes another client's connection, and every new connection is accepted at once.
func TestGateFloodClosesTheFloodersOwn(t *testing.T) {
	h := newGateHarness(t, time.Hour)
	owner := h.open("owner")
	var flood []net.Conn
	for range PendingPerClient + 5 {
		flood = append(flood, h.open("flooder"))
	}
	for i, c := range flood {
		if want := i < 5; closed(c) != want {
			t.Errorf("flooder's connection %d: closed %v, want %v (the oldest beyond its share of %d go)", i, !want, want, PendingPerClient)
		}
	}
	if closed(owner) {
		t.Fatal("the owner's connection was closed by another client's flood")
	}

	// Many clients, each within its share, together past the total: the client with most
	// loses its oldest, never the one with a single connection.
	var many []net.Conn
	for i := range PendingMax * 2 {
		many = append(many, h.open(fmt.Sprintf("client %d", i%(PendingMax/PendingPerClient+2))))
	}
	if closed(owner) {
		t.Fatalf("the owner's one connection was closed when %d others were past the total of %d", len(many), PendingMax)
	}
	if n := h.g.Pending(); n != PendingMax {
		t.Errorf("%d connections without the token open, want the total, %d", n, PendingMax)
	}
	if got := len(h.g.pending["owner"]); got != 1 {
		t.Errorf("the owner has %d pending connections, want 1", got)
	}
}

// A connection that shows the token leaves the budget of those that have not: a
// flood of its own client's connections cannot close it any more.
func TestGateTrustedConnectionStays(t *testing.T) {
	h := newGateHarness(t, time.Hour)
	owner := h.open("local")
	h.g.mu.Lock()
	gc := h.g.pending["local"][0]
	h.g.mu.Unlock()
	gc.trusted()
	for range PendingMax * 2 {
		h.open("local")
	}
	if closed(owner) {
		t.Fatal("a connection that showed the token was closed by later connections without it")
	}
	if n := h.g.Pending(); n != PendingPerClient {
		t.Errorf("%d pending, want %d (one client's share)", n, PendingPerClient)
	}
}

// Over HTTP: a connection that sends nothing, and one that sends requests without the
// token, are closed by the server once the wait is over; one whose request carried the
// token is still served after it.
func TestGateClosesConnectionsWithoutToken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	host := ln.Addr().String()
	srv := HTTPServer(ctx, New(Options{Store: nil, Hosts: []string{host}, Token: testToken}), time.Hour)
	gate := NewGate(ln, testToken)
	gate.wait = 300 * time.Millisecond
	go srv.Serve(gate)
	defer srv.Close()

	get := func(c net.Conn, r *bufio.Reader, path string) int {
		t.Helper()
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, host)
		c.SetReadDeadline(time.Now().Add(time.Minute))
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	dial := func() (net.Conn, *bufio.Reader) {
		t.Helper()
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c, bufio.NewReader(c)
	}
	waitClosed := func(what string, r *bufio.Reader, c net.Conn) {
		t.Helper()
		c.SetReadDeadline(time.Now().Add(time.Minute))
		if _, err := r.ReadByte(); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("%s was not closed by the server: %v", what, err)
		}
	}

	// The token holder's connection: its request carries the token (the page itself).
	held, heldR := dial()
	if code := get(held, heldR, "/?token="+testToken); code != http.StatusOK {
		t.Fatalf("the page with the token: %d", code)
	}
	idle, idleR := dial()
	asker, askerR := dial()
	if code := get(asker, askerR, "/style.css"); code != http.StatusOK {
		t.Fatalf("the style sheet: %d", code)
	}
	if code := get(asker, askerR, "/api/state"); code != http.StatusForbidden {
		t.Fatalf("the state without the token: %d", code)
	}
	waitClosed("a connection that sent nothing", idleR, idle)
	waitClosed("a connection whose requests had no token", askerR, asker)
	// Both were accepted after the token holder's, so its wait is over too.
	if code := get(held, heldR, "/app.js"); code != http.StatusOK {
		t.Fatalf("the token holder's connection, after the wait: %d", code)
	}
	if n := gate.Pending(); n != 0 {
		t.Errorf("%d connections without the token still counted", n)
	}
}

// A connection whose request with the token has arrived but is not read yet is the token
// holder's: a flood from its own client (where the client is only an address) closes the
// flood's connections, not it.
func TestGateKeepsAConnectionHoldingTheToken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	g := NewGate(ln, testToken)
	g.wait = time.Hour
	g.client = func(net.Conn) string { return "everyone" }
	type accepted struct {
		peer, server net.Conn
	}
	open := func() accepted {
		t.Helper()
		peer, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { peer.Close() })
		server, err := g.Accept()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { server.Close() })
		return accepted{peer, server}
	}
	owner := open()
	io.WriteString(owner.peer, "GET /api/state HTTP/1.1\r\nHost: x\r\nX-Aipm-Token: "+testToken+"\r\n\r\n")
	stranger := open()
	io.WriteString(stranger.peer, "GET /api/state HTTP/1.1\r\nHost: x\r\nX-Aipm-Token: "+strings.Repeat("0", len(testToken))+"\r\n\r\n")
	// Both requests are in the server's buffers (nothing reads them here).
	buf := make([]byte, 512)
	for _, c := range []net.Conn{owner.server, stranger.server} {
		for deadline := time.Now().Add(time.Minute); peek(c.(*gateConn).Conn, buf) == 0; {
			if time.Now().After(deadline) {
				t.Fatal("the request never reached the server's buffer")
			}
			runtime.Gosched()
		}
	}
	for range PendingPerClient {
		open()
	}
	if closedTCP(owner.peer) {
		t.Fatal("the connection whose request holds the token was closed to make room")
	}
	if !closedTCP(stranger.peer) {
		t.Fatal("the connection with a wrong token was kept")
	}
}

// closedTCP says whether the server closed peer's connection (a read ends at once), as
// opposed to keeping it open (the read waits).
func closedTCP(peer net.Conn) bool {
	peer.SetReadDeadline(time.Now().Add(time.Second))
	_, err := peer.Read(make([]byte, 1))
	return err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
}

// The bytes the server reads show the token even when it comes in two reads.
func TestGateReadFindsTheToken(t *testing.T) {
	h := newGateHarness(t, time.Hour)
	peer := h.open("local")
	h.g.mu.Lock()
	gc := h.g.pending["local"][0]
	h.g.mu.Unlock()
	go func() {
		io.WriteString(peer, "GET /?token="+testToken[:10])
		io.WriteString(peer, testToken[10:]+" HTTP/1.1\r\n")
	}()
	buf := make([]byte, 64)
	for got := 0; got < len("GET /?token=")+len(testToken)+len(" HTTP/1.1\r\n"); {
		n, err := gc.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		got += n
	}
	if h.g.Pending() != 0 {
		t.Fatal("a connection that sent the token in two pieces is still counted as not having shown it")
	}
}
