package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/aipm/aipm/filestore"
)

type statusView struct {
	Project      *filestore.Project   `json:"project"`
	Agents       []agentStatus        `json:"agents"`
	TaskCounts   map[string]int       `json:"task_counts"`
	LiveSessions []*filestore.Session `json:"live_sessions"`
	// Conversations are the open ones (pending, active, or ended but not yet told to both
	// sides); Delegations those not finished (pending or processing).
	Conversations []*filestore.Conversation `json:"conversations"`
	Delegations   []*filestore.Delegation   `json:"delegations"`
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
}

func (a *app) cmdStatus(args []string) error {
	fs := newFlags(a, "status")
	if _, err := fs.parse(args, 0, 0, ""); err != nil {
		return err
	}
	s, err := a.open()
	if err != nil {
		return err
	}
	p, err := s.Project()
	if err != nil {
		return err
	}
	agents, err := s.Agents()
	if err != nil {
		return err
	}
	tasks, err := s.Tasks(filestore.TaskFilter{})
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
	v := statusView{Project: p, TaskCounts: map[string]int{}, LiveSessions: live,
		Conversations: []*filestore.Conversation{}, Delegations: []*filestore.Delegation{}}
	v.Conversations = append(v.Conversations, convs...)
	for _, d := range dels {
		if !d.Finished() {
			v.Delegations = append(v.Delegations, d)
		}
	}
	for _, st := range filestore.Statuses {
		v.TaskCounts[st] = 0
	}
	for _, t := range tasks {
		v.TaskCounts[t.Status]++
	}
	for _, ag := range agents {
		as := agentStatus{ID: ag.ID, Type: ag.Type, Hierarchy: ag.Hierarchy, Status: ag.Status}
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
	}
	if fs.json {
		return a.printJSON(v)
	}
	a.printf("Project %s (%s) — %s\n", p.Name, p.Status, s.Root())
	a.printf("Tasks:")
	for _, st := range filestore.Statuses {
		a.printf(" %s %d", st, v.TaskCounts[st])
	}
	a.printf("\n\n")
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tTYPE\tHIERARCHY\tSTATUS\tIN PROGRESS\tUNREAD\tNOTIFICATIONS\tLIVE SESSIONS")
	for _, as := range v.Agents {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", as.ID, as.Type, as.Hierarchy, as.Status, as.InProg, as.Unread, as.Notices, orDash(as.Sessions))
	}
	if err := tw.Flush(); err != nil {
		return err
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
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%s\t%s\n", c.ID, c.InitiatorID, c.ParticipantID, state, c.Turns, c.MaxTurns, orDash(c.TaskID), orDash(oneLine(c.Purpose)))
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
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", d.ID, d.AgentID, d.TargetAgentID, d.Status, orDash(d.TaskID), orDash(d.ConversationID), oneLine(d.Purpose))
		}
		return tw.Flush()
	}
	return nil
}

// oneLine fits free text in a table cell: one line, at most 60 characters.
func oneLine(s string) string {
	r := []rune(strings.Join(strings.Fields(s), " "))
	if len(r) > 60 {
		return string(r[:59]) + "…"
	}
	return string(r)
}
