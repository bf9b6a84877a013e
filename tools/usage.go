package tools

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// counted wraps a tool's handler with the session's usage count: one call, the bytes of its
// arguments and of its result, written to runtime/usage/ for the session's run record. A
// call is counted for the session it acted for (the new one, for authenticate) if this
// process serves it; a call before any session is nobody's.
func (s *Server) counted(name string, h server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if endsRun(name) {
			s.flushUsage() // the run record this call may close reads the counts so far
		}
		if name != "authenticate" {
			if id := s.callerSession(req); id != "" {
				s.inCall(id, 1)
				defer s.inCall(id, -1)
			}
		}
		res, err := h(ctx, req)
		tok, _ := req.GetArguments()["session_token"].(string)
		if tok == "" || name == "authenticate" {
			s.mu.Lock()
			tok = s.current
			s.mu.Unlock()
		}
		id, _, _ := strings.Cut(tok, ".")
		if id == "" {
			return res, err
		}
		in := 0
		if req.Params.Arguments != nil {
			if b, err := json.Marshal(req.Params.Arguments); err == nil {
				in = len(b)
			}
		}
		out := 0
		if res != nil {
			for _, c := range res.Content {
				if tc, ok := c.(mcp.TextContent); ok {
					out += len(tc.Text)
				}
			}
		}
		s.count(id, name, in, out)
		return res, err
	}
}

// callerSession is the id of the session a call acts for, as far as it is known before
// the call runs: its session_token, else the connection's session.
func (s *Server) callerSession(req mcp.CallToolRequest) string {
	tok, _ := req.GetArguments()["session_token"].(string)
	if tok == "" {
		s.mu.Lock()
		tok = s.current
		s.mu.Unlock()
	}
	id, _, _ := strings.Cut(tok, ".")
	return id
}

// inCall counts a call of a session this process serves in (+1) or out (-1), and has the
// usage file say so within usageEvery: the coordinator reads a call in flight as a wait
// the server is serving, not as silence.
func (s *Server) inCall(id string, d int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.ownedAs[id]; !ok {
		return
	}
	if n := s.inFlight[id] + d; n > 0 {
		s.inFlight[id] = n
	} else {
		delete(s.inFlight, id)
	}
	if s.usageDue == nil {
		s.usageDue = map[string]bool{}
	}
	s.usageDue[id] = true
	if s.usageTimer == nil {
		s.usageTimer = time.AfterFunc(usageEvery, s.flushUsage)
	}
}

// count adds one call to a session this process serves and records the total.
func (s *Server) count(id, name string, in, out int) {
	s.mu.Lock()
	if _, ok := s.ownedAs[id]; !ok {
		s.mu.Unlock()
		return
	}
	u := s.usage[id]
	u.Add(in, out)
	s.usage[id] = u
	if s.usageDue == nil {
		s.usageDue = map[string]bool{}
	}
	s.usageDue[id] = true
	final := endsRun(name)
	if !final && s.usageTimer == nil {
		s.usageTimer = time.AfterFunc(usageEvery, s.flushUsage)
	}
	s.mu.Unlock()
	if !final {
		return
	}
	s.flushUsage()
	if name == "report_completed" || name == "logout" {
		// These close the run record before their own call is counted.
		if err := s.store.SettleUsage(id); err != nil {
			s.log("usage of %s: %v", id, err)
		}
	}
}

// usageEvery is how often a busy session's counts are written. The file is bookkeeping,
// read when the session's run record closes, while each write costs the call that makes
// it; so counts are written at most this often, and at once around the calls that may
// close a run record (endsRun) and when the server stops (Close). A server killed outright
// loses the counts of its last second. Every 250 ms, the writes of thirty busy servers
// (a file and a rename each) were 3.5% of their CPU.
const usageEvery = time.Second

// endsRun tells the calls that may end a session, and with it close its run record.
func endsRun(name string) bool {
	return name == "report_completed" || name == "logout" || name == "authenticate"
}

// flushUsage writes the counts not yet written. Written under the mutex: two flushes
// write in the order they counted, so a file never goes back.
func (s *Server) flushUsage() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.usageTimer != nil {
		s.usageTimer.Stop()
		s.usageTimer = nil
	}
	for id := range s.usageDue {
		if err := s.store.RecordUsage(id, s.usage[id], s.inFlight[id]); err != nil {
			s.log("usage of %s: %v", id, err)
		}
	}
	clear(s.usageDue)
}
