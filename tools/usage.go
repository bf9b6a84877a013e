package tools

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// counted wraps a tool's handler with the session's usage count: one call, the bytes of its
// arguments and of its result, written to runtime/usage/ for the session's run record. A
// call is counted for the session it acted for (the new one, for authenticate) if this
// process serves it; a call before any session is nobody's.
func (s *Server) counted(name string, h server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
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
	// Written under the mutex: two calls finishing together write in the order they
	// counted, so the file never goes back.
	err := s.store.WriteUsage(id, u)
	s.mu.Unlock()
	if err != nil {
		s.log("usage of %s: %v", id, err)
		return
	}
	if name == "report_completed" || name == "logout" {
		// These close the run record before their own call is counted.
		if err := s.store.SettleUsage(id); err != nil {
			s.log("usage of %s: %v", id, err)
		}
	}
}
