package tools

import (
	"context"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
)

type logoutResult struct {
	Success     bool   `json:"success"`
	Message     string `json:"message"`
	Instruction string `json:"instruction"`
}

func logoutTool(s *Server) *tool {
	return &tool{
		perm: Authenticated,
		def: mcp.NewTool("logout", opts(writes(),
			mcp.WithDescription("End this session. Call it before your process exits."),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			if err := s.store.EndSession(c.session.ID, "logout"); err != nil {
				return nil, err
			}
			s.mu.Lock()
			s.owned = slices.DeleteFunc(s.owned, func(id string) bool { return id == c.session.ID })
			if s.current != "" && sessionIDOf(s.current) == c.session.ID {
				s.current = ""
			}
			s.mu.Unlock()
			return logoutResult{Success: true, Message: c.text("logout.message", c.session.ID),
				Instruction: c.text("logout.done")}, nil
		},
	}
}

func sessionIDOf(token string) string {
	for i := range len(token) {
		if token[i] == '.' {
			return token[:i]
		}
	}
	return token
}
