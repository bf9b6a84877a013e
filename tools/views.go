package tools

import (
	"time"

	"github.com/aipm/aipm/filestore"
)

// agentView is an agent as tools show it.
type agentView struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Type      string `json:"type"`
	Hierarchy string `json:"hierarchy"`
	Role      string `json:"role"`
	ParentID  string `json:"parent_id,omitempty"`
	Status    string `json:"status"`
}

func viewAgent(a *filestore.Agent) agentView {
	return agentView{ID: a.ID, Name: a.Name, Type: a.Type, Hierarchy: a.Hierarchy, Role: a.Role, ParentID: a.ParentID, Status: a.Status}
}

// taskView is a task as tools show it: compact, empty fields left out.
type taskView struct {
	ID            string     `json:"id"`
	Title         string     `json:"title"`
	Description   string     `json:"description,omitempty"`
	Status        string     `json:"status"`
	Priority      string     `json:"priority"`
	AssigneeID    string     `json:"assignee_id,omitempty"`
	ParentID      string     `json:"parent_id,omitempty"`
	Dependencies  []string   `json:"dependencies,omitempty"`
	BlockedReason string     `json:"blocked_reason,omitempty"`
	Approval      string     `json:"approval,omitempty"`
	CreatedBy     string     `json:"created_by,omitempty"`
	UpdatedAt     time.Time  `json:"updated_at"`
	CompletedAt   *time.Time `json:"completed_at,omitempty"`
}

func viewTask(t *filestore.Task) taskView {
	v := taskView{ID: t.ID, Title: t.Title, Description: t.Description, Status: t.Status, Priority: t.Priority,
		AssigneeID: t.AssigneeID, ParentID: t.ParentID, Dependencies: t.Dependencies, BlockedReason: t.BlockedReason,
		CreatedBy: t.CreatedBy, UpdatedAt: t.UpdatedAt, CompletedAt: t.CompletedAt}
	if t.Approval != filestore.ApprovalApproved {
		v.Approval = t.Approval
	}
	return v
}

func viewTasks(ts []*filestore.Task) []taskView {
	out := make([]taskView, 0, len(ts))
	for _, t := range ts {
		out = append(out, viewTask(t))
	}
	return out
}
