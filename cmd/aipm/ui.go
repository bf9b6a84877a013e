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
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/aipm/aipm/cmd/aipm/internal/coordinator"
	"github.com/aipm/aipm/cmd/aipm/internal/land"
	"github.com/aipm/aipm/cmd/aipm/internal/ui"
	"github.com/aipm/aipm/tools"
	"github.com/aipm/aipm/watch"
)

// cmdUI is `aipm ui`: it serves the web view of the project (package ui) on a local
// address until interrupted, acting as the acting human (--as, AIPM_USER, the owner). Its
// first line of output is the URL to open, with the machine's token (uiToken).
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
	// The token lives with what this machine trusts, outside the repository: a
	// runtime/ui-token that came with a clone must not be the key to this page.
	mdir, err := s.MachineDir()
	if err != nil {
		return err
	}
	token, err := uiToken(filepath.Join(mdir, "ui-token"))
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logf := func(format string, args ...any) { fmt.Fprintf(a.stderr, "aipm ui: "+format+"\n", args...) }
	// The watcher wakes the page's event streams for every change under .ai-pm/, whoever
	// made it, as it wakes the long-polls of `aipm mcp`.
	hub := &watch.Hub{}
	if err := tools.Watch(ctx, s, hub, logf); err != nil {
		return err
	}
	exe, err := coordinator.Executable()
	if err != nil {
		return err
	}
	o := ui.Options{Store: s, Hub: hub, Human: actor.ID, Token: token, Hosts: hosts, Aipm: exe}
	// The page shows each task's diff and hands landings back to this clone's queue, as
	// `aipm task show` and `aipm land retry|abandon` do.
	if q, ok := land.New(s, nil); ok {
		o.Queue = q
	}
	srv := ui.HTTPServer(ctx, ui.New(o), 0)
	a.printf("http://%s/?token=%s\n", served, token)
	fmt.Fprintf(a.stderr, "aipm ui: serving project %s as %s; interrupt (Ctrl-C) to stop\n", s.Root(), actor.ID)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ui.NewGate(ln, token)) }()
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

// uiToken is this machine's token for the web view, kept in the store's git-ignored runtime
// area (mode 0600) so that a tab, reloaded or bookmarked, keeps working when `aipm ui` is
// started again on the same address. The first `aipm ui` makes it; removing the file
// revokes it (the next start makes a new one).
func uiToken(path string) (string, error) {
	valid := func(b []byte) bool {
		_, err := hex.DecodeString(string(b))
		return len(b) == 32 && err == nil
	}
	damaged := false
	if b, err := os.ReadFile(path); err == nil {
		if tok := strings.TrimSpace(string(b)); valid([]byte(tok)) {
			return tok, nil
		}
		damaged = true // replaced below
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	secret := make([]byte, 16)
	if _, err := rand.Read(secret); err != nil {
		return "", err
	}
	tok := hex.EncodeToString(secret)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	// Two servers starting at once: the file is written whole under a temporary name and
	// linked in place; the one that loses reads the winner's.
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if err := os.WriteFile(tmp, []byte(tok+"\n"), 0o600); err != nil {
		return "", err
	}
	defer os.Remove(tmp)
	if damaged {
		os.Remove(path)
	}
	if err := os.Link(tmp, path); err != nil {
		if b, rerr := os.ReadFile(path); rerr == nil && valid([]byte(strings.TrimSpace(string(b)))) {
			return strings.TrimSpace(string(b)), nil
		}
		return "", err
	}
	return tok, nil
}
