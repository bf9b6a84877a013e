package ui

import (
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

// Gate is a listener that keeps the connections which have not yet carried a request with
// the token (Server marks them) within PendingPerClient and PendingMax, and closes each
// one TokenWait after it was accepted unless it has shown the token by then.
type Gate struct {
	net.Listener
	wait           time.Duration
	perClient, max int
	// client names a connection's client; clientOf unless a test says otherwise.
	client func(net.Conn) string

	mu      sync.Mutex
	pending map[string][]*gateConn // by client, oldest first
	n       int                    // the connections in pending
}

// NewGate returns the Gate on ln with the package's limits.
func NewGate(ln net.Listener) *Gate {
	return &Gate{Listener: ln, wait: TokenWait, perClient: PendingPerClient, max: PendingMax,
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

// victim is the connection to close so that one more of client's fits, or nil.
func (g *Gate) victim(client string) *gateConn {
	if l := g.pending[client]; len(l) >= g.perClient {
		return l[0]
	}
	if g.n < g.max {
		return nil
	}
	var most []*gateConn
	for _, l := range g.pending {
		if len(l) > len(most) {
			most = l
		}
	}
	return most[0]
}

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
