package coordinator

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/aipm/aipm/filestore"
)

const maxBackoff = 5 * time.Minute

// healthyFirst orders the agents for the starts of one purpose: those whose last start of
// it failed go last, so a free slot goes to work that can use it before a command that
// keeps failing gets it again.
func (c *Coordinator) healthyFirst(ais []*filestore.Agent, purpose string) []*filestore.Agent {
	failing := func(a *filestore.Agent) int {
		if c.broken[workKey{a.ID, purpose}] > 0 {
			return 1
		}
		return 0
	}
	out := slices.Clone(ais)
	slices.SortStableFunc(out, func(a, b *filestore.Agent) int { return failing(a) - failing(b) })
	return out
}

// exited reconciles a finished process: its spawn record, its sessions (only its own),
// its runs' logs, and whether the next start for the same work must wait.
func (c *Coordinator) exited(ev exitEvent) {
	pr := ev.p
	// A process asked whether it was stuck that worked since (its task changed, or its
	// sessions called a tool) and then ended before a look saw it, answered too.
	if !pr.askedAt.IsZero() && pr.stopReason == "" {
		worked := c.lastSigns()[pr.spawn.ID].call.After(pr.askedAt)
		if !worked && pr.taskID != "" {
			t, err := c.s.Task(pr.taskID)
			worked = err == nil && t.UpdatedAt.After(pr.askedAt)
		}
		if worked {
			c.answered(pr)
		}
	}
	delete(c.running, pr.key)
	if pr.taskID != "" {
		c.busyMu.Lock()
		delete(c.busyTasks, pr.taskID)
		c.busyMu.Unlock()
		select {
		case c.landKick <- struct{}{}:
		default:
		}
	}
	pr.log.Close()
	if pr.mcpConfig != "" {
		os.Remove(pr.mcpConfig)
	}
	code, outcome := 0, "exited"
	if ev.err != nil {
		var ee *exec.ExitError
		if errors.As(ev.err, &ee) {
			code = ee.ExitCode()
			outcome = "failed"
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				outcome = "signal " + ws.Signal().String()
			}
		} else {
			code, outcome = -1, "failed"
		}
	}
	if pr.stopReason != "" {
		outcome = "stopped: " + pr.stopReason
	} else if c.stopping && outcome != "exited" {
		outcome = filestore.OutcomeShutdown // Ctrl-C or the end of the run: no failure
	} else if pr.retired && outcome != "exited" {
		outcome = filestore.OutcomeInactive // its agent was made inactive: no failure
	} else if pr.fenced && outcome != "exited" {
		outcome = filestore.OutcomeFenced // its lease could not be renewed: no failure either
	} else if pr.moved && outcome != "exited" {
		outcome = filestore.OutcomeMoved // its lease went elsewhere: no failure either
	}
	if (code != 0 || outcome != "exited") && pr.stopReason == "" && !c.stopping && !pr.moved {
		if fix := needsPerson(pr.spawn.AIType, lastLines(c.s.SpawnLogPath(pr.spawn.ID), failTailLines)); fix != "" {
			c.gaveUp[pr.key] = fix
			outcome = "needs a person: " + fix
		}
	}
	ended, err := c.s.EndSpawn(pr.spawn.ID, code, outcome)
	if err != nil {
		c.Say("%s: recording the exit: %v", pr.key, err)
	}
	msg := fmt.Sprintf("exit %s: %s", pr.key, outcome)
	if outcome != "exited" || code != 0 {
		msg += fmt.Sprintf(" (code %d)", code)
	}
	msg += fmt.Sprintf(" after %.2fs", time.Since(pr.started).Seconds())
	if len(ended) > 0 {
		msg += "; ended its session(s) " + strings.Join(ended, ", ")
	}
	c.Say("%s", msg)
	if (code != 0 || outcome != "exited") && !c.stopping && !pr.moved {
		c.sayLogTail(c.s.SpawnLogPath(pr.spawn.ID))
	}

	if c.stopping || pr.moved {
		return
	}
	if p, err := c.s.Project(); err == nil && p.Status != filestore.ProjectActive && outcome == "exited" && code == 0 {
		// The pause sent it away (or refused it): no failure, and nothing starts until the
		// project is resumed anyway.
		return
	}
	sp, _ := c.s.Spawn(pr.spawn.ID)
	authenticated := sp != nil && sp.TicketUsedAt != nil
	w, err := c.s.DetectWork(pr.key.agent)
	if err != nil {
		return
	}
	tasks, _ := c.s.WorkingTasks()
	left := pr.key.purpose == filestore.PurposeTask && w.TaskID != "" || pr.key.purpose == filestore.PurposeChat && w.Chat
	// A start the coordinator had to stop held its slot all that time: its next one waits
	// at least as long. One that ended by itself frees the slot as it goes.
	var held time.Duration
	if pr.stopReason != "" {
		held = time.Since(pr.started)
	}
	switch {
	case c.gaveUp[pr.key] != "":
		c.wasted++
		c.Say("stop retrying %s: %s; then run aipm run again", pr.key, c.gaveUp[pr.key])
		c.endWaits(pr.key, w, c.gaveUp[pr.key])
	case code != 0 || outcome != "exited":
		c.wasted++
		c.failedStart(pr.key, pr.spawn, outcome, held, w, left)
	case !authenticated && left:
		c.wasted++
		c.failedStart(pr.key, pr.spawn, "it never authenticated", held, w, left)
	case left && fingerprint(pr.key.purpose, w, tasks) == pr.before:
		c.wasted++
		delete(c.broken, pr.key) // it started: its command works
		c.backoff(pr.key, pr.spawn, "it left its work unchanged", 0)
	default:
		delete(c.fails, pr.key)
		delete(c.until, pr.key)
		delete(c.broken, pr.key)
	}
}

// backoff delays the next start for k: the base delay, doubled per consecutive failure,
// and at least as long as the failed start held its slot (held), so a command that hangs
// until it is stopped leaves its slot to others at least half the time. The spawn that
// failed (if any) records it, for `aipm status`.
func (c *Coordinator) backoff(k workKey, sp *filestore.Spawn, why string, held time.Duration) {
	c.fails[k]++
	d := backoffDelay(c.opt.Backoff, c.fails[k], held)
	c.until[k] = time.Now().Add(d)
	if sp != nil {
		if err := c.s.SetSpawnBackoff(sp.ID, c.until[k]); err != nil {
			c.Say("%s: recording the backoff: %v", k, err)
		}
	}
	c.Say("backoff %s: %s; next start in %s at the earliest", k, why, d)
}

// backoffDelay is the wait after the fails-th failure in a row of a start that held its
// slot for held: base doubled per failure before it, at least held (to the next tenth of a
// second), at most maxBackoff.
func backoffDelay(base time.Duration, fails int, held time.Duration) time.Duration {
	d := base << min(max(fails-1, 0), 20)
	if held > d {
		d = held.Truncate(100*time.Millisecond) + 100*time.Millisecond
	}
	return min(d, maxBackoff)
}

// shutdown stops every agent process: SIGTERM to its process group, SIGKILL after 5 s.
func (c *Coordinator) shutdown() {
	if len(c.running) == 0 {
		return
	}
	c.stopping = true
	c.Say("stopping %d agent process(es)", len(c.running))
	for _, pr := range c.running {
		signalGroup(pr.cmd.Process.Pid, false)
	}
	deadline := time.After(5 * time.Second)
	for len(c.running) > 0 {
		select {
		case ev := <-c.exits:
			c.exited(ev)
		case <-deadline:
			for _, pr := range c.running {
				signalGroup(pr.cmd.Process.Pid, true)
			}
			deadline = nil
		}
	}
}
