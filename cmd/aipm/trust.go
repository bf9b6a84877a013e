package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aipm/aipm/cmd/aipm/internal/coordinator"
)

// cmdTrust shows settings.agent_commands, each with what changed since this machine last
// approved it, and approves them: `aipm run` starts only approved commands (like `direnv
// allow`). --check only shows, and fails if any command is unapproved.
func (a *app) cmdTrust(args []string) error {
	fs := newFlags(a, "trust")
	check := fs.Bool("check", false, "only show the commands; exit 1 if any is not approved")
	if _, err := fs.parse(args, 0, 0, "[--check]"); err != nil {
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
	cmds := p.Settings.TrustedCommands() // the agent commands and the check
	if len(cmds) == 0 {
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
	if *check {
		if unapproved > 0 {
			a.printf("%d command(s) not approved: review them above, then run `aipm trust` to approve\n", unapproved)
			return exitError(1)
		}
		return nil
	}
	added, err := s.ApproveCommands(cmds, exe)
	if err != nil {
		return err
	}
	if len(added) == 0 {
		a.printf("every command was already approved on this machine\n")
	} else {
		a.printf("approved on this machine: %s\n", strings.Join(added, ", "))
	}
	return nil
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
