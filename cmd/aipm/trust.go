package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aipm/aipm/cmd/aipm/internal/coordinator"
	"github.com/aipm/aipm/filestore"
)

// cmdTrust shows settings.agent_commands, each with what changed since this machine last
// approved it, and the agents another clone brought that wait for this machine's yes
// (filestore.HeldAgents), each with the commit and the people it came from; then it
// approves them all: `aipm run` starts only approved commands and agents (like `direnv
// allow`). --check only shows, and fails if anything is unapproved; --agent approves only
// the agents it names.
func (a *app) cmdTrust(args []string) error {
	fs := newFlags(a, "trust")
	check := fs.Bool("check", false, "only show the commands and held agents; exit 1 if any is not approved")
	only := fs.String("agent", "", "approve only these held agents (`IDS`, comma-separated), no command")
	if _, err := fs.parse(args, 0, 0, "[--check] [--agent IDS]"); err != nil {
		return err
	}
	if *check && *only != "" {
		return &usageError{msg: "--check only shows: give it without --agent", path: "trust"}
	}
	s, err := a.open()
	if err != nil {
		return err
	}
	p, err := s.Project()
	if err != nil {
		return err
	}
	held, err := s.HeldAgents()
	if err != nil {
		return err
	}
	if *only != "" {
		ids := strings.Split(*only, ",")
		for _, id := range ids {
			if h := held[id]; h != nil {
				a.showHeld(h)
			}
		}
		approved, err := s.ApproveAgents(ids)
		if err != nil {
			return err
		}
		a.printf("approved on this machine: %s\n", agentList(approved))
		return nil
	}
	cmds := p.Settings.TrustedCommands() // the agent commands and the check
	if len(cmds) == 0 && len(held) == 0 {
		a.printf("settings.agent_commands is empty and no settings.check_command is set: nothing to approve\n")
		return nil
	}
	exe, err := coordinator.Executable()
	if err != nil {
		return err
	}
	unapproved := 0
	for _, name := range slices.Sorted(maps.Keys(cmds)) {
		ac := cmds[name]
		prog, err := s.CommandProgram(ac, exe, s.Root())
		if err != nil {
			return fmt.Errorf("settings.agent_commands.%s: %w", name, err)
		}
		ok, err := s.CommandApproved(name, ac, prog)
		if err != nil {
			return err
		}
		state := "approved"
		if !ok {
			unapproved++
			state = "NOT APPROVED"
		}
		a.printf("%s: %s\n", name, state)
		a.printf("  command: %s\n", quoteArgs(ac.Command))
		a.printf("  program: %s\n", prog)
		for _, k := range slices.Sorted(maps.Keys(ac.Env)) {
			a.printf("  env: %s=%s\n", k, ac.Env[k])
		}
		if ok {
			continue
		}
		last, err := s.LastApproved(name)
		if err != nil {
			return err
		}
		if last == nil {
			a.printf("  new: never approved on this machine\n")
			continue
		}
		if now := s.NowInstalled(name, ac, prog); now != "" {
			// Nothing the user wrote changed: say what did.
			a.printf("  %s: review it and approve it\n", now)
			continue
		}
		a.printf("  changed since approved %s:\n", last.ApprovedAt.Format("2006-01-02 15:04:05"))
		if old, cur := quoteArgs(last.Command), quoteArgs(ac.Command); old != cur {
			a.printf("    - command: %s\n    + command: %s\n", old, cur)
		}
		if !last.Program.Same(prog) {
			a.printf("    - program: %s\n    + program: %s\n", last.Program, prog)
		}
		for _, k := range slices.Sorted(maps.Keys(unionKeys(last.Env, ac.Env))) {
			old, had := last.Env[k]
			cur, has := ac.Env[k]
			switch {
			case had && !has:
				a.printf("    - env: %s=%s\n", k, old)
			case !had && has:
				a.printf("    + env: %s=%s\n", k, cur)
			case old != cur:
				a.printf("    - env: %s=%s\n    + env: %s=%s\n", k, old, k, cur)
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(held)) {
		a.showHeld(held[id])
	}
	if *check {
		if unapproved > 0 {
			a.printf("%d command(s) not approved: review them above, then run `aipm trust` to approve\n", unapproved)
		}
		if len(held) > 0 {
			a.printf("%d agent(s) from another clone not approved: review them above, then run `aipm trust` to approve\n", len(held))
		}
		if unapproved > 0 || len(held) > 0 {
			return exitError(1)
		}
		return nil
	}
	added, err := s.ApproveCommands(cmds, exe)
	if err != nil {
		return err
	}
	var agents []string
	if len(held) > 0 {
		if agents, err = s.ApproveAgents(slices.Sorted(maps.Keys(held))); err != nil {
			return err
		}
	}
	switch {
	case len(added) == 0 && len(agents) == 0:
		a.printf("every command was already approved on this machine\n")
	case len(agents) == 0:
		a.printf("approved on this machine: %s\n", strings.Join(added, ", "))
	case len(added) == 0:
		a.printf("approved on this machine: %s\n", agentList(agents))
	default:
		a.printf("approved on this machine: %s; %s\n", strings.Join(added, ", "), agentList(agents))
	}
	return nil
}

// showHeld shows an agent another clone brought that waits for this machine's approval:
// what runs for it, what it was here, and where it came from.
func (a *app) showHeld(h *filestore.HeldAgent) {
	a.printf("agent %s: NOT APPROVED (from another clone)\n", h.AgentID)
	a.printf("  runs: %s\n", h.Runs())
	if h.New {
		a.printf("  new: this clone had no agent %s before\n", h.AgentID)
	} else {
		a.printf("  changed: it was %s here\n", h.Was)
	}
	if h.Commit != "" {
		a.printf("  commit: %s\n", h.Commit)
	}
	if h.Author != "" {
		a.printf("  author: %s\n", h.Author)
	}
	if h.Committer != "" {
		a.printf("  committer: %s\n", h.Committer)
	}
	a.printf("  approve it alone: aipm trust --agent %s\n", h.AgentID)
}

// agentList names approved agents: "agent w1" or "agents w1, w2".
func agentList(ids []string) string {
	if len(ids) == 1 {
		return "agent " + ids[0]
	}
	return "agents " + strings.Join(ids, ", ")
}

func unionKeys(a, b map[string]string) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// quoteArgs prints a command line with each argument quoted when it needs it.
func quoteArgs(args []string) string {
	out := make([]string, len(args))
	for i, s := range args {
		if s == "" || strings.ContainsAny(s, " \t\n'\"\\$`;&|<>(){}*?!#~") {
			s = fmt.Sprintf("%q", s)
		}
		out[i] = s
	}
	return strings.Join(out, " ")
}
