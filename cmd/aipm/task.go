package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/aipm/aipm/filestore"
)

func (a *app) cmdTask(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: aipm task add|list|show|status|assign|approve|reject ...")
	}
	switch args[0] {
	case "add":
		return a.taskAdd(args[1:])
	case "list":
		return a.taskList(args[1:])
	case "show":
		return a.taskShow(args[1:])
	case "status":
		return a.taskStatus(args[1:])
	case "assign":
		return a.taskAssign(args[1:])
	case "approve":
		return a.taskApprove(args[1:])
	case "reject":
		return a.taskReject(args[1:])
	}
	return fmt.Errorf("unknown task command %q (want add, list, show, status, assign, approve or reject)", args[0])
}

func (a *app) taskAdd(args []string) error {
	fs := newFlags(a, "task add")
	var n filestore.NewTask
	var deps stringList
	fs.StringVar(&n.Description, "description", "", "what to do, in detail")
	fs.StringVar(&n.Priority, "priority", "medium", "low, medium, high or urgent")
	fs.StringVar(&n.Status, "status", "backlog", "backlog or todo")
	fs.StringVar(&n.AssigneeID, "assign", "", "assignee agent id")
	fs.StringVar(&n.ParentID, "parent", "", "parent task id (makes this a sub-task)")
	fs.Var(&deps, "dep", "a task this one depends on (repeatable)")
	pos, err := fs.parse(args, 1, 1, `"TITLE" [--description D] [--assign AGENT] [--parent TASK] [--dep TASK]...`)
	if err != nil {
		return err
	}
	n.Title, n.Dependencies = pos[0], deps
	s, actor, err := a.openAs(fs.as)
	if err != nil {
		return err
	}
	t, err := s.CreateTask(actor, n)
	if err != nil {
		return err
	}
	if fs.json {
		return a.printJSON(t)
	}
	a.printf("%s\n", t.ID)
	return nil
}

func (a *app) taskList(args []string) error {
	fs := newFlags(a, "task list")
	var f filestore.TaskFilter
	fs.StringVar(&f.Status, "status", "", "only this status")
	fs.StringVar(&f.AssigneeID, "assignee", "", "only this assignee")
	fs.StringVar(&f.ParentID, "parent", "", "only sub-tasks of this task")
	if _, err := fs.parse(args, 0, 0, "[--status S] [--assignee A] [--parent T]"); err != nil {
		return err
	}
	s, err := a.open()
	if err != nil {
		return err
	}
	tasks, err := s.Tasks(f)
	if err != nil {
		return err
	}
	if fs.json {
		if tasks == nil {
			tasks = []*filestore.Task{}
		}
		return a.printJSON(tasks)
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tPRIORITY\tASSIGNEE\tPARENT\tTITLE")
	for _, t := range tasks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Status, t.Priority, orDash(t.AssigneeID), orDash(t.ParentID), t.Title)
	}
	return tw.Flush()
}

func (a *app) taskShow(args []string) error {
	fs := newFlags(a, "task show")
	pos, err := fs.parse(args, 1, 1, "ID")
	if err != nil {
		return err
	}
	s, err := a.open()
	if err != nil {
		return err
	}
	t, err := s.Task(pos[0])
	if err != nil {
		return err
	}
	sub, err := s.Subtree(t.ID)
	if err != nil {
		return err
	}
	hist, err := s.Events(t.ID)
	if err != nil {
		return err
	}
	runs, err := taskRuns(s, t, sub)
	if err != nil {
		return err
	}
	if fs.json {
		if sub == nil {
			sub = []*filestore.Task{}
		}
		if hist == nil {
			hist = []filestore.Event{}
		}
		if runs == nil {
			runs = []*filestore.Execution{}
		}
		return a.printJSON(struct {
			*filestore.Task
			Subtasks []*filestore.Task      `json:"subtasks"`
			History  []filestore.Event      `json:"history"`
			Runs     []*filestore.Execution `json:"runs"`
		}{t, sub, hist, runs})
	}
	a.printf("%s  %s\n", t.ID, t.Title)
	a.printf("  status: %s  priority: %s  assignee: %s  parent: %s\n", t.Status, t.Priority, orDash(t.AssigneeID), orDash(t.ParentID))
	if t.Approval != filestore.ApprovalApproved {
		a.printf("  approval: %s\n", t.Approval)
	}
	if t.BlockedReason != "" {
		a.printf("  blocked: %s\n", t.BlockedReason)
	}
	if len(t.Dependencies) > 0 {
		a.printf("  depends on: %s\n", strings.Join(t.Dependencies, ", "))
	}
	if t.Description != "" {
		a.printf("  %s\n", strings.ReplaceAll(t.Description, "\n", "\n  "))
	}
	if len(sub) > 0 {
		a.printf("sub-tasks:\n")
		depth := map[string]int{t.ID: 0}
		for _, c := range sub {
			depth[c.ID] = depth[c.ParentID] + 1
			a.printf("%s%s  %-11s %-10s %s\n", strings.Repeat("  ", depth[c.ID]), c.ID, c.Status, orDash(c.AssigneeID), c.Title)
		}
	}
	if len(hist) > 0 {
		a.printf("history:\n")
		for _, e := range hist {
			line := fmt.Sprintf("  %s  %s via %s: %s", e.At.Format("2006-01-02 15:04:05"), e.Actor, e.Via, e.Change)
			if e.From != "" || e.To != "" {
				line += fmt.Sprintf(" %s → %s", orDash(e.From), orDash(e.To))
			}
			if e.Reason != "" {
				line += " (" + e.Reason + ")"
			}
			a.printf("%s\n", line)
		}
	}
	if len(runs) > 0 {
		a.printf("runs:\n")
		for _, r := range runs {
			took := "running"
			if r.CompletedAt != nil {
				took = fmt.Sprintf("%.1fs", r.DurationSeconds)
			}
			line := fmt.Sprintf("  %s  %s  %-9s %s  %s  %s", r.ID, r.TaskID, r.Status, r.AgentID, r.StartedAt.Format("2006-01-02 15:04:05"), took)
			if r.LogPath != "" {
				line += "  log: " + r.LogPath
			}
			a.printf("%s\n", line)
		}
	}
	return nil
}

// taskRuns lists the execution records of a task and its sub-tasks, oldest first.
func taskRuns(s *filestore.Store, t *filestore.Task, sub []*filestore.Task) ([]*filestore.Execution, error) {
	all, err := s.Executions("")
	if err != nil {
		return nil, err
	}
	in := map[string]bool{t.ID: true}
	for _, c := range sub {
		in[c.ID] = true
	}
	var out []*filestore.Execution
	for i := len(all) - 1; i >= 0; i-- { // Executions is newest first
		if in[all[i].TaskID] {
			out = append(out, all[i])
		}
	}
	return out, nil
}

func (a *app) taskStatus(args []string) error {
	fs := newFlags(a, "task status")
	reason := fs.String("reason", "", "why (recorded; required context for blocked)")
	pos, err := fs.parse(args, 2, 2, "ID STATUS [--reason R]")
	if err != nil {
		return err
	}
	s, actor, err := a.openAs(fs.as)
	if err != nil {
		return err
	}
	ch, err := s.SetTaskStatus(actor, pos[0], pos[1], *reason)
	if err != nil {
		return err
	}
	if fs.json {
		return a.printJSON(map[string]any{"task": ch.Task, "previous_status": ch.Previous, "cascaded": ch.Cascaded})
	}
	a.printf("%s: %s → %s\n", ch.Task.ID, ch.Previous, ch.Task.Status)
	for _, c := range ch.Cascaded {
		a.printf("  %s: → %s (cascade)\n", c.ID, c.Status)
	}
	return nil
}

func (a *app) taskAssign(args []string) error {
	fs := newFlags(a, "task assign")
	pos, err := fs.parse(args, 2, 2, "ID AGENT (use - to unassign)")
	if err != nil {
		return err
	}
	assignee := pos[1]
	if assignee == "-" {
		assignee = ""
	}
	s, actor, err := a.openAs(fs.as)
	if err != nil {
		return err
	}
	t, err := s.AssignTask(actor, pos[0], assignee)
	if err != nil {
		return err
	}
	if fs.json {
		return a.printJSON(t)
	}
	a.printf("%s: assigned to %s\n", t.ID, orDash(t.AssigneeID))
	return nil
}
