package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/aipm/aipm/cmd/aipm/internal/clone"
	"github.com/aipm/aipm/cmd/aipm/internal/coordinator"
	"github.com/aipm/aipm/cmd/aipm/internal/gitstate"
	"github.com/aipm/aipm/cmd/aipm/internal/land"
)

// cmdRun is the coordinator: it watches the store and starts each AI agent's configured
// command when the agent has task or chat work and no live session for it.
func (a *app) cmdRun(args []string) error {
	fs := newFlags(a, "run")
	maxProcs := fs.Int("max", 0, "at most this many agent processes at once (default: settings.max_agent_processes, 4)")
	idle := fs.Bool("exit-when-idle", false, "exit once no agent process runs and no agent has work")
	timeout := fs.Duration("timeout", 0, "stop (and stop the agents) after this long; 0 = run until interrupted")
	backoff := fs.Duration("backoff", time.Second, "delay after a failed or fruitless start; doubles per failure, up to 5m")
	timeline := fs.Bool("timeline", false, "also print the project's history and messages as they happen")
	noSync := fs.Bool("no-sync", false, "do not sync the state branch with its remote (aipm sync)")
	syncEvery := fs.Duration("sync-interval", defaultSyncInterval, "time between syncs of the state branch")
	if _, err := fs.parse(args, 0, 0, ""); err != nil {
		return err
	}
	if *syncEvery <= 0 {
		return &usageError{msg: "--sync-interval must be positive, e.g. --sync-interval 2s", path: "run"}
	}
	s, err := a.open()
	if err != nil {
		return err
	}
	// One coordinator per project: two would each start the same agent.
	unlock, err := coordinator.Lock(s)
	if err != nil {
		return err
	}
	defer unlock()
	// Say before starting anything what cannot start: an agent CLI that is not installed,
	// an ai_type with no command (the checks of aipm doctor).
	if probs, err := agentCommandProblems(s); err == nil {
		for _, p := range probs {
			fmt.Fprintf(a.stderr, "aipm run: warning: %s\n", p)
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}
	var c *coordinator.Coordinator
	opt := coordinator.Options{Max: *maxProcs, ExitWhenIdle: *idle, Backoff: *backoff,
		Timeline: *timeline, Out: a.stdout, Err: a.stderr,
		AgentWorktree: func(agentID string) (string, bool, error) { return clone.AgentWorktree(s.Root(), agentID) }}
	if q, ok := land.New(s, func(format string, args ...any) { c.Say(format, args...) }); ok {
		opt.Lander = q
	}
	// Whenever the state branch has a remote, the coordinator keeps it in sync: another
	// clone's message or task reaches this one's agents within a round or two. The remote
	// then decides the agent leases: what its rounds leave there is what counts.
	remote := gitstate.Remote(s.Root())
	syncing := !*noSync && remote != "" && gitstate.Attached(s.Root())
	var pub *gitstate.Published
	if syncing {
		pub = gitstate.NewPublished(s.Root(), remote)
		opt.Remote = pub
	}
	c, err = coordinator.New(s, opt)
	if err != nil {
		return err
	}
	if syncing {
		sy := newStateSyncer(s, remote, a.stdout)
		wake, stopWatch, err := a.wakeOn(s.Dir(), syncRelevant)
		if err != nil {
			return err
		}
		defer stopWatch()
		syncCtx, stopSync := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			report := roundReporter(a.stdout, a.stderr, remote, !*timeline)
			sy.Loop(syncCtx, *syncEvery, wake, func(r *gitstate.Round, err error) {
				pub.Observe(r, err, time.Now())
				report(r, err)
			})
		}()
		runErr := c.Run(ctx)
		stopSync()
		<-done // the last round pushes what the agents did last
		return runErr
	}
	return c.Run(ctx)
}
