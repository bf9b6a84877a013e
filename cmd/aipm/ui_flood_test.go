package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A local user without the token opens far more connections to a real `aipm ui` than it
// serves without the token — some sending nothing, some sending a request header a byte
// at a time — and keeps them open. The token holder's page still reads the state at once,
// and every one of the flood's connections is closed by the server.
func TestUIFloodDoesNotStarveTheTokenHolder(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real aipm ui and opens a thousand connections")
	}
	if _, err := exec.LookPath("aipm"); err != nil {
		t.Skip("aipm is not on PATH (TestMain puts it there)")
	}
	top := t.TempDir()
	repo := filepath.Join(top, "repo")
	os.MkdirAll(repo, 0o755)
	env := append(os.Environ(), "AIPM_USER=", "AIPM_ROOT=", "HOME="+top, "XDG_CONFIG_HOME="+filepath.Join(top, "config"))
	cmd := exec.Command("aipm", "init", "--owner", "alice")
	cmd.Dir, cmd.Env = repo, env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("aipm init: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	page, err := url.Parse(startUI(ctx, t, repo, env))
	if err != nil {
		t.Fatal(err)
	}
	host, token := page.Host, page.Query().Get("token")

	// The flood: more connections than the old limit of 256 open at once, and many times
	// what is served without the token, all held until the server closes them.
	const idle, slow = 1200, 100
	var opened atomic.Int64
	up := make(chan struct{}, idle+slow)             // a connection of the flood is open
	closedByServer := make(chan struct{}, idle+slow) // the server closed one
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	defer func() {
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}()
	hold := func(slowly bool) {
		defer wg.Done()
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Errorf("the flood's connection: %v", err)
			return
		}
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
		opened.Add(1)
		up <- struct{}{}
		if slowly {
			go func() {
				req := "GET /api/state HTTP/1.1\r\nHost: " + host + "\r\nX-Padding: " + strings.Repeat("x", 10000)
				for i := range len(req) {
					if _, err := io.WriteString(c, req[i:i+1]); err != nil {
						return
					}
					time.Sleep(200 * time.Millisecond)
				}
			}()
		}
		c.SetReadDeadline(time.Now().Add(3 * time.Minute))
		_, err = io.Copy(io.Discard, c)
		if !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, net.ErrClosed) {
			closedByServer <- struct{}{} // EOF or a reset: the server closed it
		}
	}
	for i := range idle + slow {
		wg.Add(1)
		go hold(i >= idle)
	}
	for range idle + slow {
		select {
		case <-up:
		case <-ctx.Done():
			t.Fatalf("only %d of the flood's connections opened", opened.Load())
		}
	}

	// The token holder, on a fresh connection as a new tab would be.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+host+"/api/state", nil)
	req.Header.Set("X-Aipm-Token", token)
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("the token holder's state read, with %d connections of the flood open: %v", opened.Load(), err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the token holder's state read: %s", resp.Status)
	}
	// The server used to accept the flood first and keep each for 10 s: the state came
	// after tens of seconds. A loaded machine answers well within this.
	if took > 20*time.Second {
		t.Fatalf("the token holder's state read took %v behind the flood", took)
	}
	t.Logf("state read in %v with %d connections of the flood open", took, opened.Load())

	// Every one of the flood's connections is closed by the server, none left to wait for
	// its own deadline.
	deadline := time.After(2 * time.Minute)
	for n := range idle + slow {
		select {
		case <-closedByServer:
		case <-deadline:
			t.Fatalf("%d of the flood's %d connections closed by the server after %v", n, idle+slow, time.Since(start))
		}
	}
}
