package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
)

type subordinatesResult struct {
	Subordinates []agentView `json:"subordinates"`
	Count        int         `json:"count"`
}

func listSubordinatesTool() *tool {
	return &tool{
		perm: ManagerOnly,
		def: mcp.NewTool("list_subordinates", opts(readOnly(),
			mcp.WithDescription("Your direct subordinates (agents whose parent is you)."),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			subs, err := c.srv.store.Subordinates(c.agent.ID)
			if err != nil {
				return nil, err
			}
			out := subordinatesResult{Subordinates: make([]agentView, 0, len(subs)), Count: len(subs)}
			for _, a := range subs {
				out.Subordinates = append(out.Subordinates, viewAgent(a))
			}
			return out, nil
		},
	}
}
