package main

import (
	"fmt"

	"github.com/aipm/aipm/cmd/aipm/internal/coordinator"
	"github.com/aipm/aipm/cmd/aipm/internal/sim"
)

// cmdSimAgent runs the simulated agent (package sim) as the coordinator starts an agent
// CLI: its identity and purpose come from the environment.
func (a *app) cmdSimAgent(args []string) error {
	fs := newFlags(a, "sim-agent")
	if _, err := fs.parse(args, 0, 0, ""); err != nil {
		return err
	}
	exe, err := coordinator.Executable()
	if err != nil {
		return fmt.Errorf("sim-agent: finding the aipm executable: %w", err)
	}
	return sim.Run(sim.Config{AgentID: a.getenv("AIPM_AGENT_ID"), Purpose: a.getenv("AIPM_PURPOSE"),
		Passkey: a.getenv("AIPM_PASSKEY"), Root: a.getenv("AIPM_ROOT"), Exe: exe, Out: a.stdout, Err: a.stderr})
}
