package ui

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"
)

// Connection limits of the HTTP server: a client that opens connections and sends
// nothing, or keeps them idle, must not exhaust the process's descriptors.
const (
	headerTimeout = 10 * time.Second
	idleTimeout   = 60 * time.Second
	// MaxConns bounds the connections open at once; the next waits in the listen queue
	// until one closes. A page uses a handful (its event stream and requests).
	MaxConns = 256
)

// HTTPServer returns the http.Server for h: a connection that sends no complete request
// header within 10 seconds, or waits idle more than idle (0: 60 seconds) for its next
// request, is closed. Serve it on LimitListener(ln, MaxConns).
func HTTPServer(ctx context.Context, h http.Handler, idle time.Duration) *http.Server {
	if idle <= 0 {
		idle = idleTimeout
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: headerTimeout,
		IdleTimeout:       idle,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
}

// LimitListener accepts at most n connections open at once.
func LimitListener(ln net.Listener, n int) net.Listener {
	return &limitListener{Listener: ln, sem: make(chan struct{}, n)}
}

type limitListener struct {
	net.Listener
	sem chan struct{}
}

func (l *limitListener) Accept() (net.Conn, error) {
	l.sem <- struct{}{}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
