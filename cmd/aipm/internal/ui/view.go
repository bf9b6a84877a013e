package ui

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aipm/aipm/filestore"
)

// state is what the page shows outside its panes: the project, the board, the agents and
// the attention list.
type state struct {
	Project   project     `json:"project"`
	Human     string      `json:"human"`
	Statuses  []string    `json:"statuses"`
	Tasks     []taskRow   `json:"tasks"`
	Agents    []agentRow  `json:"agents"`
	Attention []attention `json:"attention"`
}

type project struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Status      string `json:"status"`
	OwnerID     string `json:"owner_id"`
}

// taskRow is a task as the board shows it.
type taskRow struct {
	ID            string   `json:"id"`
	Title         string   `json:"title"`
	Status        string   `json:"status"`
	Priority      string   `json:"priority"`
	AssigneeID    string   `json:"assignee_id"`
	ParentID      string   `json:"parent_id"`
	Dependencies  []string `json:"dependencies"`
	BlockedReason string   `json:"blocked_reason"`
	Approval      string   `json:"approval"`
	// Problem is why a task is unusable by the rules (a status outside the table, left by
	// a hand edit or a merge), in the words of `aipm doctor`; the page gives such tasks a
	// column of their own.
	Problem string `json:"problem,omitempty"`
}

// agentRow is an agent, its live sessions and what it does now.
type agentRow struct {
	ID        string       `json:"id"`
	Name      string       `json:"name"`
	Type      string       `json:"type"`
	Hierarchy string       `json:"hierarchy"`
	Role      string       `json:"role"`
	ParentID  string       `json:"parent_id"`
	Status    string       `json:"status"`
	Sessions  []sessionRow `json:"sessions"`
	// Unread counts the messages from this agent the human has not read.
	Unread   int  `json:"unread"`
	ChatOpen bool `json:"chat_open"`
}

type sessionRow struct {
	ID        string    `json:"id"`
	Purpose   string    `json:"purpose"`
	TaskID    string    `json:"task_id"`
	Workflow  string    `json:"workflow"`
	Waiting   string    `json:"waiting"`
	StartedAt time.Time `json:"started_at"`
	// No last activity: it changes with every tool call, and the page redraws only when
	// what it shows changed.
}

// attention is one thing that waits for the human.
type attention struct {
	Kind    string    `json:"kind"` // approval, message, blocked, failed_run, failing_start, unapproved_command, invalid
	TaskID  string    `json:"task_id,omitempty"`
	AgentID string    `json:"agent_id,omitempty"`
	RunID   string    `json:"run_id,omitempty"`
	Text    string    `json:"text"`
	At      time.Time `json:"at"`
}

func (s *Server) getState(w http.ResponseWriter, r *http.Request) {
	st, err := s.readState()
	if err != nil {
		storeError(w, err)
		return
	}
	writeJSON(w, st)
}

func (s *Server) readState() (*state, error) {
	fs := s.o.Store
	p, err := fs.Project()
	if err != nil {
		return nil, err
	}
	st := &state{Project: project{p.ID, p.Name, p.Description, p.Status, p.OwnerID}, Human: s.o.Human,
		Statuses: filestore.Statuses, Tasks: []taskRow{}, Agents: []agentRow{}, Attention: []attention{}}
	tasks, err := fs.Tasks(filestore.TaskFilter{})
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*filestore.Task, len(tasks))
	for _, t := range tasks {
		byID[t.ID] = t
	}
	roots := filestore.BlockRoots(byID)
	for _, t := range tasks {
		deps := t.Dependencies
		if deps == nil {
			deps = []string{}
		}
		st.Tasks = append(st.Tasks, taskRow{ID: t.ID, Title: t.Title, Status: t.Status, Priority: t.Priority,
			AssigneeID: t.AssigneeID, ParentID: t.ParentID, Dependencies: deps, BlockedReason: t.BlockedReason, Approval: t.Approval,
			Problem: t.Problem()})
		at := t.UpdatedAt
		switch {
		case t.Problem() != "":
			st.Attention = append(st.Attention, attention{Kind: "invalid", TaskID: t.ID, AgentID: t.AssigneeID,
				Text: t.Title + ": " + t.Problem() + "; fix tasks/" + t.ID + ".json (aipm doctor)", At: at})
		case t.Approval == filestore.ApprovalPending:
			text := "approve or reject: " + t.Title
			if t.RequesterID != "" {
				text += " (requested by " + t.RequesterID + ")"
			}
			st.Attention = append(st.Attention, attention{Kind: "approval", TaskID: t.ID, AgentID: t.AssigneeID, Text: text, At: at})
		case t.Status == filestore.StatusBlocked && roots[t.ID] == "":
			// A task blocked under a blocked ancestor counts once, at the topmost one.
			text := "blocked: " + t.Title
			if t.BlockedReason != "" {
				text += " — " + t.BlockedReason
			}
			st.Attention = append(st.Attention, attention{Kind: "blocked", TaskID: t.ID, AgentID: t.AssigneeID, Text: text, At: at})
		}
	}
	agents, err := fs.Agents()
	if err != nil {
		return nil, err
	}
	live, err := fs.LiveSessions("")
	if err != nil {
		return nil, err
	}
	unread, _, err := fs.Unread(s.o.Human)
	if err != nil {
		return nil, err
	}
	for _, m := range unread {
		st.Attention = append(st.Attention, attention{Kind: "message", AgentID: m.SenderID, TaskID: m.RelatedTaskID,
			Text: m.SenderID + ": " + clip(m.Content, 140), At: m.CreatedAt})
	}
	for _, ag := range agents {
		row := agentRow{ID: ag.ID, Name: ag.Name, Type: ag.Type, Hierarchy: ag.Hierarchy, Role: ag.Role,
			ParentID: ag.ParentID, Status: ag.Status, Sessions: []sessionRow{}}
		for _, se := range live {
			if se.AgentID == ag.ID {
				row.Sessions = append(row.Sessions, sessionRow{ID: se.ID, Purpose: se.Purpose, TaskID: se.TaskID,
					Workflow: se.Workflow, Waiting: se.Waiting, StartedAt: se.CreatedAt})
			}
		}
		for _, m := range unread {
			if m.SenderID == ag.ID {
				row.Unread++
			}
		}
		if ag.Type == filestore.AgentAI {
			ch, err := fs.Chat(ag.ID)
			if err != nil {
				return nil, err
			}
			row.ChatOpen = ch.Open
		}
		st.Agents = append(st.Agents, row)
	}
	runs, err := fs.Executions("")
	if err != nil {
		return nil, err
	}
	latest := map[string]bool{} // tasks whose latest run was seen (runs come newest first)
	for _, ex := range runs {
		t := byID[ex.TaskID]
		seen := latest[ex.TaskID]
		latest[ex.TaskID] = true
		// A failed run waits for the human while its task is still open and no later run
		// followed it; once the task is done or cancelled, someone has dealt with it. A run
		// cut short by aipm run shutting down (Ctrl-C) is no failure.
		if seen || ex.Status != filestore.ExecFailed || ex.Interrupted || t == nil || t.Status == filestore.StatusDone || t.Status == filestore.StatusCancelled {
			continue
		}
		text := "run failed: " + ex.AgentID + " on " + t.Title
		if ex.ExitCode != nil {
			text += " (exit code " + strconv.Itoa(*ex.ExitCode) + ")"
		}
		at := ex.UpdatedAt
		st.Attention = append(st.Attention, attention{Kind: "failed_run", TaskID: ex.TaskID, AgentID: ex.AgentID, RunID: ex.ID, Text: text, At: at})
	}
	if err := s.startAttention(st); err != nil {
		return nil, err
	}
	slices.SortStableFunc(st.Attention, func(a, b attention) int { return b.At.Compare(a.At) })
	return st, nil
}

// taskDetails is the details pane: the task, its history and the runs of it and its
// sub-tasks.
type taskDetails struct {
	*filestore.Task
	History []filestore.Event      `json:"history"`
	Runs    []*filestore.Execution `json:"runs"`
	// FailedStarts are the latest failed starts of agents for it and its sub-tasks, one
	// per agent and purpose: a start that never ran has no run record, but a person must
	// see it (with its log).
	FailedStarts []*filestore.Spawn `json:"failed_starts"`
}

func (s *Server) getTask(w http.ResponseWriter, r *http.Request) {
	fs := s.o.Store
	t, err := fs.Task(r.PathValue("id"))
	if err != nil {
		storeError(w, err)
		return
	}
	d := taskDetails{Task: t, History: []filestore.Event{}, Runs: []*filestore.Execution{}, FailedStarts: []*filestore.Spawn{}}
	hist, err := fs.Events(t.ID)
	if err != nil {
		storeError(w, err)
		return
	}
	d.History = append(d.History, hist...)
	sub, err := fs.Subtree(t.ID)
	if err != nil {
		storeError(w, err)
		return
	}
	in := map[string]bool{t.ID: true}
	for _, c := range sub {
		in[c.ID] = true
	}
	all, err := fs.Executions("")
	if err != nil {
		storeError(w, err)
		return
	}
	for i := len(all) - 1; i >= 0; i-- { // Executions is newest first; the pane lists oldest first
		if in[all[i].TaskID] {
			d.Runs = append(d.Runs, all[i])
		}
	}
	spawns, err := fs.Spawns()
	if err != nil {
		storeError(w, err)
		return
	}
	last := map[string]*filestore.Spawn{}
	var keys []string
	for _, sp := range spawns { // oldest first: the last one per agent and purpose wins
		if !in[sp.TaskID] {
			continue
		}
		k := sp.AgentID + "/" + sp.Purpose
		if _, ok := last[k]; !ok {
			keys = append(keys, k)
		}
		last[k] = sp
	}
	for _, k := range keys {
		if last[k].Failed() {
			d.FailedStarts = append(d.FailedStarts, last[k])
		}
	}
	writeJSON(w, d)
}

// logTail is how many lines of a run's log the page shows.
const logTail = 400

func (s *Server) getLog(w http.ResponseWriter, r *http.Request) {
	page, err := s.o.Store.ExecutionLog(r.PathValue("id"), logTail, -1, 0)
	if err != nil {
		storeError(w, err)
		return
	}
	lines := page.Lines
	if lines == nil {
		lines = []string{}
	}
	writeJSON(w, map[string]any{"path": page.Path, "lines": lines, "total_lines": page.TotalLines, "truncated": page.Truncated})
}

// chatLimit is how many messages of a chat the pane shows.
const chatLimit = 200

func (s *Server) getChat(w http.ResponseWriter, r *http.Request) {
	fs := s.o.Store
	partner, err := fs.Agent(r.PathValue("agent"))
	if err != nil {
		storeError(w, err)
		return
	}
	page, err := fs.MessagesWith(s.o.Human, partner.ID, chatLimit)
	if err != nil {
		storeError(w, err)
		return
	}
	msgs := page.Messages
	for i := range msgs {
		if msgs[i].ReceiverID == "" {
			msgs[i].ReceiverID = s.o.Human
		}
	}
	if msgs == nil {
		msgs = []filestore.Message{}
	}
	writeJSON(w, map[string]any{"agent": partner.ID, "human": s.o.Human, "messages": msgs, "truncated": page.Truncated})
}

// clip shortens text for a one-line list entry.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// startAttention adds what keeps agents from starting: the latest start of an agent and
// purpose that really failed (with its log; not a stop by Ctrl-C or shutdown), and the
// agent commands this machine has not approved.
func (s *Server) startAttention(st *state) error {
	fs := s.o.Store
	spawns, err := fs.Spawns()
	if err != nil {
		return err
	}
	last := map[string]*filestore.Spawn{}
	var keys []string
	for _, sp := range spawns { // oldest first
		k := sp.AgentID + "/" + sp.Purpose
		if _, ok := last[k]; !ok {
			keys = append(keys, k)
		}
		last[k] = sp
	}
	for _, k := range keys {
		sp := last[k]
		if !sp.Failed() {
			continue
		}
		text := "cannot start " + k + ": " + sp.Outcome
		if sp.ExitCode != nil {
			text += " (exit code " + strconv.Itoa(*sp.ExitCode) + ")"
		}
		text += "; log " + sp.LogPath
		st.Attention = append(st.Attention, attention{Kind: "failing_start", AgentID: sp.AgentID, TaskID: sp.TaskID, Text: text, At: *sp.EndedAt})
	}
	un, err := fs.UnapprovedCommands()
	if err != nil {
		return err
	}
	p, err := fs.Project()
	if err != nil {
		return err
	}
	for _, u := range un {
		st.Attention = append(st.Attention, attention{Kind: "unapproved_command", AgentID: u.Agents[0],
			Text: "settings.agent_commands." + u.Name + " (used by " + strings.Join(u.Agents, ", ") +
				") is not approved on this machine: aipm run starts nothing with it; review and approve it with `aipm trust`",
			At: p.UpdatedAt})
	}
	return nil
}
