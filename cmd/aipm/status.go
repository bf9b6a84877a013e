package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/aipm/aipm/filestore"
)

type statusView struct {
	Project      *filestore.Project   `json:"project"`
	Agents       []agentStatus        `json:"agents"`
	TaskCounts   map[string]int       `json:"task_counts"`
	LiveSessions []*filestore.Session `json:"live_sessions"`
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
	v := statusView{Project: p, TaskCounts: map[string]int{}, LiveSessions: live}
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
	return tw.Flush()
}
