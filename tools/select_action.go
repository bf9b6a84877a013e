package tools

import (
	"context"
	"slices"
	"strings"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/mcp"
)

type selectResult struct {
	Success        bool   `json:"success"`
	SelectedAction string `json:"selected_action"`
	// Moot says why a choice that no longer fits was not taken; Next is then what
	// get_next_action answers now.
	Moot        string      `json:"moot,omitempty"`
	Next        *nextAction `json:"next_action,omitempty"`
	Instruction string      `json:"instruction"`
}

func selectActionTool() *tool {
	return &tool{
		perm: ManagerOnly,
		def: mcp.NewTool("select_action", opts(writes(),
			mcp.WithDescription("A manager's choice of the next step for its task (offered by get_next_action): dispatch_task, adjust, wait, or complete once every sub-task is finished."),
			mcp.WithString("action", mcp.Required(), mcp.Enum(selectDispatch, selectAdjust, selectWait, selectComplete), mcp.Description("The choice")),
			mcp.WithString("reason", mcp.Description("Why; recorded in the session's history")),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			if c.session.Purpose != filestore.PurposeTask {
				return nil, &toolError{Code: "task_session_required", Message: "select_action steers a task session (this session's purpose is " + c.session.Purpose + ")",
					Hint: "call it from your task session"}
			}
			action, err := c.reqString("action")
			if err != nil {
				return nil, err
			}
			if _, err := c.optString("reason"); err != nil {
				return nil, err
			}
			valid := []string{selectDispatch, selectAdjust, selectWait, selectComplete}
			if !slices.Contains(valid, action) {
				return nil, badArg("action", "must be one of %s (got %q)", strings.Join(valid, ", "), action)
			}
			st := c.srv.store
			sit, err := loadSituation(st, c.srv.subtreeOf, c.session, c.agent, c.lang())
			if err != nil {
				return nil, err
			}
			if len(sit.children) == 0 {
				return nil, &toolError{Code: "no_subtasks", Message: "task " + sit.main.ID + " has no sub-tasks yet",
					Hint: "create them with create_tasks_batch, then call get_next_action"}
			}
			b := sit.board()
			if !slices.Contains(b.options(len(sit.children)), action) {
				if slices.Contains(strings.Split(c.session.Offered, ","), action) {
					// Offered by get_next_action and moot now (the last running sub-task
					// finished meanwhile, say): no error, but the situation as it is now.
					te := refuseSelection(action, sit, b)
					d := sit.withSelection("", "").decide()
					if err := st.SetWorkflow(c.session.ID, d.phase, d.selected, d.baseline); err != nil {
						return nil, err
					}
					return selectResult{Success: false, Moot: te.Message, Next: d.next, Instruction: c.text("select_action.moot")}, nil
				}
				return nil, refuseSelection(action, sit, b)
			}
			baseline := ""
			if action == selectWait {
				baseline = sit.fingerprint()
			}
			if err := st.SetWorkflow(c.session.ID, c.session.Workflow, action, baseline); err != nil {
				return nil, err
			}
			return selectResult{Success: true, SelectedAction: action, Instruction: c.text("select_action.done")}, nil
		},
	}
}

// refuseSelection explains why a choice is not valid now and which are.
func refuseSelection(action string, sit *situation, b *board) *toolError {
	te := &toolError{Code: "invalid_action", Hint: "choose one of: " + strings.Join(b.options(len(sit.children)), ", ")}
	switch action {
	case selectComplete:
		var open []string
		for _, t := range sit.children {
			if !filestore.Finished(t.Status) {
				open = append(open, t.ID+" ("+t.Status+")")
			}
		}
		te.Code = "subtasks_not_finished"
		te.Message = "cannot complete: unfinished sub-tasks " + strings.Join(open, ", ")
	case selectWait:
		te.Message = "nothing to wait for: no sub-task is in progress"
		te.Hint = "dispatch sub-tasks first (select_action dispatch_task), or adjust the plan"
	case selectDispatch:
		te.Message = "nothing to dispatch: every open sub-task is running, blocked, or waiting for its dependencies"
	default:
		te.Message = "the choice " + action + " is not valid now"
	}
	return te
}
