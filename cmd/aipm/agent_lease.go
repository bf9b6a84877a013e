package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/aipm/aipm/filestore"
)

// agentLeases lists which machine runs each agent (the leases under .ai-pm/leases/), and
// this machine's id, the name `aipm agent move` takes.
func (a *app) agentLeases(args []string) error {
	fs := newFlags(a, "agent leases")
	if _, err := fs.parse(args, 0, 0, ""); err != nil {
		return err
	}
	s, err := a.open()
	if err != nil {
		return err
	}
	machine, err := s.MachineID()
	if err != nil {
		return err
	}
	leases, err := s.Leases()
	if err != nil {
		return err
	}
	if fs.json {
		return a.printJSON(struct {
			Machine string             `json:"machine"`
			Leases  []*filestore.Lease `json:"leases"`
		}{machine, leases})
	}
	a.printf("this machine: %s\n", machine)
	if len(leases) == 0 {
		a.printf("no agent is leased yet: the first `aipm run` that has work for an agent takes it\n")
		return nil
	}
	now := s.Now()
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tMACHINE\tLEASE\tCHAT")
	for _, l := range leases {
		state := "expires in " + l.ExpiresAt.Sub(now).Round(time.Second).String()
		if !l.Held(now) {
			state = "free (expired " + ago(now, l.ExpiresAt) + ")"
		}
		chat := "-"
		if l.ChatLive && l.Held(now) {
			chat = "live"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", l.AgentID, l.MachineID, state, chat)
	}
	return tw.Flush()
}

// agentMove binds an agent to another machine: the machine running it stops it at its next
// look, the target's `aipm run` starts it when it has work.
func (a *app) agentMove(args []string) error {
	fs := newFlags(a, "agent move")
	to := fs.String("to", "", "the `MACHINE` to run the agent on (`aipm agent leases` shows this machine's id)")
	pos, err := fs.parse(args, 1, 1, "ID --to MACHINE")
	if err != nil {
		return err
	}
	if *to == "" {
		return &usageError{msg: "--to is required: name the machine (`aipm agent leases` on it shows its id)", path: "agent move"}
	}
	s, actor, err := a.openAs(fs.as)
	if err != nil {
		return err
	}
	id, err := agentID(s, pos[0])
	if err != nil {
		return err
	}
	l, err := s.MoveAgent(actor, id, *to)
	if err != nil {
		return err
	}
	if fs.json {
		return a.printJSON(l)
	}
	a.printf("%s now runs on machine %s (lease until %s; that machine's `aipm run` renews it)\n", id, l.MachineID, l.ExpiresAt.Format(time.RFC3339))
	return nil
}

// agentRelease ends an agent's lease at once, for an agent whose machine stopped.
func (a *app) agentRelease(args []string) error {
	fs := newFlags(a, "agent release")
	s, actor, id, err := a.openOneAs(fs, args, "ID", agentID)
	if err != nil {
		return err
	}
	l, err := s.ReleaseAgent(actor, id)
	if err != nil {
		return err
	}
	if fs.json {
		return a.printJSON(l)
	}
	a.printf("%s is free: the next `aipm run` with work for it, on any machine, takes it (it was %s's)\n", id, l.MachineID)
	return nil
}
