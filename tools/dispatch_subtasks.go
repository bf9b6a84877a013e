package tools

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/mcp"
)

type dispatchResult struct {
	Success    bool           `json:"success"`
	Dispatched []dispatchLine `json:"dispatched"`
	// Next is what get_next_action answers now (a wait, mostly).
	Next        *nextAction `json:"next_action,omitempty"`
	Instruction string      `json:"instruction"`
}

type dispatchLine struct {
	TaskID     string `json:"task_id"`
	AssigneeID string `json:"assignee_id"`
	Status     string `json:"status"`
	// Queued: its dependencies are not done yet; it starts when they are.
	Queued bool `json:"queued,omitempty"`
}

// dispatchSubtasksTool is a manager's dispatch in one call: assign_task and
// update_task_status(in_progress) for each sub-task, and for a sub-task whose
// dependencies are not done yet, the start once they are (get_next_action makes it while
// the manager waits).
func dispatchSubtasksTool() *tool {
	return &tool{
		perm: ManagerOnly,
		def: mcp.NewTool("dispatch_subtasks", opts(writes(),
			mcp.WithDescription("Assign and start sub-tasks in one call. One whose dependencies are not done yet starts when they are."),
			mcp.WithArray("assignments", mcp.Required(), mcp.Items(map[string]any{
				"type": "object",
				"properties": map[string]any{
					"task_id":     map[string]any{"type": "string"},
					"assignee_id": map[string]any{"type": "string"},
				},
				"required": []string{"task_id"},
			})),
			// Not in the anchor: the wait that follows a dispatch happens in this call instead of
			// a get_next_action that would only wait (one model turn fewer per dispatch).
			mcp.WithInteger("timeout_seconds", mcp.Min(0), mcp.Max(maxWaitSeconds),
				mcp.Description("Then wait up to this many seconds until something needs you, as get_next_action does (default 0: answer at once)")),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			if c.session.Purpose != filestore.PurposeTask {
				return nil, &toolError{Code: "task_session_required", Message: "dispatch_subtasks dispatches the sub-tasks of a task session's task (this session's purpose is " + c.session.Purpose + ")",
					Hint: "call it from your task session"}
			}
			raw, ok := c.args["assignments"].([]any)
			if !ok || len(raw) == 0 {
				return nil, badArg("assignments", "must be an array of at least 1 object {task_id, assignee_id}")
			}
			if len(raw) > 50 {
				return nil, badArg("assignments", "too many (%d, at most 50 in one call)", len(raw))
			}
			wait, err := c.optInt("timeout_seconds", 0)
			if err != nil {
				return nil, err
			}
			if wait < 0 {
				return nil, badArg("timeout_seconds", "must be 0 or more (got %d)", wait)
			}
			st := c.srv.store
			type job struct {
				t        *filestore.Task
				assignee string
			}
			var jobs []job
			seen := map[string]bool{}
			// Everything is checked before anything changes: a bad item loses nothing.
			for i, r := range raw {
				obj, ok := r.(map[string]any)
				if !ok {
					return nil, badArg("assignments", "item %d must be an object {task_id, assignee_id}, got %s", i, jsonType(r))
				}
				sub := &call{srv: c.srv, args: obj}
				id, err := sub.reqString("task_id")
				if err != nil {
					return nil, badArg("assignments", "item %d: task_id is required", i)
				}
				assignee, err := sub.optString("assignee_id")
				if err != nil {
					return nil, badArg("assignments", "item %d: assignee_id must be a string", i)
				}
				if seen[id] {
					return nil, badArg("assignments", "item %d: task %s is listed twice", i, id)
				}
				seen[id] = true
				t, err := st.Task(id)
				if err != nil {
					return nil, err
				}
				if t.ParentID != c.session.TaskID {
					return nil, &toolError{Code: "not_a_subtask", Message: "task " + id + " is not a direct sub-task of your task " + c.session.TaskID,
						Hint: "dispatch the sub-tasks get_next_action lists; assign deeper ones with assign_task"}
				}
				if !slices.Contains([]string{filestore.StatusTodo, filestore.StatusBacklog}, t.Status) {
					return nil, &toolError{Code: "not_dispatchable", Message: "task " + id + " is " + t.Status + ": only a todo or backlog sub-task can be dispatched",
						Hint: "leave it out; get_next_action lists what can be dispatched"}
				}
				if assignee == "" {
					assignee = t.AssigneeID
				}
				if assignee == "" || assignee == c.agent.ID {
					return nil, badArg("assignments", "item %d: task %s has no assignee: give assignee_id (one of your workers)", i, id)
				}
				a, err := st.Member(assignee)
				if err != nil {
					return nil, err
				}
				if a.ParentID != c.agent.ID {
					return nil, &toolError{Code: "unauthorized", Message: "agent " + assignee + " is not a direct subordinate of " + c.agent.ID,
						Hint: "call list_subordinates to see whom you can assign"}
				}
				jobs = append(jobs, job{t, assignee})
			}
			out := dispatchResult{Success: true, Dispatched: []dispatchLine{}}
			queued := splitIDs(c.session.Queued)
			for _, j := range jobs {
				t := j.t
				if t.AssigneeID != j.assignee {
					var err error
					if t, err = st.AssignTask(c.actor(), t.ID, j.assignee); err != nil {
						return nil, err
					}
				}
				line := dispatchLine{TaskID: t.ID, AssigneeID: t.AssigneeID, Status: t.Status}
				started, err := c.startSubtask(t)
				switch {
				case err != nil:
					return nil, err
				case started != nil:
					line.Status = started.Status
				default:
					line.Queued = true
					if !slices.Contains(queued, t.ID) {
						queued = append(queued, t.ID)
					}
				}
				out.Dispatched = append(out.Dispatched, line)
			}
			if err := st.SetQueued(c.session.ID, strings.Join(queued, ",")); err != nil {
				return nil, err
			}
			out.Next = c.followUp()
			if wait > 0 && out.Next != nil && out.Next.Action == "wait" {
				// What get_next_action would do next: wait for the workers, here.
				v, err := c.taskNextAction(ctx, time.Duration(min(wait, maxWaitSeconds))*time.Second)
				if err != nil {
					return nil, err
				}
				if n, ok := v.(*nextAction); ok && n != nil {
					out.Next = n
				}
			}
			out.Instruction = c.text("next.follow")
			if out.Next == nil {
				out.Instruction = c.text("select_action.done")
			}
			return out, nil
		},
	}
}

// startSubtask moves a pending sub-task to in_progress (a backlog one through todo). It
// returns nil, and no error, when its dependencies are not done yet.
func (c *call) startSubtask(t *filestore.Task) (*filestore.Task, error) {
	st := c.srv.store
	if t.Status == filestore.StatusBacklog {
		ch, err := st.SetTaskStatus(c.actor(), t.ID, filestore.StatusTodo, "dispatched")
		if err != nil {
			return nil, err
		}
		t = ch.Task
	}
	ch, err := st.SetTaskStatus(c.actor(), t.ID, filestore.StatusInProgress, "dispatched")
	var fe *filestore.Error
	if errors.As(err, &fe) && fe.Code == "dependencies_not_done" {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return ch.Task, nil
}

// startQueued starts the session's queued sub-tasks whose dependencies are done, drops
// those no longer waiting to start (started, finished, blocked, reassigned by someone
// else), and returns the session as it is now.
func (c *call) startQueued(se *filestore.Session) (*filestore.Session, error) {
	st := c.srv.store
	var keep []string
	for _, id := range splitIDs(se.Queued) {
		t, err := st.Task(id)
		if err != nil || !pending(t) || t.AssigneeID == "" || t.AssigneeID == c.agent.ID || t.Status == filestore.StatusBlocked {
			continue
		}
		started, err := c.startSubtask(t)
		if err != nil {
			// Not startable for another reason (approval, say): get_next_action shows it.
			c.srv.log("start queued %s: %v", id, err)
			continue
		}
		if started == nil {
			keep = append(keep, id)
		}
	}
	if err := st.SetQueued(se.ID, strings.Join(keep, ",")); err != nil {
		return nil, err
	}
	return st.Session(c.tok)
}

func splitIDs(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
