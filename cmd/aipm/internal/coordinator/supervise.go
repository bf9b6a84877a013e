package coordinator

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aipm/aipm/filestore"
)

// reclaim deals with what a coordinator that died (kill -9, a crash) left: the processes
// it started run on unsupervised, and their spawn records have no end. Each one still
// alive is stopped (SIGTERM to its process group, SIGKILL after 5 s) and every such record
// is closed, ending its sessions and closing its runs, before anything is evaluated: their
// work is then detected as any other and started again under this coordinator, which so
// never reports "idle" while one of them still works.
func (c *Coordinator) reclaim(ctx context.Context) {
	open, err := c.s.OpenSpawns()
	if err != nil {
		c.Say("cannot list the spawn records: %v", err)
		return
	}
	if len(open) == 0 {
		return
	}
	// Only this machine's: another machine's coordinator runs its own (its lock is not
	// this one), and this machine's lock says no other coordinator of it runs.
	open = slices.DeleteFunc(open, func(sp *filestore.Spawn) bool { return sp.Machine != "" && sp.Machine != c.machine })
	if len(open) == 0 {
		return
	}
	var live []*filestore.Spawn
	for _, sp := range open {
		if orphanAlive(sp) {
			live = append(live, sp)
			signalGroup(sp.PID, false)
		}
	}
	c.Say("a previous aipm run left %d spawn record(s) open, %d process(es) still running: stopping them; their work starts again here",
		len(open), len(live))
	deadline := time.Now().Add(5 * time.Second)
	killed := false
	for {
		live = slices.DeleteFunc(live, func(sp *filestore.Spawn) bool { return !orphanAlive(sp) })
		if len(live) == 0 {
			break
		}
		if time.Now().After(deadline) {
			if killed {
				c.Say("%d orphaned process(es) did not stop even after SIGKILL", len(live))
				break
			}
			for _, sp := range live {
				signalGroup(sp.PID, true)
			}
			killed, deadline = true, time.Now().Add(2*time.Second)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
	for _, sp := range open {
		ended, err := c.s.EndSpawn(sp.ID, -1, filestore.OutcomeOrphaned)
		if err != nil {
			c.Say("%s: closing the record of %s/%s: %v", sp.ID, sp.AgentID, sp.Purpose, err)
			continue
		}
		msg := fmt.Sprintf("closed %s/%s %s (pid %d): %s", sp.AgentID, sp.Purpose, sp.ID, sp.PID, filestore.OutcomeOrphaned)
		if len(ended) > 0 {
			msg += "; ended its session(s) " + strings.Join(ended, ", ")
		}
		c.Say("%s", msg)
	}
}

// orphanAlive reports whether anything of a spawn's process group still runs: the process
// itself (the same one, by its start time), or, once it is gone, the rest of its group
// (its aipm mcp) — no other process can take the group's id while that group exists.
func orphanAlive(sp *filestore.Spawn) bool {
	if sp.PID <= 0 {
		return false
	}
	if sp.Alive() {
		return true
	}
	if pidLive(sp.PID) {
		return false // the pid is another process's now
	}
	return groupLive(sp.PID)
}

// supervise stops the running processes that hang. One that has not authenticated within
// settings.start_timeout_seconds is stopped. One that works (it is not in a wait the
// server knows about, see waiting and lastSigns) but has made no tool call, written no
// output and used no CPU to speak of (cpuSign: work it does without aipm, such as a
// build) for settings.silence_timeout_seconds is asked, by a notification, to report
// progress or call get_next_action; still silent settings.silence_grace_seconds later, it
// is stopped. A stopped process is recorded (its spawn's outcome says why), backed off like
// a failure (its task goes to the next start), and its slot is free at once. next is when
// the earliest of those deadlines passes.
func (c *Coordinator) supervise(set filestore.Settings, now time.Time, works map[string]filestore.Work, tasks []*filestore.Task,
	open map[workKey]int, told map[string]string) (next time.Time) {
	soonest := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	var signs map[string]sign
	for k, pr := range c.running {
		if pr.stopReason != "" {
			continue
		}
		if !pr.authenticated {
			if sp, err := c.s.Spawn(pr.spawn.ID); err == nil && sp.TicketUsedAt != nil {
				pr.authenticated = true
			}
		}
		if !pr.authenticated {
			if d := set.StartTimeout(); now.Sub(pr.started) >= d {
				c.stop(pr, fmt.Sprintf("it did not authenticate within %s (settings.start_timeout_seconds)", d))
			} else {
				soonest(pr.started.Add(d))
			}
			continue
		}
		if c.waiting(pr, works[k.agent], tasks, open, told) != "" {
			c.answered(pr) // a long poll or a wait for someone else is not silence
			continue
		}
		if signs == nil {
			signs = c.lastSigns()
		}
		sg := signs[pr.spawn.ID]
		if sg.inCall {
			c.answered(pr) // inside a call the server is serving
			continue
		}
		last := latest(pr.started, sg.call, c.outputAt(pr), pr.cpuAt)
		d := silenceStep(set, now, last, pr.askedAt)
		if d.act == silenceAsk || d.act == silenceStop {
			// Before a question or a stop: is it busy without aipm (a build it runs, a
			// long response it streams)? Its processes' CPU time says so.
			if cpu, ok := groupCPU(pr.cmd.Process.Pid); ok && cpu-pr.cpuSeen >= cpuSign {
				pr.cpuSeen, pr.cpuAt = cpu, now
				last = now
				d = silenceStep(set, now, last, pr.askedAt)
			} else if ok {
				pr.cpuSeen = max(pr.cpuSeen, cpu)
			}
		}
		switch d.act {
		case silenceAnswered:
			c.answered(pr)
			soonest(d.at)
		case silenceAsk:
			pr.asks++
			pr.askedAt = now
			if _, err := c.s.AskSilent(pr.spawn.ID, now.Sub(last).Round(time.Second), set.SilenceGrace(), pr.asks); err != nil {
				c.Say("%s: asking it whether it is stuck: %v", k, err)
			}
			c.Say("ask %s: no tool call and no output for %s (settings.silence_timeout_seconds): asked it to report progress or call get_next_action; stopped if still silent in %s (settings.silence_grace_seconds)",
				k, now.Sub(last).Round(time.Second), set.SilenceGrace())
			soonest(d.at)
		case silenceStop:
			c.stop(pr, fmt.Sprintf("it made no tool call and wrote no output for %s, and none in the %s after it was asked (settings.silence_timeout_seconds, settings.silence_grace_seconds)",
				now.Sub(last).Round(time.Second), set.SilenceGrace()))
		default:
			soonest(d.at)
		}
	}
	return next
}

// cpuSign is how much CPU time a process group must have used since the last look for
// it to count as a sign of life: far more than an idle agent CLI waiting for a model uses
// in minutes, far less than a build or a stream of tool calls uses.
const cpuSign = time.Second

// What silenceStep decides for a working process.
const (
	silenceWait     = iota // nothing yet: look again at the decision's time
	silenceAsk             // silent too long: ask it
	silenceAnswered        // it was asked and has shown life since
	silenceStop            // asked, and still silent after the grace
)

type silenceDecision struct {
	act int
	at  time.Time // when to look again (silenceWait, silenceAsk, silenceAnswered)
}

// silenceStep is the rule for a process that works: last is its last sign of life (its
// start, a tool call, a line of output), askedAt when it was asked whether it is stuck
// (zero: not asked). It is asked once silent for settings.silence_timeout_seconds, and
// stopped once silent for settings.silence_grace_seconds after that; any sign of life after
// the question answers it.
func silenceStep(set filestore.Settings, now, last, askedAt time.Time) silenceDecision {
	silence, grace := set.SilenceTimeout(), set.SilenceGrace()
	if !askedAt.IsZero() {
		if last.After(askedAt) {
			return silenceDecision{act: silenceAnswered, at: last.Add(silence)}
		}
		if now.Sub(askedAt) >= grace {
			return silenceDecision{act: silenceStop}
		}
		return silenceDecision{act: silenceWait, at: askedAt.Add(grace)}
	}
	if now.Sub(last) >= silence {
		return silenceDecision{act: silenceAsk, at: now.Add(grace)}
	}
	return silenceDecision{act: silenceWait, at: last.Add(silence)}
}

func latest(ts ...time.Time) time.Time {
	var out time.Time
	for _, t := range ts {
		if t.After(out) {
			out = t
		}
	}
	return out
}

// sign is what a spawn's sessions say of its life: its latest tool call, and whether one
// of its live sessions is inside a call now.
// answered ends the question put to a silent process that shows life again, and says so
// once; nothing for a process that was not asked.
func (c *Coordinator) answered(pr *proc) {
	if pr.askedAt.IsZero() {
		return
	}
	c.Say("%s answered: it is active again", pr.key)
	pr.askedAt = time.Time{}
}

type sign struct {
	call   time.Time
	inCall bool
}

// lastSigns maps each spawn to the signs of life of its sessions: a session's recorded
// activity (renewed at most every tenth of its lease) and, closer, the time its serving
// process last recorded a call of it (within a second), with whether one is in flight.
func (c *Coordinator) lastSigns() map[string]sign {
	out := map[string]sign{}
	all, err := c.s.Sessions("")
	if err != nil {
		return out
	}
	now := c.s.Now()
	for _, se := range all {
		if se.SpawnID == "" {
			continue
		}
		sg := out[se.SpawnID]
		sg.call = latest(sg.call, se.LastActivityAt)
		if at, inCall, err := c.s.SessionActivity(se.ID); err == nil {
			sg.call = latest(sg.call, at)
			sg.inCall = sg.inCall || inCall && se.Live(now)
		}
		out[se.SpawnID] = sg
	}
	return out
}

// outputAt is when the process last wrote to its captured output (zero if unknown).
func (c *Coordinator) outputAt(pr *proc) time.Time {
	if fi, err := pr.log.Stat(); err == nil {
		return fi.ModTime()
	}
	return time.Time{}
}

// stop ends a hung process: SIGTERM to its process group, SIGKILL 5 s later if it is
// still there. Its exit is handled as any other (exited), as a failure.
func (c *Coordinator) stop(pr *proc, why string) {
	pr.stopReason = why
	c.Say("stop %s: %s; stopping pid %d", pr.key, why, pr.cmd.Process.Pid)
	pid := pr.cmd.Process.Pid
	signalGroup(pid, false)
	go func() {
		select {
		case <-pr.done:
		case <-time.After(5 * time.Second):
			signalGroup(pid, true)
		}
	}()
}
