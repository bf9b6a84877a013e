package sim

import (
	"context"
	"io"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// recordingServer is an MCP server whose tools only record their calls.
type recordingServer struct {
	mu    sync.Mutex
	calls []string // tool and its conversation or target
}

func (r *recordingServer) client(t *testing.T) *client.Client {
	t.Helper()
	srv := server.NewMCPServer("fake", "0", server.WithToolCapabilities(true))
	record := func(tool, key, result string) {
		srv.AddTool(mcp.NewTool(tool), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			v, _ := req.GetArguments()[key].(string)
			r.mu.Lock()
			r.calls = append(r.calls, tool+" "+v)
			r.mu.Unlock()
			return mcp.NewToolResultText(result), nil
		})
	}
	record("end_conversation", "conversation_id", `{"success":true}`)
	record("start_conversation", "target_agent_id", `{"conversation_id":"cnv_again"}`)
	c, err := client.NewInProcessClient(srv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	if _, err := c.Initialize(context.Background(), init); err != nil {
		t.Fatal(err)
	}
	return c
}

// A job queued behind a conversation another agent started (here: an ask that a merge
// ended as a duplicate of that partner's shiritori) starts when this agent itself ends
// that conversation, as it does when the partner ends it: no conversation_ended comes
// for a conversation one ended oneself.
func TestQueuedJobStartsWhenThisAgentEndsTheConversation(t *testing.T) {
	fake := &recordingServer{}
	s := &simAgent{id: "m3a", out: io.Discard, c: fake.client(t),
		jobs: map[string]*simJob{}, byHuman: map[string]*simJob{}, partners: map[string]*simPartner{},
		early: map[string][]simMessage{}}
	s.partners["cnv_shiritori"] = &simPartner{kind: "shiritori", used: map[string]bool{}}
	ask := &simJob{kind: "ask", target: "m1b", question: "what is in m3-seed.txt?", delegationID: "dlg_x"}
	s.queued = []*simJob{ask}

	// A word no word follows: the agent gives up and ends the shiritori.
	if err := s.answerPartner(simMessage{SenderID: "m1b", Content: "m1b here: I don't know about that.", ConversationID: "cnv_shiritori"}); err != nil {
		t.Fatal(err)
	}
	fake.mu.Lock()
	calls := fake.calls
	fake.mu.Unlock()
	want := []string{"end_conversation cnv_shiritori", "start_conversation m1b"}
	if len(calls) != len(want) || calls[0] != want[0] || calls[1] != want[1] {
		t.Fatalf("calls %q, want %q", calls, want)
	}
	if len(s.queued) != 0 || s.jobs["cnv_again"] != ask {
		t.Errorf("queued %v, jobs %v: want the ask started as cnv_again", s.queued, s.jobs)
	}
	if _, ok := s.partners["cnv_shiritori"]; ok {
		t.Error("the ended conversation is still a partner's")
	}
}
