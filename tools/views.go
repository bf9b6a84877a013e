package tools

import (
	"time"

	"github.com/aipm/aipm/filestore"
	"github.com/mark3labs/mcp-go/mcp"
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

// taskRow is a task in a listing of sub-tasks: enough to decide what to look at next
// (get_task on its id descends).
type taskRow struct {
	ID            string   `json:"id"`
	Title         string   `json:"title"`
	Status        string   `json:"status"`
	AssigneeID    string   `json:"assignee_id,omitempty"`
	Dependencies  []string `json:"dependencies,omitempty"`
	BlockedReason string   `json:"blocked_reason,omitempty"`
}

func rowsOf(ts []*filestore.Task) []taskRow {
	out := make([]taskRow, 0, len(ts))
	for _, t := range ts {
		out = append(out, taskRow{ID: t.ID, Title: t.Title, Status: t.Status, AssigneeID: t.AssigneeID,
			Dependencies: t.Dependencies, BlockedReason: t.BlockedReason})
	}
	return out
}

// Bounds of a task read: a model pays for every byte, so a task shows one page of its
// direct sub-tasks, counts of its whole sub-tree, and its recent history.
const (
	defaultSubtaskPage = 25
	maxSubtaskPage     = 200
	historyTail        = 10
)

// subtaskPage is the sub-task part of get_task and get_my_task.
type subtaskPage struct {
	Subtasks []taskRow `json:"subtasks"`
	// SubtasksTotal counts the direct sub-tasks; SubtasksNext, when set, is the
	// subtasks_after value of the next page.
	SubtasksTotal int    `json:"subtasks_total"`
	SubtasksNext  string `json:"subtasks_next,omitempty"`
	// Subtree counts every descendant by status.
	Subtree map[string]int `json:"subtree"`
}

func subtaskParams() []mcp.ToolOption {
	return []mcp.ToolOption{
		mcp.WithString("subtasks_after", mcp.Description("Page on: the subtasks_next of the previous answer")),
		mcp.WithInteger("subtasks_limit", mcp.Min(1), mcp.Max(maxSubtaskPage), mcp.Description("Sub-tasks per page (default 25)")),
	}
}

// subtasks reads one page of a task's direct sub-tasks and its sub-tree counts.
func (c *call) subtasks(id string) (subtaskPage, error) {
	var out subtaskPage
	after, err := c.optString("subtasks_after")
	if err != nil {
		return out, err
	}
	limit, err := c.limitArg("subtasks_limit", defaultSubtaskPage, maxSubtaskPage)
	if err != nil {
		return out, err
	}
	page, err := c.srv.store.TaskPage(filestore.TaskFilter{ParentID: id}, after, limit)
	if err != nil {
		return out, err
	}
	counts, err := c.srv.store.SubtreeSummary(id)
	if err != nil {
		return out, err
	}
	out.Subtasks, out.SubtasksTotal, out.SubtasksNext, out.Subtree = rowsOf(page.Tasks), page.Total, page.Next, counts
	if out.Subtree == nil {
		out.Subtree = map[string]int{}
	}
	return out, nil
}

func viewTasks(ts []*filestore.Task) []taskView {
	out := make([]taskView, 0, len(ts))
	for _, t := range ts {
		out = append(out, viewTask(t))
	}
	return out
}
