package tools

import (
	"context"
	"sort"

	"github.com/mark3labs/mcp-go/mcp"
)

type helpContext struct {
	Caller         string `json:"caller"` // unauthenticated, manager, worker
	AgentID        string `json:"agent_id,omitempty"`
	SessionPurpose string `json:"session_purpose,omitempty"`
}

type helpEntry struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Permission  string `json:"permission"`
}

type helpList struct {
	Context         helpContext `json:"context"`
	AvailableTools  []helpEntry `json:"available_tools"`
	TotalAvailable  int         `json:"total_available"`
	UnavailableInfo []string    `json:"unavailable_info,omitempty"`
}

type helpParam struct {
	Name        string   `json:"name"`
	Type        string   `json:"type"`
	Required    bool     `json:"required"`
	Description string   `json:"description,omitempty"`
	Enum        []string `json:"enum,omitempty"`
}

type helpDetail struct {
	Context     helpContext `json:"context"`
	Name        string      `json:"name"`
	Description string      `json:"description"`
	Permission  string      `json:"permission"`
	Available   bool        `json:"available"`
	Reason      string      `json:"reason,omitempty"`
	Parameters  []helpParam `json:"parameters"`
}

func helpTool(s *Server) *tool {
	return &tool{
		perm: Unauthenticated,
		def: mcp.NewTool("help", opts(readOnly(),
			mcp.WithDescription("List the tools you can call now, or describe one tool and its parameters."),
			mcp.WithString("tool_name", mcp.Description("A tool to describe; omit to list")),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			name, err := c.optString("tool_name")
			if err != nil {
				return nil, err
			}
			// help works without a session, but describes the caller's view when there is one.
			hc := helpContext{Caller: "unauthenticated"}
			if s.resolve(c) == nil {
				hc = helpContext{Caller: "worker", AgentID: c.agent.ID, SessionPurpose: c.session.Purpose}
				if c.agent.IsManager() {
					hc.Caller = "manager"
				}
			}
			if name != "" {
				return s.helpDetail(c, hc, name)
			}
			return s.helpList(c, hc), nil
		},
	}
}

// availability says whether the caller may use t now and, if not, why.
func (s *Server) availability(c *call, t *tool) (bool, string) {
	if t.perm == Unauthenticated {
		return true, ""
	}
	if c.session == nil {
		return false, c.text("help.authenticate_first")
	}
	if err := permits(t.perm, c.session, c.agent); err != nil {
		return false, err.(*toolError).Message
	}
	return true, ""
}

func (s *Server) helpList(c *call, hc helpContext) helpList {
	out := helpList{Context: hc, AvailableTools: []helpEntry{}}
	names := make([]string, 0, len(s.tools))
	for n := range s.tools {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t := s.tools[n]
		if ok, _ := s.availability(c, t); ok {
			out.AvailableTools = append(out.AvailableTools, helpEntry{Name: n, Description: t.def.Description, Permission: t.perm.String()})
		}
	}
	out.TotalAvailable = len(out.AvailableTools)
	switch {
	case c.session == nil:
		out.UnavailableInfo = []string{c.text("help.unauthenticated")}
	case c.session.Purpose == "task":
		out.UnavailableInfo = []string{c.text("help.task_session")}
	default:
		out.UnavailableInfo = []string{c.text("help.chat_session")}
	}
	return out
}

func (s *Server) helpDetail(c *call, hc helpContext, name string) (any, error) {
	t, ok := s.tools[name]
	if !ok {
		return nil, &toolError{Code: "tool_not_found", Message: "no tool named " + clipName(name), Hint: "call help without tool_name to list the tools"}
	}
	ok, why := s.availability(c, t)
	d := helpDetail{Context: hc, Name: name, Description: t.def.Description, Permission: t.perm.String(), Available: ok, Reason: why, Parameters: []helpParam{}}
	req := map[string]bool{}
	for _, r := range t.def.InputSchema.Required {
		req[r] = true
	}
	for pname, raw := range t.def.InputSchema.Properties {
		p := helpParam{Name: pname, Required: req[pname]}
		if m, ok := raw.(map[string]any); ok {
			p.Type, _ = m["type"].(string)
			p.Description, _ = m["description"].(string)
			if e, ok := m["enum"].([]string); ok {
				p.Enum = e
			}
		}
		d.Parameters = append(d.Parameters, p)
	}
	sort.Slice(d.Parameters, func(i, j int) bool { return d.Parameters[i].Name < d.Parameters[j].Name })
	return d, nil
}

func clipName(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}
