package tools

import (
	"context"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/mcp"
)

type delegationDoneResult struct {
	Success      bool   `json:"success"`
	DelegationID string `json:"delegation_id"`
	Status       string `json:"status"`
	TaskID       string `json:"task_id,omitempty"`
	Instruction  string `json:"instruction"`
}

func reportDelegationCompletedTool() *tool {
	return &tool{
		perm: ChatOnly,
		def: mcp.NewTool("report_delegation_completed", opts(writes(),
			mcp.WithDescription("Report the outcome of a delegation your task session gave you; the task session reads it."),
			mcp.WithString("delegation_id", mcp.Required(), mcp.Description("The delegation")),
			mcp.WithString("result", mcp.Required(), mcp.Description("What came of it: the answer, agreement or reason it failed")),
			mcp.WithString("status", mcp.Enum(filestore.DelegationCompleted, filestore.DelegationFailed), mcp.Description("completed (default) or failed")),
			sessionParam(),
		)...),
		handle: func(ctx context.Context, c *call) (any, error) {
			id, err := c.reqString("delegation_id")
			if err != nil {
				return nil, err
			}
			result, err := c.reqString("result")
			if err != nil {
				return nil, err
			}
			status, err := c.optString("status")
			if err != nil {
				return nil, err
			}
			if status == "" {
				status = filestore.DelegationCompleted
			}
			if status != filestore.DelegationCompleted && status != filestore.DelegationFailed {
				return nil, badArg("status", "must be completed or failed (got %q)", status)
			}
			d, err := c.srv.store.CompleteDelegation(c.actor(), id, status, result)
			if err != nil {
				return nil, err
			}
			// The delegating task session learns it without polling (SPEC §4.7).
			if _, _, err := c.srv.store.AddNotification(c.actor(), filestore.Notification{TargetAgentID: d.AgentID,
				TargetPurpose: filestore.PurposeTask, Type: filestore.NotifyDelegation, Action: "delegation_" + d.Status,
				TaskID: d.TaskID, ConversationID: d.ConversationID, Key: "delegation:" + d.ID + ":" + d.Status,
				Message:     c.text("report_delegation_completed.notice", d.ID, d.Status, d.TargetAgentID, d.Result),
				Instruction: c.text("report_delegation_completed.notice_instruction")}); err != nil {
				c.srv.log("notify delegation %s: %v", d.ID, err)
			}
			return delegationDoneResult{Success: true, DelegationID: d.ID, Status: d.Status, TaskID: d.TaskID,
				Instruction: c.text("report_delegation_completed.done")}, nil
		},
	}
}
