package ui

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Connection limits of the HTTP server. The page is served to whoever holds the token,
// first: anybody who can reach the port (on one machine, every local user) can open
// connections, so those that have not shown the token get a small budget of their own and
// a short time, and can never keep the token holder's connections out.
const (
	// headerTimeout: a connection that sends no complete request header in this long is closed.
	headerTimeout = 5 * time.Second
	// idleTimeout: a connection that has shown the token and waits idle this long for its
	// next request is closed.
	idleTimeout = 60 * time.Second
	// TokenWait: a connection that has not carried a request with the token this long after
	// it was accepted is closed, whatever it does meanwhile.
	TokenWait = 5 * time.Second
	// PendingPerClient and PendingMax bound the connections open at once that have not
	// shown the token: per client (on Linux, a local connection's client is the user
	// that opened it; otherwise its address), and in all. A connection past either bound
	// closes the oldest such connection of the client over its share, or of the client
	// holding most, so a new connection is always accepted and served: accepting never
	// waits, and a client flooding the port pushes out only its own connections.
	PendingPerClient = 16
	PendingMax       = 128
)

// HTTPServer returns the http.Server for h: a connection that sends no complete request
// header within 5 seconds, or waits idle more than idle (0: 60 seconds) for its next
// request, is closed. Serve it on NewGate(ln), which closes connections that do not show
// the token.
func HTTPServer(ctx context.Context, h http.Handler, idle time.Duration) *http.Server {
	if idle <= 0 {
		idle = idleTimeout
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: headerTimeout,
		IdleTimeout:       idle,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if gc, ok := c.(*gateConn); ok {
				return context.WithValue(ctx, gateKey{}, gc)
			}
			return ctx
		},
	}
}

// gateKey is the request context key of the connection a request came on.
type gateKey struct{}

// Gate is a listener that keeps the connections which have not yet shown the token
// within PendingPerClient and PendingMax, and closes each one TokenWait after it was
// accepted unless it has shown the token by then. A connection shows the token when bytes
// it sent hold it: as the server reads them, or, when the gate is about to close the
// connection to make room, as they wait unread in the system's buffer — so the token
// holder's connection is not closed for a flood of connections from its own address
// (another local user's, where the user is not known) once its request has arrived.
type Gate struct {
	net.Listener
	token          []byte
	wait           time.Duration
	perClient, max int
	// client names a connection's client; clientOf unless a test says otherwise.
	client func(net.Conn) string

	mu      sync.Mutex
	pending map[string][]*gateConn // by client, oldest first
	n       int                    // the connections in pending
	peekBuf []byte
}

// NewGate returns the Gate on ln with the package's limits, for a server whose token is
// token.
func NewGate(ln net.Listener, token string) *Gate {
	return &Gate{Listener: ln, token: []byte(token), wait: TokenWait, perClient: PendingPerClient, max: PendingMax,
		client: clientOf, pending: map[string][]*gateConn{}}
}

// Accept returns the next connection at once, making room for it among the connections
// that have not shown the token.
func (g *Gate) Accept() (net.Conn, error) {
	c, err := g.Listener.Accept()
	if err != nil {
		return nil, err
	}
	gc := &gateConn{Conn: c, g: g, client: g.client(c), pending: true}
	g.mu.Lock()
	victim := g.victim(gc.client)
	if victim != nil {
		g.drop(victim)
	}
	g.pending[gc.client] = append(g.pending[gc.client], gc)
	g.n++
	gc.timer = time.AfterFunc(g.wait, gc.expire)
	g.mu.Unlock()
	if victim != nil {
		victim.Conn.Close()
	}
	return gc, nil
}

// victim is the connection to close so that one more of client's fits, or nil: the
// oldest of client's when it has its share, else, when all are taken, the oldest of the
// client holding most. A candidate whose unread bytes hold the token is the token
// holder's: it leaves the pending connections instead, and the next is looked at. g.mu
// is held.
func (g *Gate) victim(client string) *gateConn {
	for {
		var from []*gateConn
		if l := g.pending[client]; len(l) >= g.perClient {
			from = l
		} else if g.n < g.max {
			return nil
		} else {
			for _, l := range g.pending {
				if len(l) > len(from) {
					from = l
				}
			}
		}
		c := from[0]
		if !g.holdsToken(c) {
			return c
		}
		g.drop(c)
	}
}

// holdsToken says whether the bytes c sent and the server has not read yet hold the token.
func (g *Gate) holdsToken(c *gateConn) bool {
	if len(g.token) == 0 {
		return false
	}
	if g.peekBuf == nil {
		g.peekBuf = make([]byte, peekSize)
	}
	n := peek(c.Conn, g.peekBuf)
	return bytes.Contains(g.peekBuf[:n], g.token)
}

// peekSize is how much of a connection's unread bytes is looked at for the token: a
// request line and headers of the page's size.
const peekSize = 8 << 10

// drop takes gc out of the pending connections; g.mu is held.
func (g *Gate) drop(gc *gateConn) {
	if !gc.pending {
		return
	}
	gc.pending = false
	if gc.timer != nil {
		gc.timer.Stop()
	}
	l := g.pending[gc.client]
	if i := slices.Index(l, gc); i >= 0 {
		l = slices.Delete(l, i, i+1)
	}
	if len(l) == 0 {
		delete(g.pending, gc.client)
	} else {
		g.pending[gc.client] = l
	}
	g.n--
}

// Pending is the number of open connections that have not shown the token.
func (g *Gate) Pending() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}

// gateConn is a connection accepted by a Gate.
type gateConn struct {
	net.Conn
	g      *Gate
	client string
	// pending and timer are guarded by g.mu: pending until a request on it carries the
	// token; the timer closes it at TokenWait if it still is.
	pending bool
	timer   *time.Timer
	// seen is the end of what the server read from c, as long as c is pending and the
	// bytes read are a request header's, to find the token across two reads.
	seen []byte
	read int
}

// Read reads as the server does, and trusts c as soon as the bytes read hold the token,
// before the request they start is parsed.
func (c *gateConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && c.read < peekSize && len(c.g.token) > 0 {
		c.read += n
		c.seen = append(c.seen, p[:n]...)
		if bytes.Contains(c.seen, c.g.token) {
			c.trusted()
			c.read, c.seen = peekSize, nil
		} else if keep := len(c.g.token) - 1; len(c.seen) > keep {
			c.seen = append(c.seen[:0], c.seen[len(c.seen)-keep:]...)
		}
		if c.read >= peekSize {
			c.seen = nil
		}
	}
	return n, err
}

// trusted records that a request on c carried the token: c leaves the pending budget
// and is kept as the server's idle timeout allows.
func (c *gateConn) trusted() {
	c.g.mu.Lock()
	c.g.drop(c)
	c.g.mu.Unlock()
}

// expire closes c if it has not shown the token.
func (c *gateConn) expire() {
	c.g.mu.Lock()
	was := c.pending
	c.g.drop(c)
	c.g.mu.Unlock()
	if was {
		c.Conn.Close()
	}
}

func (c *gateConn) Close() error {
	c.g.mu.Lock()
	c.g.drop(c)
	c.g.mu.Unlock()
	return c.Conn.Close()
}

// clientOf names the client of c: on a loopback connection the user that opened it, when
// the system says (peerUID), else the remote address without its port.
func clientOf(c net.Conn) string {
	ra, ok := c.RemoteAddr().(*net.TCPAddr)
	if !ok {
		return c.RemoteAddr().String()
	}
	if ra.IP.IsLoopback() {
		if uid, ok := peerUID(c); ok {
			return "uid " + strconv.FormatUint(uint64(uid), 10)
		}
	}
	return ra.IP.String()
}
