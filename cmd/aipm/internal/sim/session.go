package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/mcp"
)

// run authenticates and drives the session to its end.
func (s *simAgent) run(purpose, passkey string) error {
	args := map[string]any{"agent_id": s.id}
	if purpose != "" {
		args["purpose"] = purpose
	}
	if passkey != "" {
		args["passkey"] = passkey
	}
	var auth struct {
		Purpose string `json:"purpose"`
		TaskID  string `json:"task_id"`
		Agent   struct {
			Name      string `json:"name"`
			Hierarchy string `json:"hierarchy"`
		} `json:"agent"`
	}
	if err := s.call("authenticate", args, &auth); err != nil {
		var te *simToolError
		if errors.As(err, &te) && (te.Code == "no_work" || te.Code == "project_paused") {
			s.logf("authenticate → %s: %s", te.Code, te.Message)
			return nil
		}
		return err
	}
	s.purpose, s.taskID, s.name, s.hierarchy = auth.Purpose, auth.TaskID, auth.Agent.Name, auth.Agent.Hierarchy
	if s.name == "" {
		s.name = s.id
	}
	if s.purpose == filestore.PurposeTask {
		s.logf("authenticated: task session for %s (%s)", s.taskID, s.hierarchy)
		return s.loop(s.taskRound, s.taskAction)
	}
	s.logf("authenticated: %s session", s.purpose)
	return s.loop(s.chatRound, nil)
}

// loop runs rounds until the session is over, handling interrupts (and, in task
// sessions, answers a wait gave back that call for another action) between them.
func (s *simAgent) loop(round func() error, act func(*simNext) error) error {
	for range simMaxRounds {
		err := round()
		for range 10 {
			var ie *simInterrupt
			var dv *simDivert
			if errors.As(err, &ie) {
				err = s.onInterrupt(ie)
			} else if errors.As(err, &dv) && act != nil {
				err = act(dv.next)
			} else {
				break
			}
		}
		if errors.Is(err, errSimDone) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return fmt.Errorf("sim-agent %s: gave up after %d rounds of get_next_action", s.id, simMaxRounds)
}

// simToolError is a tool's isError result.
type simToolError struct {
	Tool    string `json:"-"`
	Code    string `json:"error"`
	Message string `json:"message"`
	Hint    string `json:"hint"`
}

func (e *simToolError) Error() string { return fmt.Sprintf("%s: %s: %s", e.Tool, e.Code, e.Message) }

// simInterrupt is a result replaced by the interrupt notice; notes are the interrupts
// read right after, newest first.
type simInterrupt struct {
	tool  string
	notes []simNotification
}

func (e *simInterrupt) Error() string { return "interrupted during " + e.tool }

// simDivert hands the loop a get_next_action answer a wait got instead of what it waited
// for (the task was blocked meanwhile, say).
type simDivert struct{ next *simNext }

func (e *simDivert) Error() string { return "get_next_action answered " + e.next.Action }

type simNotification struct {
	Type    string `json:"type"`
	Action  string `json:"action"`
	TaskID  string `json:"task_id"`
	Message string `json:"message"`
}

// call calls a tool and decodes its JSON result into out (if not nil). A JSON-RPC error
// is returned as is (fatal for the run), an isError result as *simToolError, and an
// interrupt notice, once the notifications are read, as *simInterrupt.
func (s *simAgent) call(tool string, args map[string]any, out any) error {
	if args == nil {
		args = map[string]any{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), simCallTimeout)
	defer cancel()
	res, err := s.c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}})
	if err != nil {
		return fmt.Errorf("%s: %w", tool, err)
	}
	var text strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	body := []byte(text.String())
	if res.IsError {
		te := &simToolError{Tool: tool}
		if err := json.Unmarshal(body, te); err != nil || te.Code == "" {
			te.Code, te.Message = "unknown", text.String()
		}
		return te
	}
	var probe struct {
		Interrupted bool `json:"interrupted"`
	}
	if json.Unmarshal(body, &probe) == nil && probe.Interrupted {
		var ns struct {
			Notifications []simNotification `json:"notifications"`
		}
		if err := s.call("get_notifications", nil, &ns); err != nil {
			return err
		}
		ie := &simInterrupt{tool: tool}
		for _, n := range ns.Notifications {
			if n.Type == filestore.NotifyInterrupt {
				ie.notes = append(ie.notes, n)
			}
		}
		return ie
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			return fmt.Errorf("%s: unreadable result %q: %w", tool, simClip(text.String(), 200), err)
		}
	}
	var follow struct {
		Next *simNext `json:"next_action"`
	}
	if tool != "get_next_action" && json.Unmarshal(body, &follow) == nil && follow.Next != nil && follow.Next.Action != "" {
		s.next = follow.Next
	}
	return nil
}

// onInterrupt follows the interrupts read after an interrupted call, the newest first.
func (s *simAgent) onInterrupt(ie *simInterrupt) error {
	s.next = nil // what a result said before the interrupt no longer holds
	for _, n := range ie.notes {
		s.logf("interrupted (%s): %s", n.Action, n.Message)
	}
	for _, n := range ie.notes {
		switch n.Action {
		case filestore.ActionPause:
			// The task stays in progress; the coordinator starts the agent again on resume.
			return s.logout()
		case filestore.ActionBlocked, filestore.ActionCancel:
			if s.purpose != filestore.PurposeTask || (n.TaskID != "" && n.TaskID != s.taskID) {
				continue // a sub-task: get_next_action says how to go on
			}
			if n.Action == filestore.ActionCancel {
				// Cancelled or given to another agent: the task is no longer ours to change.
				return s.logout()
			}
			// Blocked: get_next_action says to report it, unless it was unblocked meanwhile.
			return nil
		}
	}
	return nil
}

// logout ends the session (if it still exists) and the run.
func (s *simAgent) logout() error {
	if err := s.call("logout", nil, nil); err != nil {
		var te *simToolError
		if !errors.As(err, &te) {
			return err
		}
		s.logf("logout: %s", te.Code)
	} else {
		s.logf("logged out")
	}
	return errSimDone
}

func (s *simAgent) nextAction() (*simNext, error) {
	var n simNext
	if err := s.call("get_next_action", nil, &n); err != nil {
		return nil, err
	}
	s.logf("get_next_action → %s", n.describe())
	return &n, nil
}
