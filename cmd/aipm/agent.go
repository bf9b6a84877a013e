package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/aipm/aipm/filestore"
)

func (a *app) agentAdd(args []string) error {
	fs := newFlags(a, "agent add")
	var n filestore.NewAgent
	fs.StringVar(&n.Name, "name", "", "the display `NAME` (default: the id)")
	fs.StringVar(&n.Type, "type", "ai", "human or ai")
	fs.StringVar(&n.Hierarchy, "hierarchy", "worker", "owner, manager or worker")
	fs.StringVar(&n.Role, "role", "", "a free-text `ROLE`, used by managers to pick workers")
	fs.StringVar(&n.ParentID, "parent", "", "the parent agent `ID` (a manager or the owner)")
	fs.IntVar(&n.MaxParallelTasks, "max-parallel", 1, "at most `N` top-level tasks in progress at once")
	fs.StringVar(&n.AIType, "ai-type", "", "which agent CLI runs it: a `KIND` of settings.agent_commands (claude, codex, gemini, …)")
	fs.StringVar(&n.Model, "model", "", "model name")
	fs.StringVar(&n.SystemPrompt, "system-prompt", "", "extra instructions for the agent")
	fs.StringVar(&n.Passkey, "passkey", "", "use this `SECRET` (at least 8 characters) instead of a generated passkey")
	pos, err := fs.parse(args, 1, 1, "ID [--type ai|human] [--hierarchy manager|worker] [--parent ID] [--role R]")
	if err != nil {
		return err
	}
	n.ID = pos[0]
	s, actor, err := a.openAs(fs.as)
	if err != nil {
		return err
	}
	ag, passkey, err := s.AddAgent(actor, n)
	if err != nil {
		return err
	}
	if fs.json {
		return a.printJSON(struct {
			*filestore.Agent
			Passkey string `json:"passkey,omitempty"`
		}{ag, passkey})
	}
	a.printf("Added %s agent %s (%s)\n", ag.Type, ag.ID, ag.Hierarchy)
	if passkey != "" {
		a.printf("passkey: %s\n", passkey)
		a.printf("This is the only time the passkey is shown; aipm keeps only a salted hash. Rotate it with `aipm agent passkey %s`.\n", ag.ID)
	}
	return nil
}

func (a *app) agentList(args []string) error {
	fs := newFlags(a, "agent list")
	if _, err := fs.parse(args, 0, 0, ""); err != nil {
		return err
	}
	s, err := a.open()
	if err != nil {
		return err
	}
	agents, err := s.Agents()
	if err != nil {
		return err
	}
	if fs.json {
		return a.printJSON(agents)
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTYPE\tHIERARCHY\tPARENT\tSTATUS\tROLE")
	for _, ag := range agents {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", ag.ID, ag.Type, ag.Hierarchy, orDash(ag.ParentID), ag.Status, ag.Role)
	}
	return tw.Flush()
}

func (a *app) agentShow(args []string) error {
	fs := newFlags(a, "agent show")
	s, id, err := a.openOne(fs, args, "ID", agentID)
	if err != nil {
		return err
	}
	ag, err := s.Agent(id)
	if err != nil {
		return err
	}
	live, err := s.LiveSessions(ag.ID)
	if err != nil {
		return err
	}
	if fs.json {
		return a.printJSON(struct {
			*filestore.Agent
			LiveSessions []*filestore.Session `json:"live_sessions"`
		}{ag, live})
	}
	a.printf("%s  %s (%s %s)\n", ag.ID, ag.Name, ag.Type, ag.Hierarchy)
	a.printf("  parent: %s  status: %s  max_parallel_tasks: %d\n", orDash(ag.ParentID), ag.Status, ag.MaxParallel())
	if ag.Role != "" {
		a.printf("  role: %s\n", ag.Role)
	}
	if ag.AIType != "" {
		a.printf("  ai_type: %s  model: %s\n", ag.AIType, orDash(ag.Model))
	}
	now := s.Now()
	for _, se := range live {
		a.printf("  live %s session %s (pid %d, since %s)\n", se.Purpose, se.ID, se.PID, ago(now, se.CreatedAt))
	}
	return nil
}

func (a *app) agentPasskey(args []string) error {
	fs := newFlags(a, "agent passkey")
	s, actor, id, err := a.openOneAs(fs, args, "ID", agentID)
	if err != nil {
		return err
	}
	passkey, err := s.RotatePasskey(actor, id)
	if err != nil {
		return err
	}
	if fs.json {
		return a.printJSON(map[string]string{"agent_id": id, "passkey": passkey})
	}
	a.printf("passkey: %s\n", passkey)
	return nil
}
