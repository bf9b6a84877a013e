package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/aipm/aipm/cmd/aipm/internal/ui"
	"github.com/aipm/aipm/tools"
	"github.com/aipm/aipm/watch"
)

// cmdUI is `aipm ui`: it serves the web view of the project (package ui) on a local
// address until interrupted, acting as the acting human (--as, AIPM_USER, the owner). Its
// first line of output is the URL to open, with this run's token.
func (a *app) cmdUI(args []string) error {
	fs := newFlags(a, "ui")
	addr := fs.String("addr", "127.0.0.1:0", "the address to serve, host:port (port 0: a free one)")
	if _, err := fs.parse(args, 0, 0, "[--addr HOST:PORT]"); err != nil {
		return err
	}
	host, port, err := net.SplitHostPort(*addr)
	if err != nil {
		return fmt.Errorf("--addr %q: want host:port, e.g. 127.0.0.1:8080 (%v)", *addr, err)
	}
	if host == "" || net.ParseIP(host) != nil && net.ParseIP(host).IsUnspecified() {
		return fmt.Errorf("--addr %q: name the host the page is opened by (e.g. 127.0.0.1:%s or myhost:%s): the server answers only requests naming it", *addr, port, port)
	}
	s, actor, err := a.openAs(fs.as)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	_, port, _ = net.SplitHostPort(ln.Addr().String())
	served := net.JoinHostPort(strings.ToLower(host), port)
	hosts := []string{served}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		hosts = append(hosts, net.JoinHostPort("localhost", port))
	}
	secret := make([]byte, 16)
	if _, err := rand.Read(secret); err != nil {
		return err
	}
	token := hex.EncodeToString(secret)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logf := func(format string, args ...any) { fmt.Fprintf(a.stderr, "aipm ui: "+format+"\n", args...) }
	// The watcher wakes the page's event streams for every change under .ai-pm/, whoever
	// made it, as it wakes the long-polls of `aipm mcp`.
	hub := &watch.Hub{}
	if err := tools.Watch(ctx, s, hub, logf); err != nil {
		return err
	}
	srv := ui.HTTPServer(ctx, ui.New(ui.Options{Store: s, Hub: hub, Human: actor.ID, Token: token, Hosts: hosts}), 0)
	a.printf("http://%s/?token=%s\n", served, token)
	fmt.Fprintf(a.stderr, "aipm ui: serving project %s as %s; interrupt (Ctrl-C) to stop\n", s.Root(), actor.ID)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ui.LimitListener(ln, ui.MaxConns)) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// The event streams end with ctx (their requests' base context), so this is quick.
	shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
