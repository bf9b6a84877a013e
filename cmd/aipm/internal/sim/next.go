package sim

import (
	"fmt"
	"strings"

	"github.com/aipm/aipm/filestore"
)

// simNext is a get_next_action answer, task or chat, with the fields the sim reads.
type simNext struct {
	Action string `json:"action"`
	State  string `json:"state"`
	Reason string `json:"reason"`

	Task                 *simTask        `json:"task"`
	CurrentSubtask       *simTask        `json:"current_subtask"`
	NextSubtask          *simTask        `json:"next_subtask"`
	CompletedSubtasks    []simTask       `json:"completed_subtasks"`
	DispatchableSubtasks []simLine       `json:"dispatchable_subtasks"`
	WaitingSubtasks      []simWaiting    `json:"waiting_subtasks"`
	SelfBlocked          []simBlocked    `json:"self_blocked_subtasks"`
	UserBlocked          []simBlocked    `json:"user_blocked_subtasks"`
	OtherBlocked         []simBlocked    `json:"other_blocked_subtasks"`
	AvailableWorkers     []simWorker     `json:"available_workers"`
	Options              []string        `json:"options"`
	Delegations          []simDelegation `json:"delegations"`
	DeadDependencies     []struct {
		ID              string `json:"id"`
		DependsOn       string `json:"depends_on"`
		DependsOnStatus string `json:"depends_on_status"`
	} `json:"dead_dependencies"`
	Call *simCall `json:"call"`

	ConversationID string `json:"conversation_id"`
	FromAgentID    string `json:"from_agent_id"`
	TargetAgentID  string `json:"target_agent_id"`
	Purpose        string `json:"purpose"`
	DelegationID   string `json:"delegation_id"`
}

// simCall is the call an answer spells out, literal arguments and all.
type simCall struct {
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments"`
}

type simTask struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Status      string `json:"status"`
	Summary     string `json:"completion_summary"`
}

type simLine struct {
	ID         string `json:"id"`
	Title      string `json:"title"`
	Status     string `json:"status"`
	AssigneeID string `json:"assignee_id"`
	DepsMet    bool   `json:"deps_met"`
}

type simWaiting struct {
	ID         string   `json:"id"`
	WaitingFor []string `json:"waiting_for"`
}

type simBlocked struct {
	ID            string `json:"id"`
	BlockedReason string `json:"blocked_reason"`
	BlockedBy     string `json:"blocked_by"`
}

type simWorker struct {
	ID          string `json:"id"`
	ActiveTasks int    `json:"active_tasks"`
}

type simDelegation struct {
	DelegationID string `json:"delegation_id"`
	Status       string `json:"status"`
	Result       string `json:"result"`
}

func (d *simDelegation) finished() bool {
	return d.Status == filestore.DelegationCompleted || d.Status == filestore.DelegationFailed
}

// describe is the answer in a few words, for the log.
func (n *simNext) describe() string {
	out := n.Action
	switch {
	case n.CurrentSubtask != nil:
		out += fmt.Sprintf(" %s (%s)", n.CurrentSubtask.ID, n.CurrentSubtask.Title)
	case n.NextSubtask != nil:
		out += fmt.Sprintf(" %s (%s)", n.NextSubtask.ID, n.NextSubtask.Title)
	case n.Action == "situational_awareness":
		out += " [" + strings.Join(n.Options, ", ") + "]"
	case n.Action == "dispatch_task":
		out += fmt.Sprintf(" (%d dispatchable)", len(n.DispatchableSubtasks))
	case n.ConversationID != "":
		out += " " + n.ConversationID
		if n.FromAgentID != "" {
			out += " from " + n.FromAgentID
		}
		if n.Reason != "" {
			out += " (" + n.Reason + ")"
		}
	case n.DelegationID != "":
		out += fmt.Sprintf(" %s: %s with %s", n.DelegationID, n.Purpose, n.TargetAgentID)
	case n.Task != nil && n.Action != "wait" && n.Action != "wait_for_delegation":
		out += fmt.Sprintf(" %s (%s)", n.Task.ID, n.Task.Title)
	}
	if n.State == "task_blocked" || n.State == "task_cancelled" || n.State == "task_done" {
		out += " [" + n.State + "]"
	}
	return out
}
