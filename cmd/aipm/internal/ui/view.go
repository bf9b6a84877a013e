package ui

import (
	"errors"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aipm/aipm/filestore"
)

// state is what the page shows outside its panes: the project, the board, the agents and
// the attention list. The page reads it once; after that the event stream sends changes.
type state struct {
	meta
	Human    string   `json:"human"`
	Statuses []string `json:"statuses"`
	// Transitions is the status table: for each status, the statuses a task may move to,
	// so the page's status menu offers only those.
	Transitions map[string][]string `json:"transitions"`
	Tasks       []taskRow           `json:"tasks"`
}

// meta is the part of the state that does not grow with the number of tasks: the event
// stream sends it whole when it changed.
type meta struct {
	Project   project     `json:"project"`
	Agents    []agentRow  `json:"agents"`
	Attention []attention `json:"attention"` // the newest attentionMax
	// AttentionTotal counts them all; the page's Needs me filter shows every task among
	// them: those it can tell from the task rows (blocked, awaiting approval, broken) and
	// AttentionTasks, the tasks of the other items (messages, failed runs, landings).
	AttentionTotal int      `json:"attention_total"`
	AttentionTasks []string `json:"attention_tasks"`
}

// attentionMax is how many items of the attention list the page gets: enough to act on,
// and a bound on what a change costs when the project has many blocked tasks.
const attentionMax = 50

type project struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Status      string `json:"status"`
	OwnerID     string `json:"owner_id"`
}

// taskRow is a task as the board shows it; empty fields are left out, so the page's first
// read stays small.
type taskRow struct {
	ID            string   `json:"id"`
	Title         string   `json:"title"`
	Status        string   `json:"status"`
	Priority      string   `json:"priority,omitempty"`
	AssigneeID    string   `json:"assignee_id,omitempty"`
	ParentID      string   `json:"parent_id,omitempty"`
	Dependencies  []string `json:"dependencies,omitempty"`
	BlockedReason string   `json:"blocked_reason,omitempty"`
	Approval      string   `json:"approval,omitempty"` // only when not approved
	// Problem is why a task is unusable by the rules (a status outside the table, left by
	// a hand edit or a merge), in the words of `aipm doctor`; the page gives such tasks a
	// column of their own.
	Problem string `json:"problem,omitempty"`
	// Landing is where the task's code is, for a task on a branch of its own.
	Landing *landingRow `json:"landing,omitempty"`
	// Conflict is, for a task whose file holds a merge conflict two clones made, the
	// fields in it with both values; the task is shown as this clone's side.
	Conflict string `json:"conflict,omitempty"`

	// For the attention list, not sent.
	updatedAt    time.Time
	cascadeFrom  string
	requesterID  string
	reworkOf     string
	landReworkID string
	landAttempts int
	landDetail   string
	landMachine  string
}

func rowOf(id string, t *filestore.Task) taskRow {
	r := taskRow{ID: id, Title: t.Title, Status: t.Status, Priority: t.Priority, AssigneeID: t.AssigneeID,
		ParentID: t.ParentID, Dependencies: t.Dependencies, BlockedReason: t.BlockedReason, Problem: t.Problem(),
		Landing: landingOf(t.Landing), updatedAt: t.UpdatedAt, cascadeFrom: t.CascadeFrom, requesterID: t.RequesterID, reworkOf: t.ReworkOf}
	if l := t.Landing; l != nil {
		r.landReworkID, r.landAttempts, r.landDetail, r.landMachine = l.ReworkTaskID, l.Attempts, l.Detail, l.Machine
	}
	if t.Approval != filestore.ApprovalApproved {
		r.Approval = t.Approval
	}
	if t.Conflict != nil {
		r.Conflict = t.Conflict.String(t)
	}
	return r
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
	Kind    string `json:"kind"` // approval, message, blocked, landing, failed_run, failing_start, unapproved_command, held_agent, invalid, conflict, unverified_request
	TaskID  string `json:"task_id,omitempty"`
	AgentID string `json:"agent_id,omitempty"`
	RunID   string `json:"run_id,omitempty"`
	// Machine is, for a landing, the machine whose clone holds its worktree when it is
	// not this one: only there can it be retried.
	Machine string    `json:"machine,omitempty"`
	Text    string    `json:"text"`
	At      time.Time `json:"at"`
}

// board is the server's copy of the task rows, kept so that a change costs what changed:
// a full read at each page load, then one file per changed task.
type board struct {
	mu   sync.Mutex
	rows map[string]taskRow
}

func (s *Server) getState(w http.ResponseWriter, r *http.Request) {
	st, err := s.readState()
	if err != nil {
		storeError(w, err)
		return
	}
	writeJSON(w, st)
}

// readState reads every task afresh and the rest.
func (s *Server) readState() (*state, error) {
	fs := s.o.Store
	tasks, err := fs.Tasks(filestore.TaskFilter{})
	if err != nil {
		return nil, err
	}
	st := &state{Human: s.o.Human, Statuses: filestore.Statuses, Transitions: map[string][]string{}, Tasks: make([]taskRow, 0, len(tasks))}
	for _, from := range filestore.Statuses {
		st.Transitions[from] = []string{}
		for _, to := range filestore.Statuses {
			if filestore.CanTransition(from, to) {
				st.Transitions[from] = append(st.Transitions[from], to)
			}
		}
	}
	rows := make(map[string]taskRow, len(tasks))
	for _, t := range tasks {
		r := rowOf(t.ID, t)
		rows[t.ID] = r
		st.Tasks = append(st.Tasks, r)
	}
	s.board.mu.Lock()
	s.board.rows = rows
	s.board.mu.Unlock()
	m, err := s.readMeta()
	if err != nil {
		return nil, err
	}
	st.meta = *m
	return st, nil
}

// taskPathID is the task id a changed path names (tasks/<id>.json), taken from the file's
// name, or "".
func taskPathID(path string) string {
	name, ok := strings.CutPrefix(path, "tasks/")
	if !ok {
		return ""
	}
	id, ok := strings.CutSuffix(name, ".json")
	if !ok || filestore.ValidateEntityID(filestore.PrefixTask, id) != nil {
		return ""
	}
	return id
}

// updateRows reads the tasks the changed paths name and returns their rows, and the ids of
// those whose file is gone.
func (s *Server) updateRows(paths []string) (changed []taskRow, removed []string) {
	s.board.mu.Lock()
	defer s.board.mu.Unlock()
	if s.board.rows == nil {
		s.board.rows = map[string]taskRow{}
	}
	seen := map[string]bool{}
	for _, p := range paths {
		id := taskPathID(p)
		if id == "" || seen[id] {
			continue
		}
		seen[id] = true
		t, err := s.o.Store.Task(id)
		if err != nil {
			if errors.Is(err, filestore.ErrNotFound) {
				delete(s.board.rows, id)
				removed = append(removed, id)
			}
			continue // a file caught half-written is read again at its next change
		}
		r := rowOf(id, t)
		s.board.rows[id] = r
		changed = append(changed, r)
	}
	return changed, removed
}

// readMeta reads the project, the agents and what waits for the human, with the tasks
// from the board.
func (s *Server) readMeta() (*meta, error) {
	fs := s.o.Store
	p, err := fs.Project()
	if err != nil {
		return nil, err
	}
	m := &meta{Project: project{p.ID, p.Name, p.Description, p.Status, p.OwnerID}, Agents: []agentRow{}, Attention: []attention{}}
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
	var warned []filestore.Event
	for _, ag := range agents {
		// A history that cannot be read (a line over the bound, say) hides these warnings
		// only: `aipm doctor` names the line, and the rest of the page is drawn.
		evs, _ := fs.UnverifiedRequests(ag.ID, fs.Now().Add(-filestore.UnverifiedShown))
		warned = append(warned, evs...)
		row := agentRow{ID: ag.ID, Name: ag.Name, Type: ag.Type, Hierarchy: ag.Hierarchy, Role: ag.Role,
			ParentID: ag.ParentID, Status: ag.Status, Sessions: []sessionRow{}}
		for _, se := range live {
			if se.AgentID == ag.ID {
				row.Sessions = append(row.Sessions, sessionRow{ID: se.ID, Purpose: se.Purpose, TaskID: se.TaskID,
					Workflow: se.Workflow, Waiting: se.Waiting, StartedAt: se.CreatedAt})
			}
		}
		for _, msg := range unread {
			if msg.SenderID == ag.ID {
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
		m.Agents = append(m.Agents, row)
	}
	runs, err := fs.Executions("")
	if err != nil {
		return nil, err
	}
	spawns, err := fs.Spawns()
	if err != nil {
		return nil, err
	}
	un, err := fs.UnapprovedCommands(s.o.Aipm)
	if err != nil {
		return nil, err
	}
	held, err := fs.HeldAgents()
	if err != nil {
		return nil, err
	}
	s.board.mu.Lock()
	all := needsYou(s.board.rows, s.machine, unread, runs, spawns, un, warned, p.UpdatedAt)
	all = append(all, heldAttention(held)...)
	sortAttention(all)
	s.board.mu.Unlock()
	m.AttentionTotal, m.Attention, m.AttentionTasks = len(all), all[:min(len(all), attentionMax)], []string{}
	seen := map[string]bool{}
	for _, a := range all {
		if a.TaskID != "" && !seen[a.TaskID] && (a.Kind == "message" || a.Kind == "failed_run" || a.Kind == "landing") {
			seen[a.TaskID] = true
			m.AttentionTasks = append(m.AttentionTasks, a.TaskID)
		}
	}
	slices.Sort(m.AttentionTasks)
	return m, nil
}

// needsYou is the "Needs you" list, newest first: each source below adds its items.
// projectAt dates the items about the project's settings (unapproved commands); machine
// is this machine's id.
func needsYou(rows map[string]taskRow, machine string, unread []filestore.Message, runs []*filestore.Execution,
	spawns []*filestore.Spawn, unapproved []filestore.Unapproved, warned []filestore.Event, projectAt time.Time) []attention {
	out := []attention{}
	// Tasks: a broken file, a request waiting for approval, a block; and code that did
	// not land.
	for _, t := range rows {
		switch {
		case t.Conflict != "":
			out = append(out, attention{Kind: "conflict", TaskID: t.ID, AgentID: t.AssigneeID,
				Text: t.Title + ": two clones changed " + t.Conflict + "; keep one side: aipm resolve .ai-pm/tasks/" + t.ID + ".json --ours (or --theirs)", At: t.updatedAt})
		case t.Problem != "":
			out = append(out, attention{Kind: "invalid", TaskID: t.ID, AgentID: t.AssigneeID,
				Text: t.Title + ": " + t.Problem + "; fix tasks/" + t.ID + ".json (aipm doctor)", At: t.updatedAt})
		case t.Approval == filestore.ApprovalPending:
			text := "approve or reject: " + t.Title
			if t.requesterID != "" {
				text += " (requested by " + t.requesterID + ")"
			}
			out = append(out, attention{Kind: "approval", TaskID: t.ID, AgentID: t.AssigneeID, Text: text, At: t.updatedAt})
		case t.Status == filestore.StatusBlocked && t.cascadeFrom == "" && !underBlock(rows, t):
			// A task blocked under a blocked ancestor (by its cascade, or by its worker
			// stopping because of it) counts once, at the topmost one.
			text := "blocked: " + t.Title
			if t.BlockedReason != "" {
				text += " — " + t.BlockedReason
			}
			out = append(out, attention{Kind: "blocked", TaskID: t.ID, AgentID: t.AssigneeID, Text: text, At: t.updatedAt})
		}
		// Code that did not land, past the attempts allowed: retry or abandon.
		if a, ok := landingNeedsYou(rows, t, machine); ok {
			out = append(out, a)
		}
	}
	// Messages the human has not read.
	for _, msg := range unread {
		// The store's own request for an approval is the approval item above while the
		// task waits, and handled once it does not: one item per thing, gone when done.
		if _, known := rows[msg.RelatedTaskID]; known && msg.SenderID == filestore.SystemSender {
			continue
		}
		out = append(out, attention{Kind: "message", AgentID: msg.SenderID, TaskID: msg.RelatedTaskID,
			Text: msg.SenderID + ": " + clip(msg.Content, 140), At: msg.CreatedAt})
	}
	// The latest run of each open task when it failed: once the task is done or cancelled,
	// or a later run followed, someone has dealt with it. A run cut short by aipm run
	// shutting down (Ctrl-C) is no failure.
	latest := map[string]bool{} // tasks whose latest run was seen (runs come newest first)
	for _, ex := range runs {
		t, ok := rows[ex.TaskID]
		seen := latest[ex.TaskID]
		latest[ex.TaskID] = true
		if seen || ex.Status != filestore.ExecFailed || ex.Interrupted || !ok || filestore.Finished(t.Status) {
			continue
		}
		text := "run failed: " + ex.AgentID + " on " + t.Title
		if ex.ExitCode != nil {
			text += " (exit code " + strconv.Itoa(*ex.ExitCode) + ")"
		}
		out = append(out, attention{Kind: "failed_run", TaskID: ex.TaskID, AgentID: ex.AgentID, RunID: ex.ID, Text: text, At: ex.UpdatedAt})
	}
	// What keeps agents from starting: the latest start of an agent and purpose that really
	// failed (with its log; not a stop by Ctrl-C or shutdown), and the agent commands this
	// machine has not approved.
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
		out = append(out, attention{Kind: "failing_start", AgentID: sp.AgentID, TaskID: sp.TaskID, Text: text, At: *sp.EndedAt})
	}
	for _, u := range unapproved {
		out = append(out, attention{Kind: "unapproved_command", AgentID: u.Agents[0],
			Text: "settings.agent_commands." + u.Name + " (used by " + strings.Join(u.Agents, ", ") +
				") is not approved on this machine: aipm run starts nothing with it; review and approve it with `aipm trust`",
			At: projectAt})
	}
	// Chat requests an agent acted on that its messages do not show (seed 000's warning):
	// the human asks the superior named whether it asked.
	for _, e := range warned {
		out = append(out, attention{Kind: "unverified_request", AgentID: e.Actor, TaskID: e.To,
			Text: e.Actor + " " + e.Reason + ", who may not have asked: " + e.Warning, At: e.At})
	}
	sortAttention(out)
	return out
}

// sortAttention puts the "Needs you" items newest first.
func sortAttention(out []attention) {
	slices.SortStableFunc(out, func(a, b attention) int {
		if c := b.At.Compare(a.At); c != 0 {
			return c
		}
		return strings.Compare(a.Kind+a.TaskID+a.RunID+a.AgentID, b.Kind+b.TaskID+b.RunID+b.AgentID)
	})
}

// heldAttention are the agents another clone brought that wait for this machine's
// approval (filestore.HeldAgents): aipm run starts none of them until `aipm trust`.
func heldAttention(held map[string]*filestore.HeldAgent) []attention {
	var out []attention
	for _, id := range slices.Sorted(maps.Keys(held)) {
		h := held[id]
		what := "new agent " + id
		if !h.New {
			what = "agent " + id + " (it was " + h.Was + " here)"
		}
		by := h.Author
		if by == "" {
			by = "an unknown author"
		}
		commit := h.Commit
		if len(commit) > 10 {
			commit = commit[:10]
		}
		out = append(out, attention{Kind: "held_agent", AgentID: id,
			Text: what + " with " + h.Runs() + " came from another clone, in commit " + commit + " by " + by +
				": aipm run does not start it until you review it and approve it with `aipm trust --agent " + id + "`",
			At: h.ArrivedAt})
	}
	return out
}

// taskDetails is the details pane: the task, its history and the runs of it and its
// sub-tasks.
type taskDetails struct {
	*filestore.Task
	History []filestore.Event `json:"history"`
	// HistoryTotal counts the task's history events; History holds the last
	// filestore.HistoryShown of them.
	HistoryTotal int                    `json:"history_total"`
	Runs         []*filestore.Execution `json:"runs"`
	// FailedStarts are the latest failed starts of agents for it and its sub-tasks, one
	// per agent and purpose: a start that never ran has no run record, but a person must
	// see it (with its log).
	FailedStarts []*filestore.Spawn `json:"failed_starts"`
	// Moves are the statuses its status menu offers, each allowed or with the refusal.
	Moves []move `json:"moves"`
}

func (s *Server) getTask(w http.ResponseWriter, r *http.Request) {
	fs := s.o.Store
	t, err := fs.Task(r.PathValue("id"))
	if err != nil {
		storeError(w, err)
		return
	}
	d := taskDetails{Task: t, History: []filestore.Event{}, Runs: []*filestore.Execution{}, FailedStarts: []*filestore.Spawn{}}
	hist, total, err := fs.EventsTail(t.ID, filestore.HistoryShown)
	if err != nil {
		storeError(w, err)
		return
	}
	d.HistoryTotal = total
	for _, e := range hist {
		if e.Machine == s.machine {
			e.Machine = "" // the page names only the changes made elsewhere
		}
		d.History = append(d.History, e)
	}
	if d.Moves, err = s.moves(t.ID); err != nil {
		storeError(w, err)
		return
	}
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

// underBlock reports whether a task has a blocked ancestor.
func underBlock(rows map[string]taskRow, t taskRow) bool {
	seen := map[string]bool{t.ID: true}
	for p, ok := rows[t.ParentID]; ok && !seen[p.ID]; p, ok = rows[p.ParentID] {
		seen[p.ID] = true
		if p.Status == filestore.StatusBlocked {
			return true
		}
	}
	return false
}
