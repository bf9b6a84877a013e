package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// benchClient is the MCP client of the benchmarks that drive many servers at once: JSON-RPC
// over a server's stdin and stdout, with one decoding of each answer. mcp-go's client
// decodes an answer four times over (its transport, then the result three times); with
// thirty servers answering a few kilobytes each on two cores, that made the driving
// client a sixth of BenchmarkScale's CPU in its thirty-process phase, taken from the
// servers it measures. The protocol is the same: initialize, notifications/initialized,
// then tools/call requests, any number of them in flight.
type benchClient struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	wmu   sync.Mutex // one request line at a time

	mu      sync.Mutex
	next    int64
	pending map[int64]chan benchReply
	readErr error         // why the reader stopped
	done    chan struct{} // closed when the reader stops

	closeOnce sync.Once
	closeErr  error
}

// benchReply is a JSON-RPC message from the server, as far as a tools/call answer goes.
type benchReply struct {
	ID     *int64 `json:"id"`
	Method string `json:"method"` // a notification or a request of the server's: not an answer
	Result *struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// startBenchClient starts cmd (its stdin and stdout are the client's; stderr is the
// caller's) and initializes the MCP session.
func startBenchClient(ctx context.Context, cmd *exec.Cmd, clientName string) (*benchClient, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &benchClient{cmd: cmd, stdin: stdin, pending: map[int64]chan benchReply{}, done: make(chan struct{})}
	go c.read(stdout)
	init := map[string]any{
		"protocolVersion": mcp.LATEST_PROTOCOL_VERSION,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": clientName, "version": "0"},
	}
	if _, err := c.request(ctx, "initialize", init); err != nil {
		return c, fmt.Errorf("initialize: %w", err)
	}
	if err := c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}); err != nil {
		return c, fmt.Errorf("initialized: %w", err)
	}
	return c, nil
}

// read hands each answer to the request waiting for it, until the server's stdout ends.
func (c *benchClient) read(stdout io.Reader) {
	r := bufio.NewReaderSize(stdout, 64<<10)
	var line []byte
	var err error
	for {
		line, err = readLine(r, line[:0])
		if err != nil {
			break
		}
		var m benchReply
		if json.Unmarshal(line, &m) != nil || m.ID == nil || m.Method != "" {
			continue // not an answer to a request of ours
		}
		c.mu.Lock()
		ch := c.pending[*m.ID]
		delete(c.pending, *m.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
	if errors.Is(err, io.EOF) {
		err = errors.New("the server closed its output")
	}
	c.mu.Lock()
	c.readErr = err
	c.mu.Unlock()
	close(c.done)
}

// readLine appends one line of r to buf, without its newline, however long it is.
func readLine(r *bufio.Reader, buf []byte) ([]byte, error) {
	for {
		part, err := r.ReadSlice('\n')
		buf = append(buf, part...)
		switch {
		case err == nil:
			return buf[:len(buf)-1], nil
		case !errors.Is(err, bufio.ErrBufferFull):
			return buf, err
		}
	}
}

func (c *benchClient) send(msg any) error {
	data, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err = c.stdin.Write(append(data, '\n'))
	return err
}

// request sends method with params and waits for its answer.
func (c *benchClient) request(ctx context.Context, method string, params any) (benchReply, error) {
	ch := make(chan benchReply, 1)
	c.mu.Lock()
	c.next++
	id := c.next
	c.pending[id] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}
	if err := c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		forget()
		return benchReply{}, err
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return m, fmt.Errorf("%s: error %d: %s", method, m.Error.Code, m.Error.Message)
		}
		if m.Result == nil {
			return m, fmt.Errorf("%s: an answer with neither result nor error", method)
		}
		return m, nil
	case <-c.done:
		forget()
		c.mu.Lock()
		defer c.mu.Unlock()
		return benchReply{}, c.readErr
	case <-ctx.Done():
		forget()
		return benchReply{}, ctx.Err()
	}
}

// callTool calls tool and returns the text of its first content block and whether the
// result is an error.
func (c *benchClient) callTool(ctx context.Context, tool string, args map[string]any) (string, bool, error) {
	if args == nil {
		args = map[string]any{}
	}
	m, err := c.request(ctx, "tools/call", map[string]any{"name": tool, "arguments": args})
	if err != nil {
		return "", false, err
	}
	if len(m.Result.Content) == 0 || m.Result.Content[0].Type != "text" {
		return "", m.Result.IsError, fmt.Errorf("%s: the result's first block is not text", tool)
	}
	return m.Result.Content[0].Text, m.Result.IsError, nil
}

// Close closes the server's stdin, as an agent that exits does, and waits for the
// server to end; one that has not ended after a while is killed.
// Closing again returns what the first Close did.
func (c *benchClient) Close() error {
	c.closeOnce.Do(func() {
		c.stdin.Close()
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			c.cmd.Process.Kill()
		}
		c.closeErr = c.cmd.Wait()
	})
	return c.closeErr
}
