package main

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aipm/aipm/cmd/aipm/internal/coordinator"
	"github.com/aipm/aipm/cmd/aipm/internal/gitstate"
	"github.com/aipm/aipm/cmd/aipm/internal/land"
	"github.com/aipm/aipm/filestore"
)

type statusView struct {
	Project *filestore.Project `json:"project"`
	// Store is the .ai-pm directory in use; WorktreeCopy, in a linked worktree, the
	// worktree's own checked-out copy, which is not used (one store per clone).
	Store        string               `json:"store"`
	WorktreeCopy string               `json:"worktree_copy,omitempty"`
	Agents       []agentStatus        `json:"agents"`
	TaskCounts   map[string]int       `json:"task_counts"`
	LiveSessions []*filestore.Session `json:"live_sessions"`
	// Conversations are the open ones (pending, active, or ended but not yet told to both
	// sides); Delegations those not finished (pending or processing).
	Conversations []*filestore.Conversation `json:"conversations"`
	Delegations   []*filestore.Delegation   `json:"delegations"`
	// Failing are the agent processes whose latest start by `aipm run` failed or was
	// held back: what went wrong and where its output is.
	Failing []startFailure `json:"failing_starts"`
	// Unapproved are the agent commands this machine has not approved: aipm run starts
	// nothing with them until `aipm trust`.
	Unapproved []filestore.Unapproved `json:"unapproved_commands"`
	// Held are the agents another clone brought that this machine has not approved:
	// aipm run starts none of them until `aipm trust`.
	Held []*filestore.HeldAgent `json:"held_agents"`
	// Blocked are the blocked tasks with why; Invalid the tasks whose file a hand edit
	// broke (counted as "invalid" in TaskCounts), with the doctor's words.
	Blocked []taskNote `json:"blocked_tasks"`
	Invalid []taskNote `json:"invalid_tasks"`
	// Conflicted are the open tasks whose file holds a merge conflict two clones made:
	// shown as this clone's side, changed by nothing until a person keeps one side.
	Conflicted []taskNote `json:"conflicted_tasks"`
	// ConflictedFiles are the project's and agents' files holding such a conflict: they
	// are read as this clone's side, so nothing stops meanwhile.
	ConflictedFiles []taskNote `json:"conflicted_files,omitempty"`
	// Approvals are the tasks an agent asked for that wait for a human's yes or no.
	Approvals []taskNote `json:"pending_approvals"`
	// Landing is this clone's merge queue (tasks whose code waits to land on the target),
	// and NotLanded the tasks whose code did not land and waits for a person's decision.
	Landing   []taskNote `json:"landing_queue"`
	NotLanded []taskNote `json:"landing_needs_you"`
	// Sync is how the state branch syncs from this clone; nil when the store is not on
	// the state branch.
	Sync *syncStatus `json:"sync,omitempty"`
	// Elsewhere are the agents another machine's `aipm run` holds (their leases).
	Elsewhere []*filestore.Lease `json:"agents_elsewhere"`
	// Unverified are the recent chat requests agents acted on although their messages do
	// not show the request (seed 000's audit warning): the history events, newest last.
	Unverified []filestore.Event `json:"unverified_requests"`
}

// syncStatus is the state branch's sync as this clone last saw it.
type syncStatus struct {
	Remote string `json:"remote"`
	// Last is this machine's latest round (nil before the first); Unpushed the commits
	// the remote's branch lacks as last fetched (-1 when Git could not tell).
	Last     *gitstate.LastRound `json:"last_round"`
	Unpushed int                 `json:"unpushed_commits"`
}

// syncOf reads the sync status of a store on the state branch.
func syncOf(s *filestore.Store) (*syncStatus, error) {
	if !gitstate.Attached(s.Root()) {
		return nil, nil
	}
	st := &syncStatus{Remote: gitstate.Remote(s.Root()), Unpushed: -1}
	var err error
	if st.Last, err = gitstate.ReadLastRound(s); err != nil {
		return nil, err
	}
	if st.Remote != "" {
		if n, err := gitstate.Unpushed(s.Root(), st.Remote); err == nil {
			st.Unpushed = n
		}
	}
	return st, nil
}

// line says in one line how the sync stands.
func (st *syncStatus) line(now time.Time) string {
	if st.Remote == "" {
		return fmt.Sprintf("branch %s has no remote: its changes are committed here only (add one, then `aipm sync`)", gitstate.Branch)
	}
	out := fmt.Sprintf("branch %s with %s", gitstate.Branch, st.Remote)
	switch l := st.Last; {
	case l == nil:
		out += ": no round on this machine yet (`aipm run` syncs by itself; `aipm sync --once` does one round)"
	case l.Error != "":
		out += fmt.Sprintf(": the last round failed %s: %s", ago(now, l.At), strings.Join(strings.Fields(l.Error), " "))
		if l.OKAt != nil {
			out += fmt.Sprintf(" (last good round %s)", ago(now, *l.OKAt))
		}
	case l.Round == nil:
		out += fmt.Sprintf(": last round %s", ago(now, l.At))
	default:
		out += fmt.Sprintf(": last round %s, %s", ago(now, l.At), describeRound(l.Round, st.Remote))
	}
	if st.Unpushed > 0 {
		out += fmt.Sprintf("; %d commit(s) not pushed yet", st.Unpushed)
	}
	// What an earlier round brought back stays in view for a day.
	if l := st.Last; l != nil && l.Recovered != nil && !l.Recovered.At.Equal(l.At) && now.Sub(l.Recovered.At) < 24*time.Hour {
		out += fmt.Sprintf("; a round %s brought back what git alone had dropped: %s", ago(now, l.Recovered.At), strings.Join(l.Recovered.What, "; "))
	}
	// So do the suspect commits an earlier round took in.
	if l := st.Last; l != nil && l.Suspect != nil && !l.Suspect.At.Equal(l.At) && now.Sub(l.Suspect.At) < 24*time.Hour {
		out += fmt.Sprintf("; a round %s took in %d suspect commit(s): %s", ago(now, l.Suspect.At), len(l.Suspect.What), strings.Join(l.Suspect.What, "; "))
	}
	return out
}

// taskNote is a task that needs a human's eye, and why.
type taskNote struct {
	ID         string `json:"id"`
	Title      string `json:"title"`
	AssigneeID string `json:"assignee_id,omitempty"`
	Why        string `json:"why"`
	// WithIt counts the sub-tasks blocked only by this task's block (listed once, here).
	WithIt int `json:"blocked_with_it,omitempty"`
}

// startFailure is the latest start for an agent and purpose that failed (or changed
// nothing and was held back).
type startFailure struct {
	AgentID  string `json:"agent_id"`
	Purpose  string `json:"purpose"`
	SpawnID  string `json:"spawn_id"`
	InARow   int    `json:"failures_in_a_row"`
	Outcome  string `json:"outcome"`
	ExitCode int    `json:"exit_code"`
	EndedAt  string `json:"ended_at"`
	// BackoffUntil is when the coordinator may start it again ("" when not held).
	BackoffUntil string `json:"backoff_until,omitempty"`
	Log          string `json:"log"`
}

// failingStarts looks at each agent's and purpose's spawns, newest last: the latest one
// counts when it failed or was held back, with how many before it did too.
func failingStarts(spawns []*filestore.Spawn, now time.Time) []startFailure {
	type key struct{ agent, purpose string }
	byKey := map[key][]*filestore.Spawn{}
	var keys []key
	for _, sp := range spawns {
		k := key{sp.AgentID, sp.Purpose}
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], sp)
	}
	bad := func(sp *filestore.Spawn) bool { return sp.Failed() }
	var out []startFailure
	for _, k := range keys {
		list := byKey[k]
		last := list[len(list)-1]
		if !bad(last) {
			continue
		}
		n := 0
		for i := len(list) - 1; i >= 0 && bad(list[i]); i-- {
			n++
		}
		f := startFailure{AgentID: k.agent, Purpose: k.purpose, SpawnID: last.ID, InARow: n, Outcome: last.Outcome,
			EndedAt: last.EndedAt.UTC().Format(time.RFC3339), Log: last.LogPath}
		if last.ExitCode != nil {
			f.ExitCode = *last.ExitCode
		}
		if last.BackoffUntil != nil && last.BackoffUntil.After(now) {
			f.BackoffUntil = last.BackoffUntil.UTC().Format(time.RFC3339)
		}
		out = append(out, f)
	}
	return out
}

type agentStatus struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Hierarchy string `json:"hierarchy"`
	Status    string `json:"status"`
	InProg    int    `json:"tasks_in_progress"`
	Unread    int    `json:"unread_messages"`
	Notices   int    `json:"pending_notifications"`
	Sessions  string `json:"live_sessions"`
	// Doing is what the agent works on: its task in progress and, when that task has
	// sub-tasks, the step it is at.
	Doing *agentDoing `json:"doing,omitempty"`
}

// agentDoing is an agent's task in progress and its current step.
type agentDoing struct {
	TaskID     string `json:"task_id"`
	Title      string `json:"title"`
	StepID     string `json:"step_id,omitempty"`
	StepTitle  string `json:"step_title,omitempty"`
	StepsDone  int    `json:"steps_done"`
	StepsTotal int    `json:"steps_total"`
	// More counts its other tasks in progress.
	More int `json:"more_in_progress,omitempty"`
}

// doingOf finds what agent works on among tasks (the work in flight): its in-progress task
// nearest the top (a task whose parent it does not also have in progress), and that task's
// sub-task in progress, with how many of its sub-tasks (children lists them, finished
// ones too) are finished.
func doingOf(agent string, tasks []*filestore.Task, children func(id string) []*filestore.Task) *agentDoing {
	byID := map[string]*filestore.Task{}
	for _, t := range tasks {
		byID[t.ID] = t
	}
	var mine []*filestore.Task
	for _, t := range tasks {
		if t.AssigneeID == agent && t.Status == filestore.StatusInProgress {
			if p := byID[t.ParentID]; p != nil && p.AssigneeID == agent && p.Status == filestore.StatusInProgress {
				continue // a step of a task listed already
			}
			mine = append(mine, t)
		}
	}
	if len(mine) == 0 {
		return nil
	}
	top := mine[0]
	d := &agentDoing{TaskID: top.ID, Title: top.Title, More: len(mine) - 1}
	for _, t := range children(top.ID) { // in creation order: the first step in progress
		d.StepsTotal++
		if filestore.Finished(t.Status) {
			d.StepsDone++
		} else if t.Status == filestore.StatusInProgress && d.StepID == "" {
			d.StepID, d.StepTitle = t.ID, t.Title
		}
	}
	return d
}

func (a *app) cmdStatus(args []string) error {
	fs := newFlags(a, "status")
	watchIt := fs.Bool("watch", false, "keep the view on screen and redraw it whenever a file under .ai-pm changes, until interrupted")
	watchFor := fs.Duration("for", 0, "with --watch, stop after this `DURATION` (default: until interrupted)")
	full := fs.Bool("no-abbrev", false, "show whole task ids")
	if _, err := fs.parse(args, 0, 0, "[--watch [--for DURATION]]"); err != nil {
		return err
	}
	s, err := a.open()
	if err != nil {
		return err
	}
	if *watchIt {
		return a.watchStatus(s, fs.json, *full, *watchFor)
	}
	s.OneShot()
	return a.printStatus(s, fs.json, *full)
}

// printStatus prints the status view once.
func (a *app) printStatus(s *filestore.Store, asJSON, fullIDs bool) error {
	p, err := s.Project()
	if err != nil {
		return err
	}
	agents, err := s.Agents()
	if err != nil {
		return err
	}
	// The counts come from the index and the details from the work in flight, so status
	// costs the open work, not the history.
	counts, err := s.TaskStatusCounts()
	if err != nil {
		return err
	}
	tasks, err := s.WorkingTasks()
	if err != nil {
		return err
	}
	live, err := s.LiveSessions("")
	if err != nil {
		return err
	}
	convs, err := s.Conversations(filestore.ConversationFilter{States: []string{filestore.ConvPending, filestore.ConvActive, filestore.ConvTerminating}})
	if err != nil {
		return err
	}
	dels, err := s.Delegations(filestore.DelegationFilter{})
	if err != nil {
		return err
	}
	spawns, err := s.Spawns()
	if err != nil {
		return err
	}
	v := statusView{Project: p, Store: s.Dir(), TaskCounts: map[string]int{}, LiveSessions: live,
		Conversations: []*filestore.Conversation{}, Delegations: []*filestore.Delegation{}, Failing: failingStarts(spawns, s.Now())}
	v.Conversations = append(v.Conversations, convs...)
	exe, err := coordinator.Executable()
	if err != nil {
		return err
	}
	if v.Unapproved, err = s.UnapprovedCommands(exe); err != nil {
		return err
	}
	if v.Unapproved == nil {
		v.Unapproved = []filestore.Unapproved{}
	}
	held, err := s.HeldAgents()
	if err != nil {
		return err
	}
	v.Held = []*filestore.HeldAgent{}
	for _, id := range slices.Sorted(maps.Keys(held)) {
		v.Held = append(v.Held, held[id])
	}
	for _, d := range dels {
		if !d.Finished() {
			v.Delegations = append(v.Delegations, d)
		}
	}
	for _, st := range filestore.Statuses {
		v.TaskCounts[st] = 0
	}
	for st, n := range counts {
		if slices.Contains(filestore.Statuses, st) {
			v.TaskCounts[st] = n
		} else {
			v.TaskCounts["invalid"] += n // a status no transition leads to: a hand edit
		}
	}
	v.Blocked, v.Invalid, v.Approvals, v.Conflicted = []taskNote{}, []taskNote{}, []taskNote{}, []taskNote{}
	if p.Conflict != nil {
		v.ConflictedFiles = append(v.ConflictedFiles, conflictNote("project", p.ID, s.Rel(filepath.Join(s.Dir(), "project.json")), p.Conflict.String(p)))
	}
	for _, ag := range agents {
		if ag.Conflict != nil {
			v.ConflictedFiles = append(v.ConflictedFiles, conflictNote("agent", ag.ID, s.Rel(filepath.Join(s.Dir(), "agents", ag.ID, "agent.json")), ag.Conflict.String(ag)))
		}
	}
	v.Landing, v.NotLanded = []taskNote{}, []taskNote{}
	if q, ok := land.New(s, nil); ok {
		es, _ := q.Entries()
		for _, t := range es {
			v.Landing = append(v.Landing, taskNote{ID: t.ID, Title: t.Title, AssigneeID: t.AssigneeID, Why: t.LandingSummary() + landDetail(t)})
		}
		needs, _ := q.NeedsYou()
		for _, t := range needs {
			v.NotLanded = append(v.NotLanded, taskNote{ID: t.ID, Title: t.Title, AssigneeID: t.AssigneeID, Why: t.Landing.State + ": " + land.Summary(t.Landing.Detail)})
		}
	}
	// A task blocked under a blocked ancestor counts once, at the topmost such ancestor.
	byID := map[string]*filestore.Task{}
	for _, t := range tasks {
		byID[t.ID] = t
	}
	roots := filestore.BlockRoots(byID)
	withIt := map[string]int{}
	for _, root := range roots {
		withIt[root]++
	}
	cascaded := func(t *filestore.Task) bool { return roots[t.ID] != "" }
	for _, t := range tasks {
		if t.Conflict != nil {
			v.Conflicted = append(v.Conflicted, taskNote{ID: t.ID, Title: t.Title, AssigneeID: t.AssigneeID,
				Why: "both sides changed " + t.Conflict.String(t) + "; keep one: aipm resolve " + s.Rel(s.TaskFile(t.ID)) + " --ours (or --theirs)"})
		}
		if p := t.Problem(); p != "" {
			if slices.Contains(filestore.Statuses, t.Status) {
				v.TaskCounts[t.Status]--
				v.TaskCounts["invalid"]++
			}
			v.Invalid = append(v.Invalid, taskNote{ID: t.ID, Title: t.Title, AssigneeID: t.AssigneeID,
				Why: s.Rel(s.TaskFile(t.ID)) + ": " + p})
			continue
		}
		if t.Approval == filestore.ApprovalPending && !filestore.Finished(t.Status) {
			why := "requested by " + orDash(t.RequesterID)
			if t.CreatedBy != t.RequesterID {
				why += " through " + orDash(t.CreatedBy)
			}
			v.Approvals = append(v.Approvals, taskNote{ID: t.ID, Title: t.Title, AssigneeID: t.AssigneeID, Why: why})
		}
		if t.Status == filestore.StatusBlocked && !cascaded(t) {
			why := t.BlockedReason
			if why == "" {
				why = "no reason recorded"
			}
			v.Blocked = append(v.Blocked, taskNote{ID: t.ID, Title: t.Title, AssigneeID: t.AssigneeID, Why: why, WithIt: withIt[t.ID]})
		}
	}
	children := func(id string) []*filestore.Task {
		kids, err := s.Tasks(filestore.TaskFilter{ParentID: id})
		if err != nil {
			return nil
		}
		return kids
	}
	for _, ag := range agents {
		as := agentStatus{ID: ag.ID, Type: ag.Type, Hierarchy: ag.Hierarchy, Status: ag.Status, Doing: doingOf(ag.ID, tasks, children)}
		for _, t := range tasks {
			if t.AssigneeID == ag.ID && t.Status == filestore.StatusInProgress {
				as.InProg++
			}
		}
		if as.Unread, err = s.UnreadCount(ag.ID); err != nil {
			return err
		}
		if as.Notices, err = s.PendingNotifications(ag.ID); err != nil {
			return err
		}
		for _, se := range live {
			if se.AgentID == ag.ID {
				if as.Sessions != "" {
					as.Sessions += ","
				}
				as.Sessions += se.Purpose
			}
		}
		v.Agents = append(v.Agents, as)
		// A history that cannot be read (a line over the bound, say) hides these warnings
		// only: `aipm doctor` names the line, and the rest of the status is shown.
		warned, _ := s.UnverifiedRequests(ag.ID, s.Now().Add(-filestore.UnverifiedShown))
		v.Unverified = append(v.Unverified, warned...)
	}
	slices.SortStableFunc(v.Unverified, func(a, b filestore.Event) int { return a.At.Compare(b.At) })
	if v.Unverified == nil {
		v.Unverified = []filestore.Event{}
	}
	if a.worktreeCopy != "" {
		v.WorktreeCopy = filepath.Join(a.worktreeCopy, filestore.DirName)
	}
	if v.Sync, err = syncOf(s); err != nil {
		return err
	}
	if v.Elsewhere, err = leasedElsewhere(s); err != nil {
		return err
	}
	if asJSON {
		return a.printJSON(v)
	}
	a.printf("Project %s (%s) — %s\n", p.Name, p.Status, s.Root())
	if a.worktreeCopy != "" {
		a.printf("Store: %s, shared by this clone's worktrees (this linked worktree's own copy, %s, is not used)\n", s.Dir(), v.WorktreeCopy)
	} else {
		a.printf("Store: %s\n", s.Dir())
	}
	if v.Sync != nil {
		a.printf("Sync: %s\n", v.Sync.line(s.Now()))
	}
	a.printf("Tasks:")
	for _, st := range filestore.Statuses {
		a.printf(" %s %d", st, v.TaskCounts[st])
	}
	if n := v.TaskCounts["invalid"]; n > 0 {
		a.printf(" invalid %d", n)
	}
	a.printf("\n")
	sh := shortener{}
	if !fullIDs {
		if sh, err = newShortener(s); err != nil {
			return err
		}
	}
	if len(v.Approvals) > 0 {
		a.printf("\nWaiting for approval (aipm task approve ID, or aipm task reject ID --reason R):\n")
		for _, n := range v.Approvals {
			a.printf("  %s  %s: %s\n", sh.id(n.ID), n.Title, n.Why)
		}
	}
	if len(v.NotLanded) > 0 {
		a.printf("\nNeeds you: code that did not land (aipm land retry ID, or aipm land abandon ID; aipm task show ID has the log):\n")
		for _, n := range v.NotLanded {
			a.printf("  %s  %s  %s: %s\n", sh.id(n.ID), orDash(n.AssigneeID), n.Title, n.Why)
		}
	}
	if len(v.Landing) > 0 {
		a.printf("\nLanding on the target (aipm land list):\n")
		for _, n := range v.Landing {
			a.printf("  %s  %s  %s: %s\n", sh.id(n.ID), orDash(n.AssigneeID), n.Title, n.Why)
		}
	}
	if len(v.Blocked) > 0 {
		a.printf("\nBlocked tasks:\n")
		for _, n := range v.Blocked {
			with := ""
			if n.WithIt > 0 {
				with = fmt.Sprintf(" (and %d sub-task(s) blocked with it)", n.WithIt)
			}
			a.printf("  %s  %s  %s: %s%s\n", sh.id(n.ID), orDash(n.AssigneeID), n.Title, oneLine(n.Why), with)
		}
	}
	if len(v.Unverified) > 0 {
		a.printf("\nUnverified chat requests (an agent acted on a superior's request that its messages do not show; ask the superior whether it asked):\n")
		for _, e := range v.Unverified {
			a.printf("  %s  %s %s: %s\n", localTime(e.At), e.Actor, strings.ReplaceAll(e.Reason, e.To, sh.id(e.To)), e.Warning)
		}
	}
	if len(v.Conflicted)+len(v.ConflictedFiles) > 0 {
		a.printf("\nConflicts two clones made (nothing changes these until a person keeps one side; the next sync carries it):\n")
		for _, n := range v.Conflicted {
			a.printf("  %s  %s  %s\n", sh.id(n.ID), n.Title, n.Why)
		}
		for _, n := range v.ConflictedFiles {
			a.printf("  %s  %s\n", n.Title, n.Why)
		}
	}
	if len(v.Invalid) > 0 {
		a.printf("\nInvalid tasks (repair the file by hand; `aipm doctor` checks every file):\n")
		for _, n := range v.Invalid {
			a.printf("  %s  %s  %s\n", sh.id(n.ID), n.Title, n.Why)
		}
	}
	a.printf("\n")
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tTYPE\tHIERARCHY\tSTATUS\tIN PROGRESS\tUNREAD\tNOTIFICATIONS\tLIVE SESSIONS")
	for _, as := range v.Agents {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", as.ID, as.Type, as.Hierarchy, as.Status, as.InProg, as.Unread, as.Notices, orDash(as.Sessions))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	doing := false
	for _, as := range v.Agents {
		d := as.Doing
		if d == nil {
			continue
		}
		if !doing {
			a.printf("\nDoing:\n")
			doing = true
		}
		line := fmt.Sprintf("  %s  %s  %s", as.ID, sh.id(d.TaskID), oneLine(d.Title))
		if d.StepsTotal > 0 {
			line += fmt.Sprintf("  (%d of %d steps done", d.StepsDone, d.StepsTotal)
			if d.StepID != "" {
				line += fmt.Sprintf("; now %s %s", sh.id(d.StepID), oneLine(d.StepTitle))
			}
			line += ")"
		}
		if d.More > 0 {
			line += fmt.Sprintf("  and %d more in progress", d.More)
		}
		a.printf("%s\n", line)
	}
	if len(v.Conversations) > 0 {
		a.printf("\nOpen conversations:\n")
		tw = tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "CONVERSATION\tFROM\tTO\tSTATE\tTURNS\tTASK\tPURPOSE")
		for _, c := range v.Conversations {
			state := c.State
			if c.EndReason != "" {
				state += " (" + c.EndReason + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%s\t%s\n", c.ID, c.InitiatorID, c.ParticipantID, state, c.Turns, c.MaxTurns, orDash(sh.id(c.TaskID)), orDash(oneLine(c.Purpose)))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(v.Delegations) > 0 {
		a.printf("\nOpen delegations:\n")
		tw = tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "DELEGATION\tAGENT\tTARGET\tSTATUS\tTASK\tCONVERSATION\tPURPOSE")
		for _, d := range v.Delegations {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", d.ID, d.AgentID, d.TargetAgentID, d.Status, orDash(sh.id(d.TaskID)), orDash(d.ConversationID), oneLine(d.Purpose))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(v.Elsewhere) > 0 {
		a.printf("\nOn other machines (their `aipm run` starts them; `aipm agent move ID --to MACHINE` moves one):\n")
		for _, l := range v.Elsewhere {
			a.printf("  %s  on %s, lease until %s\n", l.AgentID, l.MachineID, l.ExpiresAt.Local().Format("15:04:05"))
		}
	}
	if len(v.Unapproved) > 0 {
		a.printf("\nCommands not approved on this machine (aipm run starts nothing with them; review and approve with `aipm trust`):\n")
		for _, u := range v.Unapproved {
			a.printf("  settings.agent_commands.%s (used by %s)\n", u.Name, strings.Join(u.Agents, ", "))
		}
	}
	if len(v.Held) > 0 {
		a.printf("\nAgents from another clone not approved on this machine (aipm run starts none of them; review with `aipm trust --check`):\n")
		for _, h := range v.Held {
			a.printf("  %s\n", describeHeld(h))
		}
	}
	if len(v.Failing) > 0 {
		a.printf("\nFailing starts (aipm run backs off: the delay doubles per failure, up to 5 minutes):\n")
		for _, f := range v.Failing {
			held := ""
			if f.BackoffUntil != "" {
				held = "; next start not before " + f.BackoffUntil
			}
			a.printf("  %s/%s: %s (exit code %d) at %s, %d in a row%s; log %s\n", f.AgentID, f.Purpose, f.Outcome, f.ExitCode,
				f.EndedAt, f.InARow, held, f.Log)
		}
	}
	return nil
}

// leasedElsewhere are the agents whose lease another machine holds now.
func leasedElsewhere(s *filestore.Store) ([]*filestore.Lease, error) {
	leases, err := s.Leases()
	if err != nil || len(leases) == 0 {
		return []*filestore.Lease{}, err
	}
	me, err := s.MachineID()
	if err != nil {
		return nil, err
	}
	out := []*filestore.Lease{}
	now := s.Now()
	for _, l := range leases {
		if l.MachineID != me && l.Held(now) {
			out = append(out, l)
		}
	}
	return out, nil
}

// oneLine fits free text in a table cell: one line, at most 60 characters.
func oneLine(s string) string {
	r := []rune(strings.Join(strings.Fields(s), " "))
	if len(r) > 60 {
		return string(r[:59]) + "…"
	}
	return string(r)
}

// conflictNote is the status line of an entity file that holds a merge conflict.
func conflictNote(kind, id, rel, what string) taskNote {
	return taskNote{ID: id, Title: kind + " " + id,
		Why: "both sides changed " + what + "; keep one: aipm resolve " + rel + " --ours (or --theirs)"}
}
