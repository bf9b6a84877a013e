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
	g := NewGate(ln)
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
	gate := NewGate(ln)
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
