package coordinator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aipm/aipm/filestore"
	"github.com/aipm/aipm/tools"
	"github.com/aipm/aipm/watch"
	"github.com/gofrs/flock"
)

// Options are how a coordinator runs.
type Options struct {
	// Max is the most agent processes at once (0: settings.max_agent_processes, else 4).
	Max int
	// ExitWhenIdle ends Run once no agent process runs and no agent has work.
	ExitWhenIdle bool
	// Backoff is the delay after a failed or fruitless start; it doubles per failure.
	Backoff time.Duration
	// Timeline also prints the project's history and messages as they happen.
	Timeline bool
	// Out receives the timeline lines, Err the diagnostics.
	Out, Err io.Writer
	// AgentWorktree returns the Git worktree an agent works in when the project's
	// settings.agent_worktrees is on, creating it on first use (created). The command
	// wires it to Git; nil refuses the setting.
	AgentWorktree func(agentID string) (dir string, created bool, err error)
	// Lander gives each task a worktree and a branch of its own and lands their code
	// (cmd/aipm/internal/land); nil: tasks work in the repository itself.
	Lander Lander
}

// Lander makes tasks' worktrees and runs the merge queue.
type Lander interface {
	// Workdir is the worktree a task works in ("" when it works without a branch);
	// made when it was made now.
	Workdir(t *filestore.Task) (dir string, made bool, err error)
	// Step lands the first entry of the queue that it may (busy: a task whose agent
	// process still runs); next is when a held entry is due for another look.
	Step(busy func(taskID string) bool) (did bool, next time.Time, err error)
	// Waiting counts the entries the queue lands without help, and says why each held
	// one waits.
	Waiting() (n int, held []string)
}

// Lock takes this machine's coordinator lock of the project, so two coordinators of one
// machine never start the same agent (those of two machines are kept apart by the agent
// leases); it fails with coordinator_running when another holds it. unlock releases it.
func Lock(s *filestore.Store) (unlock func(), err error) {
	machine, err := s.MachineID()
	if err != nil {
		return nil, err
	}
	lk := flock.New(filepath.Join(s.Dir(), "runtime", "locks", "coordinator."+machine+".lock"))
	if err := filestore.EnsureDir(filepath.Dir(lk.Path())); err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(lk.Path()); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file: remove it (aipm never follows links under .ai-pm)", s.Rel(lk.Path()))
	}
	ok, err := lk.TryLock()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &filestore.Error{Code: "coordinator_running", Kind: filestore.ErrConflict,
			Message: "another aipm run already coordinates this project on this machine (" + machine + ")", Hint: "stop it first, or let it do the work"}
	}
	return func() { lk.Unlock() }, nil
}

// workKey is what at most one process may be in flight for.
type workKey struct{ agent, purpose string }

func (k workKey) String() string { return k.agent + "/" + k.purpose }

// proc is one running agent process.
type proc struct {
	key       workKey
	spawn     *filestore.Spawn
	cmd       *exec.Cmd
	log       *os.File
	mcpConfig string
	taskID    string
	manager   bool // a manager's task process: its sub-tasks are others' work
	started   time.Time
	before    string // the work's fingerprint at start: unchanged at exit means no progress
	// authenticated is set once its spawn ticket was used; stopReason once the coordinator
	// stops it (supervise); done is closed when it has exited.
	authenticated bool
	stopReason    string
	// askedAt is when it was last asked whether it is stuck (zero: not since its last sign
	// of life); asks counts the questions.
	askedAt time.Time
	asks    int
	// cpuSeen is the CPU time its process group had used at the last look, cpuAt when it
	// last grew by cpuSign: a sign of life.
	cpuSeen time.Duration
	cpuAt   time.Time
	done    chan struct{}
	// moved: stopped because the agent's lease went to another machine; retired: because
	// the agent was made inactive. Neither exit is a failure.
	moved, retired bool
}

type exitEvent struct {
	p   *proc
	err error
}

// Coordinator watches a store and starts each AI agent's configured command when the agent
// has task or chat work and no live session for it.
type Coordinator struct {
	s        *filestore.Store
	opt      Options
	aipm     string
	t0       time.Time
	running  map[workKey]*proc
	fails    map[workKey]int
	until    map[workKey]time.Time
	held     map[workKey]string // the hold last reported, so it prints once
	warned   map[string]bool
	exits    chan exitEvent
	paused   bool
	stopping bool // shutting down: exits need no backoff
	// idleSince is when only idle chat sessions were left running (--exit-when-idle).
	idleSince time.Time
	starts    int
	wasted    int      // starts that backed off: failed, never authenticated, or changed nothing
	peak      int      // the most agent processes alive at once
	spawned   []string // the spawn records of this run, for its usage
	// unapproved maps each agent with work that an unapproved command keeps from starting
	// to that command's name, as of the last evaluation.
	unapproved map[string]string
	// noCommand holds each agent with work whose ai_type has no command, as of the last
	// evaluation.
	noCommand map[string]bool
	// gaveUp holds the work whose last start failed for a reason only a person can mend
	// (needsPerson), with what to do: it is not started again in this run.
	gaveUp map[workKey]string
	// broken counts the starts in a row of each work that failed, never authenticated or
	// were stopped as hung (failedStart).
	broken map[workKey]int
	tl     *timeline
	// machine is this machine's id; leaseTTL how long an agent lease lasts. ours holds
	// the agents whose lease this machine held at the last look.
	machine  string
	leaseTTL time.Duration
	ours     map[string]bool
	// sayMu keeps timeline lines whole: the merge queue prints from its own goroutine.
	sayMu sync.Mutex
	// busyMu guards busyTasks, the tasks whose agent process runs, which the merge queue
	// leaves alone; landKick wakes the queue.
	busyMu    sync.Mutex
	busyTasks map[string]bool
	landKick  chan struct{}
}

// New makes a coordinator of s; Run starts it.
func New(s *filestore.Store, opt Options) (*Coordinator, error) {
	exe, err := Executable()
	if err != nil {
		return nil, err
	}
	if opt.Backoff <= 0 {
		opt.Backoff = time.Second
	}
	if opt.Out == nil {
		opt.Out = io.Discard
	}
	if opt.Err == nil {
		opt.Err = io.Discard
	}
	machine, err := s.MachineID()
	if err != nil {
		return nil, err
	}
	ttl, err := filestore.LeaseDuration()
	if err != nil {
		return nil, err
	}
	c := &Coordinator{s: s, opt: opt, aipm: exe, t0: time.Now(), running: map[workKey]*proc{}, fails: map[workKey]int{},
		until: map[workKey]time.Time{}, held: map[workKey]string{}, warned: map[string]bool{}, exits: make(chan exitEvent, 16),
		machine: machine, leaseTTL: ttl, ours: map[string]bool{}, busyTasks: map[string]bool{}, landKick: make(chan struct{}, 1),
		gaveUp: map[workKey]string{}, broken: map[workKey]int{}}
	if opt.Timeline {
		c.tl = newTimeline(s, c.Say)
	}
	return c, nil
}

// Say prints one timeline line, stamped with the time since the coordinator started.
func (c *Coordinator) Say(format string, args ...any) {
	c.sayMu.Lock()
	defer c.sayMu.Unlock()
	fmt.Fprintf(c.opt.Out, "[%6.2fs] %s\n", time.Since(c.t0).Seconds(), fmt.Sprintf(format, args...))
}

const maxBackoff = 5 * time.Minute

// idleGrace is how long --exit-when-idle lets chat sessions with nothing to talk about
// log out by themselves before it stops them.
const idleGrace = 2 * time.Second

// Started is when the coordinator was made: the zero of its timeline.
func (c *Coordinator) Started() time.Time { return c.t0 }

// Run coordinates until ctx ends (or, with ExitWhenIdle, until no work is left), then stops
// the agent processes it started.
func (c *Coordinator) Run(ctx context.Context) error {
	hub := &watch.Hub{}
	if err := tools.Watch(ctx, c.s, hub, func(format string, args ...any) {
		fmt.Fprintf(c.opt.Err, "aipm run: "+format+"\n", args...)
	}); err != nil {
		return err
	}
	// Conversation deadlines are written when they pass, not when someone next reads.
	go tools.KeepConversations(ctx, c.s, hub, func(format string, args ...any) { fmt.Fprintf(c.opt.Err, "aipm run: "+format+"\n", args...) })
	// The files that can create or end work; not runtime/spawns/, where the agents' output
	// is captured line by line.
	sub := hub.Subscribe("tasks/", "agents/", "conversations/", "delegations/", "leases/", "project.json", "runtime/sessions/", "runtime/chat/", "events.jsonl")
	defer sub.Close()
	// A coordinator that stops says so in its leases: its agents' chat sessions ended
	// now. The leases themselves lapse when they expire, or are released by a human.
	defer func() {
		if err := c.s.LeavePresence(c.machine); err != nil {
			c.Say("recording the end of this machine's chat sessions in its leases: %v", err)
		}
	}()
	c.Say("coordinating %s on machine %s (at most %d agent processes)", c.s.Root(), c.machine, c.maxProcs())
	c.reclaim(ctx)
	if c.tl != nil {
		c.tl.poll()
	}
	if c.opt.Lander != nil {
		landCtx, stopLand := context.WithCancel(ctx)
		landDone := make(chan struct{})
		go func() {
			defer close(landDone)
			c.landLoop(landCtx)
		}()
		defer func() {
			stopLand()
			<-landDone
		}()
	}
	for {
		if c.tl != nil {
			c.tl.poll()
		}
		idle, next := c.evaluate(time.Now())
		if c.opt.Lander != nil {
			select {
			case c.landKick <- struct{}{}:
			default:
			}
			if n, _ := c.opt.Lander.Waiting(); n > 0 {
				idle = false // code waits to land
			}
		}
		if !idle || !c.opt.ExitWhenIdle {
			c.idleSince = time.Time{}
		} else if c.idleSince.IsZero() {
			c.idleSince = time.Now()
		}
		// Only chat sessions with nothing to talk about may be left: they are told to log
		// out, and are stopped if they have not exited after idleGrace (a human holds the
		// chat open, say): they would only wait for a message nobody is going to send.
		if idle && c.opt.ExitWhenIdle && (len(c.running) == 0 || time.Since(c.idleSince) >= idleGrace) {
			if len(c.running) > 0 {
				c.Say("idle: no agent has work; ending %d idle chat session(s)", len(c.running))
				c.shutdown()
			}
			if c.tl != nil {
				c.tl.poll()
			}
			c.Say("idle: no agent has work and none is running; %d start(s) in all, %d wasted, at most %d process(es) at once; %s",
				c.starts, c.wasted, c.peak, c.usage())
			if c.opt.Lander != nil {
				if _, held := c.opt.Lander.Waiting(); len(held) > 0 {
					c.Say("not landed, waiting for you: %s", strings.Join(held, "; "))
				}
			}
			var stuck []string
			if c.opt.Lander != nil {
				if _, held := c.opt.Lander.Waiting(); len(held) > 0 {
					stuck = append(stuck, fmt.Sprintf("%d task(s) whose code waits to land", len(held)))
				}
			}
			if len(c.gaveUp) > 0 {
				var who []string
				for k, why := range c.gaveUp {
					who = append(who, k.String()+" ("+why+")")
				}
				sort.Strings(who)
				stuck = append(stuck, "work that needs a person first: "+strings.Join(who, "; "))
			}
			if len(c.noCommand) > 0 {
				who := slices.Sorted(maps.Keys(c.noCommand))
				stuck = append(stuck, fmt.Sprintf("work for %s, whose ai_type has no command in settings.agent_commands", strings.Join(who, ", ")))
			}
			if len(c.unapproved) > 0 {
				// Said last: work is left that only an approval can start.
				var who []string
				for ag, name := range c.unapproved {
					who = append(who, fmt.Sprintf("%s (settings.agent_commands.%s)", ag, name))
				}
				sort.Strings(who)
				c.Say("not started for want of an approval on this machine, although they have work: %s; review and approve with `aipm trust`, then run again",
					strings.Join(who, ", "))
				stuck = append(stuck, fmt.Sprintf("work for %d agent(s) whose command is not approved here", len(who)))
			}
			if len(stuck) > 0 {
				// A script must tell a finished run from one that stopped with work nothing
				// will start: that is no success.
				return &filestore.Error{Code: "stuck", Kind: filestore.ErrConflict,
					Message: "idle with work left that nothing here will start: " + strings.Join(stuck, "; "),
					Hint:    "see the lines above: approve with `aipm trust`, settle what waits to land (`aipm land list`), or set the missing commands"}
			}
			return nil
		}
		// Leases and conversation deadlines pass without a file changing: look again at
		// least every few seconds, and exactly when a backoff ends.
		wait := min(2*time.Second, c.leaseTTL/3)
		if !next.IsZero() {
			wait = min(wait, max(time.Until(next), 10*time.Millisecond))
		}
		if !c.idleSince.IsZero() {
			wait = min(wait, max(time.Until(c.idleSince.Add(idleGrace)), 10*time.Millisecond))
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			c.shutdown()
			if c.tl != nil {
				c.tl.poll()
			}
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return &filestore.Error{Code: "timeout", Kind: filestore.ErrConflict, Message: "--timeout reached with work left",
					Hint: "inspect `aipm status` and the logs under .ai-pm/runtime/spawns/"}
			}
			return nil
		case ev := <-c.exits:
			c.exited(ev)
		case <-sub.C:
		case <-timer.C:
		}
		timer.Stop()
	}
}

func (c *Coordinator) maxProcs() int {
	if c.opt.Max > 0 {
		return c.opt.Max
	}
	if p, err := c.s.Project(); err == nil {
		return p.Settings.MaxProcesses()
	}
	return 4
}

// evaluate starts what should run now. idle reports that nothing waits to run (work held
// by a pause, a backoff or the process bound is not idle) and that every process still
// running is a chat session with nothing to talk about; next is when a backoff ends.
//
// The bound counts only processes that work: a manager waiting for its workers, a task
// session waiting for its delegation and a chat session waiting for a message or with
// nothing to do hold no slot, since what they wait for may be exactly the start the bound
// would refuse. Chat work starts before task work: a chat session is what another agent's
// conversation or delegation waits for.
func (c *Coordinator) evaluate(now time.Time) (idle bool, next time.Time) {
	p, err := c.s.Project()
	if err != nil {
		c.Say("cannot read the project: %v", err)
		return false, now.Add(time.Second)
	}
	paused := p.Status != filestore.ProjectActive
	if paused != c.paused {
		c.paused = paused
		if paused {
			c.Say("project %s: starting nothing until it is resumed", p.Status)
		} else {
			c.Say("project active again")
		}
	}
	if n, err := c.s.EndOrphans(""); err == nil && n > 0 {
		c.Say("ended %d orphaned session(s) whose process was gone", n)
	}
	agents, err := c.s.Agents()
	if err != nil {
		c.Say("cannot list agents: %v", err)
		return false, now.Add(time.Second)
	}
	tasks, err := c.s.WorkingTasks()
	if err != nil {
		c.Say("cannot list tasks: %v", err)
		return false, now.Add(time.Second)
	}
	if n, err := c.s.LiftCascades(tasks); err != nil {
		c.Say("lifting cascaded blocks: %v", err)
	} else if n > 0 {
		c.Say("lifted %d cascaded block(s) whose cause was gone", n)
		if tasks, err = c.s.WorkingTasks(); err != nil {
			c.Say("cannot list tasks: %v", err)
			return false, now.Add(time.Second)
		}
	}
	// A pull, a sync or a hand edit can leave states no writer allows (two clones each
	// starting a task for one agent, say): the rules' own repairs apply before anything
	// starts on top of them.
	if found, err := c.s.RepairMerged(filestore.SystemSender); err != nil {
		c.Say("repairing what a merge broke: %v", err)
	} else if n := c.sayRepairs(found); n > 0 {
		if tasks, err = c.s.WorkingTasks(); err != nil {
			c.Say("cannot list tasks: %v", err)
			return false, now.Add(time.Second)
		}
	}
	if started, err := c.s.StartQueued(c.notElsewhere(tasks, now)); err != nil {
		c.Say("starting queued tasks: %v", err)
	} else if len(started) > 0 {
		for _, t := range started {
			c.Say("queue: started task %s (%s) for %s", t.ID, t.Title, t.AssigneeID)
		}
		if tasks, err = c.s.WorkingTasks(); err != nil {
			c.Say("cannot list tasks: %v", err)
			return false, now.Add(time.Second)
		}
	}
	c.endTalks(agents)
	c.unapproved = map[string]string{}
	c.noCommand = map[string]bool{}
	var ais []*filestore.Agent
	works := map[string]filestore.Work{}
	for _, ag := range agents {
		if ag.Type != filestore.AgentAI || ag.Status != filestore.AgentActive {
			continue
		}
		w, err := c.s.DetectWork(ag.ID)
		if err != nil {
			c.Say("%s: cannot detect work: %v", ag.ID, err)
			continue
		}
		ais = append(ais, ag)
		works[ag.ID] = w
	}
	mine := c.claimLeases(p, ais, works)
	idle = true
	busy := 0
	open := c.openDelegations()
	told := c.toldToWait()
	if due := c.supervise(p.Settings, now, works, tasks, open, told); !due.IsZero() {
		next = due
	}
	for k, pr := range c.running {
		if pr.stopReason != "" {
			idle = false // being stopped: its slot is free already
			continue
		}
		switch c.waiting(pr, works[k.agent], tasks, open, told) {
		case "":
			busy++
			idle = false
		case waitIdleChat:
		default:
			idle = false
		}
	}
	for _, purpose := range []string{filestore.PurposeChat, filestore.PurposeTask} {
		for _, ag := range c.healthyFirst(ais, purpose) {
			w := works[ag.ID]
			k := workKey{ag.ID, purpose}
			if purpose == filestore.PurposeTask && w.TaskID == "" || purpose == filestore.PurposeChat && !w.Chat {
				delete(c.held, k)
				continue
			}
			if _, ok := c.running[k]; ok {
				continue
			}
			ac, ok := p.Settings.AgentCommands[AIType(ag)]
			if !ok {
				c.noCommand[ag.ID] = true
				if !c.warned[ag.ID] {
					c.warned[ag.ID] = true
					c.Say("%s has work but settings.agent_commands has no %q command (set ai_type or add the command to .ai-pm/project.json)", ag.ID, AIType(ag))
				}
				continue
			}
			if ok, prog, err := c.approved(AIType(ag), ac, c.s.Root()); !ok {
				// A command from a clone or a pull runs only once this machine approved it.
				c.unapproved[ag.ID] = AIType(ag)
				key := "trust:" + filestore.CommandHash(AIType(ag), ac, prog)
				if !c.warned[key] {
					c.warned[key] = true
					if err != nil {
						c.Say("settings.agent_commands.%s: cannot read the approvals: %v", AIType(ag), err)
					} else if now := c.s.NowInstalled(AIType(ag), ac, prog); now != "" {
						c.Say("settings.agent_commands.%s (used by %s) is not approved on this machine: %s; approve it with `aipm trust`", AIType(ag), ag.ID, now)
					} else {
						c.Say("settings.agent_commands.%s (used by %s) is not approved on this machine: it is new or changed since it was approved, so nothing is started with it; review it and approve it with `aipm trust`", AIType(ag), ag.ID)
					}
				}
				continue
			}
			if why, ok := c.gaveUp[k]; ok {
				// Only a person can mend it: waiting for it is not work in progress.
				c.hold(k, "not started again in this run: "+why)
				continue
			}
			if !mine[ag.ID] {
				// Another machine's agent: its work is that machine's to start.
				c.hold(k, c.leaseHolder(ag.ID))
				continue
			}
			idle = false
			if paused {
				continue
			}
			if purpose == filestore.PurposeTask && ag.Hierarchy == filestore.HierarchyManager {
				if why := managerHold(tasks, w.TaskID); why != "" {
					c.hold(k, why)
					continue
				}
			}
			if u := c.until[k]; now.Before(u) {
				if next.IsZero() || u.Before(next) {
					next = u
				}
				continue
			}
			if busy >= c.maxProcs() {
				c.hold(k, fmt.Sprintf("%d agent processes already work (%d more only wait)", busy, len(c.running)-busy))
				continue
			}
			delete(c.held, k)
			if c.start(p, ag, ac, purpose, w, tasks) {
				busy++
			}
		}
	}
	return idle, next
}

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

// claimLeases takes or renews the leases of the AI agents this machine may run — those
// with work or a process here that it can start (their command is set and approved here),
// and those whose lease it already holds — and stops the processes of an agent whose
// lease has gone to another machine (a move, or a merge that kept the other machine's
// claim): an agent runs on one machine at a time. It returns the agents this machine
// holds.
func (c *Coordinator) claimLeases(p *filestore.Project, ais []*filestore.Agent, works map[string]filestore.Work) map[string]bool {
	held := map[string]bool{}
	if leases, err := c.s.Leases(); err != nil {
		c.Say("cannot read the agent leases: %v", err)
	} else {
		for _, l := range leases {
			held[l.AgentID] = l.MachineID == c.machine
		}
	}
	var ids []string
	for _, ag := range ais {
		w := works[ag.ID]
		_, task := c.running[workKey{ag.ID, filestore.PurposeTask}]
		_, chat := c.running[workKey{ag.ID, filestore.PurposeChat}]
		// Its own leases it keeps renewing (a move made them its own before any work),
		// so that its agents' presence stays known to their partners elsewhere. A free
		// one it takes only for an agent it can start: another machine may.
		ac, ok := p.Settings.AgentCommands[AIType(ag)]
		startable := ok
		if ok {
			startable, _, _ = c.approved(AIType(ag), ac, c.s.Root())
		}
		if task || chat || c.ours[ag.ID] || held[ag.ID] || startable && (w.TaskID != "" || w.Chat) {
			ids = append(ids, ag.ID)
		}
	}
	got, err := c.s.ClaimLeases(c.machine, ids)
	if err != nil {
		c.Say("cannot claim agent leases: %v", err)
		got = nil // start nothing: without the leases, another machine may run them
	}
	mine := map[string]bool{}
	for id, l := range got {
		if l != nil && l.MachineID == c.machine && l.Held(c.s.Now()) {
			mine[id] = true
			if !c.ours[id] {
				c.Say("lease %s: held by this machine (%s) until %s", id, c.machine, l.ExpiresAt.Format(time.RFC3339))
			}
		} else if c.ours[id] {
			c.Say("lease %s: %s", id, c.leaseHolder(id))
		}
	}
	c.ours = mine
	active := map[string]bool{}
	for _, ag := range ais {
		active[ag.ID] = true
	}
	for k, pr := range c.running {
		if !mine[k.agent] && !pr.moved && pr.cmd.Process != nil {
			if !active[k.agent] {
				// Made inactive (its lease is let go for that reason, not taken elsewhere).
				c.Say("stop %s: the agent was made inactive", k)
				pr.retired = true
			} else {
				c.Say("stop %s: its lease is no longer this machine's", k)
			}
			pr.moved = true
			signalGroup(pr.cmd.Process.Pid, false)
		}
	}
	return mine
}

// endTalks ends at once the delegations and conversations that wait on an agent that will
// not answer: one made inactive, or one whose chat work this run gave up starting
// (failedStart, or a start that needs a person). They would otherwise wait out their
// timeouts.
//
// agents is the agents as last listed; nil lists them.
func (c *Coordinator) endTalks(agents []*filestore.Agent) {
	if agents == nil {
		var err error
		if agents, err = c.s.Agents(); err != nil {
			c.Say("cannot list agents: %v", err)
			return
		}
	}
	var gone []filestore.Unreachable
	for _, ag := range agents {
		if ag.Status == filestore.AgentInactive {
			gone = append(gone, filestore.Unreachable{AgentID: ag.ID, Reason: filestore.EndAgentInactive})
		} else if why, ok := c.gaveUp[workKey{ag.ID, filestore.PurposeChat}]; ok {
			gone = append(gone, filestore.Unreachable{AgentID: ag.ID, Reason: filestore.EndAgentCannotStart, Detail: clipText(why, 300)})
		}
	}
	if len(gone) == 0 {
		return
	}
	dlgs, convs, err := c.s.EndTalksWith(gone)
	if err != nil {
		c.Say("ending what waits on agents that will not answer: %v", err)
		return
	}
	if len(dlgs)+len(convs) > 0 {
		c.Say("ended what waited on an agent that will not answer (inactive, or never starts): %s", strings.Join(append(dlgs, convs...), ", "))
	}
}

// clipText cuts s to at most n runes, marking the cut.
func clipText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// notElsewhere are the tasks not assigned to an agent whose lease another machine holds
// now: the queue starts only what this machine may run, so two machines never start two
// tasks of one agent.
func (c *Coordinator) notElsewhere(tasks []*filestore.Task, now time.Time) []*filestore.Task {
	leases, err := c.s.Leases()
	if err != nil {
		c.Say("cannot read the agent leases: %v", err)
		return nil
	}
	elsewhere := map[string]bool{}
	for _, l := range leases {
		if l.MachineID != c.machine && l.Held(now) {
			elsewhere[l.AgentID] = true
		}
	}
	if len(elsewhere) == 0 {
		return tasks
	}
	return slices.DeleteFunc(slices.Clone(tasks), func(t *filestore.Task) bool { return elsewhere[t.AssigneeID] })
}

// leaseHolder says where an agent runs instead of here.
func (c *Coordinator) leaseHolder(agentID string) string {
	l, err := c.s.Lease(agentID)
	switch {
	case err != nil:
		return fmt.Sprintf("its lease cannot be read: %v", err)
	case l == nil:
		return "no lease could be taken"
	case l.MachineID == c.machine:
		return "this machine's lease lapsed"
	}
	return fmt.Sprintf("leased to machine %s (`aipm agent move %s --to %s` moves it here)", l.MachineID, agentID, c.machine)
}

// sayRepairs prints the repairs RepairMerged applied, and once each breach it could not
// repair (`aipm doctor` names its fix); it returns how many it applied.
func (c *Coordinator) sayRepairs(found []filestore.Breach) int {
	n := 0
	for _, b := range found {
		if b.Repaired {
			n++
			c.Say("repaired %s", b)
		} else if key := "breach:" + b.Rule + ":" + b.ID; !c.warned[key] {
			c.warned[key] = true
			c.Say("cannot repair %s", b)
		}
	}
	return n
}

// What a running process waits for (see waiting); "" means it works.
const (
	waitIdleChat  = "nothing to talk about"
	waitPartner   = "a conversation partner"
	waitWorkers   = "its workers"
	waitDelegated = "its delegation"
)

// openDelegations counts the unfinished delegations per task, by delegating agent.
func (c *Coordinator) openDelegations() map[workKey]int {
	out := map[workKey]int{}
	ds, err := c.s.Delegations(filestore.DelegationFilter{})
	if err != nil {
		return out
	}
	for _, d := range ds {
		if !d.Finished() {
			out[workKey{d.AgentID, d.TaskID}]++
		}
	}
	return out
}

// toldToWait maps each spawn whose live task session get_next_action told to wait to what
// it waits for.
func (c *Coordinator) toldToWait() map[string]string {
	out := map[string]string{}
	all, err := c.s.Sessions("")
	if err != nil {
		return out
	}
	now := c.s.Now()
	for _, se := range all {
		if se.Waiting != "" && se.SpawnID != "" && se.Live(now) {
			out[se.SpawnID] = se.Waiting
		}
	}
	return out
}

// waiting says what a running process only waits for, or "" when it works (or may: a
// process that just started, a task that changed under it). w is its agent's work now;
// told is what get_next_action told the live sessions to wait for, by spawn.
func (c *Coordinator) waiting(pr *proc, w filestore.Work, tasks []*filestore.Task, open map[workKey]int, told map[string]string) string {
	if pr.key.purpose == filestore.PurposeChat {
		if w.ChatInput() {
			return ""
		}
		if busy, err := c.s.ChatBusy(pr.key.agent); err != nil || busy {
			return waitPartner
		}
		return waitIdleChat
	}
	t := findTask(tasks, pr.taskID)
	if t == nil || t.Status != filestore.StatusInProgress {
		return ""
	}
	if open[workKey{pr.key.agent, pr.taskID}] > 0 {
		return waitDelegated
	}
	if pr.manager && managerHold(tasks, pr.taskID) != "" {
		return waitWorkers
	}
	if what := told[pr.spawn.ID]; what != "" {
		return what // e.g. a worker's wait for a dependency that is someone else's work
	}
	return ""
}

func (c *Coordinator) hold(k workKey, why string) {
	if c.held[k] != why {
		c.held[k] = why
		c.Say("hold %s: %s", k, why)
	}
}

// AIType is the agent's configured CLI kind; agents that name none run Claude Code.
func AIType(a *filestore.Agent) string {
	if a.AIType == "" {
		return "claude"
	}
	return a.AIType
}

// managerHold says why a manager with task work should not be started now: its sub-work is
// merely in progress with nothing for it to react to (no blocked sub-task, nothing to
// dispatch, not everything finished). Starting it would only make it wait, and restarting
// it each time it exits is the spawn loop the original system suffered.
func managerHold(tasks []*filestore.Task, taskID string) string {
	byID := map[string]*filestore.Task{}
	kids := map[string][]*filestore.Task{}
	for _, t := range tasks {
		byID[t.ID] = t
		kids[t.ParentID] = append(kids[t.ParentID], t)
	}
	children := kids[taskID]
	if len(children) == 0 {
		return ""
	}
	finished := 0
	for _, ch := range children {
		switch ch.Status {
		case filestore.StatusBlocked:
			return ""
		case filestore.StatusDone, filestore.StatusCancelled:
			finished++
		case filestore.StatusTodo, filestore.StatusBacklog:
			ready := true
			for _, d := range ch.Dependencies {
				if !filestore.DependencyMet(byID[d]) {
					ready = false
				}
			}
			if ready {
				return ""
			}
		}
	}
	if finished == len(children) {
		return ""
	}
	running := 0
	var walk func(id string)
	walk = func(id string) {
		for _, t := range kids[id] {
			// A done sub-task whose code the merge queue is landing moves too.
			if t.Status == filestore.StatusInProgress || t.LandingInFlight() {
				running++
			}
			walk(t.ID)
		}
	}
	walk(taskID)
	if running == 0 {
		return "" // nothing moves: the manager must look (e.g. a dependency deadlock)
	}
	return "waiting for workers (sub-tasks in progress, nothing to react to)"
}

// fingerprint summarizes the work a start is for; the same fingerprint after the process
// exits means it made no progress.
func fingerprint(purpose string, w filestore.Work, tasks []*filestore.Task) string {
	if purpose == filestore.PurposeChat {
		return fmt.Sprintf("chat unread=%d delegations=%d requests=%d notices=%d opened=%v",
			w.Unread, w.PendingDelegations, w.ConversationRequests, w.Notices, w.ChatOpened)
	}
	kids := map[string][]*filestore.Task{}
	var root *filestore.Task
	for _, t := range tasks {
		kids[t.ParentID] = append(kids[t.ParentID], t)
		if t.ID == w.TaskID {
			root = t
		}
	}
	if root == nil {
		return "task " + w.TaskID
	}
	var parts []string
	var walk func(t *filestore.Task)
	walk = func(t *filestore.Task) {
		parts = append(parts, fmt.Sprintf("%s:%s:%d", t.ID, t.Status, t.Version))
		for _, k := range kids[t.ID] {
			walk(k)
		}
	}
	walk(root)
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// start mints a spawn ticket and starts the agent's command for one purpose; it reports
// whether a process started.
func (c *Coordinator) start(p *filestore.Project, ag *filestore.Agent, ac filestore.AgentCommand, purpose string, w filestore.Work, tasks []*filestore.Task) bool {
	k := workKey{ag.ID, purpose}
	taskID := ""
	if purpose == filestore.PurposeTask {
		taskID = w.TaskID
	}
	fail := func(sp *filestore.Spawn, err error) {
		c.Say("start %s failed: %v", k, err)
		if sp != nil {
			// The log the record names says why, as a process's own output would.
			if f, lerr := filestore.OpenAppend(c.s.SpawnLogPath(sp.ID)); lerr == nil {
				fmt.Fprintf(f, "aipm run: cannot start %s: %v\n", k, err)
				f.Close()
			}
			c.s.EndSpawn(sp.ID, -1, "start_failed")
		}
		c.backoff(k, sp, "the start failed", 0)
	}
	sp, ticket, err := c.s.CreateSpawn(filestore.NewSpawn{AgentID: ag.ID, Purpose: purpose, TaskID: taskID, AIType: AIType(ag), Machine: c.machine,
		TicketTTL: p.Settings.StartTimeout()})
	if err != nil {
		fail(nil, err)
		return false
	}
	workdir := c.s.Root()
	taskDir := ""
	if taskID != "" && c.opt.Lander != nil {
		t, err := c.s.Task(taskID)
		if err != nil {
			fail(sp, err)
			return false
		}
		dir, made, err := c.opt.Lander.Workdir(t)
		if err != nil {
			fail(sp, fmt.Errorf("the task's worktree: %w", err))
			return false
		}
		if made {
			if t, err := c.s.Task(taskID); err == nil && t.Landing != nil {
				c.Say("made worktree %s for task %s on branch %s from %s at %.10s", dir, taskID, t.Landing.Branch, t.Landing.Target, t.Landing.Base)
			}
		}
		taskDir = dir
	}
	if taskDir != "" {
		workdir = taskDir
	} else if p.Settings.AgentWorktrees {
		if c.opt.AgentWorktree == nil {
			fail(sp, fmt.Errorf("settings.agent_worktrees is on, but this coordinator cannot make worktrees"))
			return false
		}
		dir, created, err := c.opt.AgentWorktree(ag.ID)
		if err != nil {
			fail(sp, fmt.Errorf("settings.agent_worktrees: %w", err))
			return false
		}
		if created {
			c.Say("made worktree %s for %s", dir, ag.ID)
		}
		workdir = dir
	}
	// What runs is checked where it runs: the program as it resolves in the agent's
	// directory (a worktree may hold another version of a repository script), and that
	// very file is executed.
	ok, prog, err := c.approved(AIType(ag), ac, workdir)
	if !ok {
		if err == nil {
			err = fmt.Errorf("its program %s, as it resolves in %s, is not the one approved on this machine; review it and approve it with `aipm trust`", prog, workdir)
		}
		fail(sp, fmt.Errorf("settings.agent_commands.%s: %w", AIType(ag), err))
		return false
	}
	vars := spawnVars{AIPM: c.aipm, Workdir: workdir, AgentID: ag.ID, Purpose: purpose, TaskID: taskID, Model: ag.Model,
		Prompt: agentPrompt(p.Settings.Language, ag, purpose, taskID, workdir)}
	plan, err := renderSpawn(ac, vars, ticket, sp.ID, filepath.Join(c.s.Dir(), "runtime", "spawns"))
	if err != nil {
		fail(sp, fmt.Errorf("settings.agent_commands.%s (agent %s): %w", AIType(ag), ag.ID, err))
		return false
	}
	if prog.Exec != "" {
		plan.Argv[0] = prog.Exec
	}
	log, err := filestore.OpenAppend(c.s.SpawnLogPath(sp.ID))
	if err != nil {
		fail(sp, err)
		return false
	}
	cmd := exec.Command(plan.Argv[0], plan.Argv[1:]...)
	cmd.Dir = workdir
	// The agent's processes belong to this machine: its presence is judged by this
	// machine's sessions, its partners' by their leases.
	cmd.Env = append(append(childEnv(os.Environ()), filestore.EnvMachineID+"="+c.machine), plan.Env...)
	cmd.Stdout, cmd.Stderr = log, log
	// Its own process group: stopping the coordinator stops the agent and its aipm mcp.
	ownGroup(cmd)
	if err := cmd.Start(); err != nil {
		log.Close()
		if plan.MCPConfig != "" {
			os.Remove(plan.MCPConfig)
		}
		fail(sp, err)
		return false
	}
	c.s.SetSpawnPID(sp.ID, cmd.Process.Pid, describeArgv(plan.Argv, vars.Prompt))
	pr := &proc{key: k, spawn: sp, cmd: cmd, log: log, mcpConfig: plan.MCPConfig, taskID: taskID, manager: ag.Hierarchy == filestore.HierarchyManager, started: time.Now(), before: fingerprint(purpose, w, tasks),
		done: make(chan struct{})}
	c.running[k] = pr
	if taskID != "" {
		c.busyMu.Lock()
		c.busyTasks[taskID] = true
		c.busyMu.Unlock()
	}
	c.spawned = append(c.spawned, sp.ID)
	c.starts++
	c.peak = max(c.peak, len(c.running))
	what := "chat"
	if taskID != "" {
		what = "task " + taskID
		if t := findTask(tasks, taskID); t != nil {
			what += " (" + t.Title + ")"
		}
	}
	c.Say("start %s for %s: %s, pid %d, %s", ag.ID, what, AIType(ag), cmd.Process.Pid, sp.ID)
	go func() {
		err := cmd.Wait()
		close(pr.done)
		c.exits <- exitEvent{p: pr, err: err}
	}()
	return true
}

// approved resolves an agent command's program as it would run in dir and reports
// whether this machine approved the command with that program.
func (c *Coordinator) approved(name string, ac filestore.AgentCommand, dir string) (bool, filestore.Program, error) {
	prog, err := c.s.CommandProgram(ac, c.aipm, dir)
	if err != nil {
		return false, prog, err
	}
	ok, err := c.s.CommandApproved(name, ac, prog)
	return ok, prog, err
}

func findTask(tasks []*filestore.Task, id string) *filestore.Task {
	for _, t := range tasks {
		if t.ID == id {
			return t
		}
	}
	return nil
}

// childEnv is the coordinator's environment minus every AIPM_* variable: a start sets its
// own (who the agent is, the ticket, the store), and nothing of the coordinator's user or
// of another agent may leak into it.
func childEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "AIPM_") {
			out = append(out, kv)
		}
	}
	return out
}

// describeArgv is the command for the spawn record: the prompt elided, nothing secret.
func describeArgv(argv []string, prompt string) string {
	parts := make([]string, len(argv))
	for i, s := range argv {
		if prompt != "" && strings.Contains(s, prompt) {
			s = strings.ReplaceAll(s, prompt, "{prompt}")
		}
		parts[i] = s
	}
	return strings.Join(parts, " ")
}

// exited reconciles a finished process: its spawn record, its sessions (only its own),
// its runs' logs, and whether the next start for the same work must wait.
func (c *Coordinator) exited(ev exitEvent) {
	pr := ev.p
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

// failedStart backs off a start that failed, never authenticated or was stopped as hung
// (a stopped one at least as long as it held its slot, so that it holds it at most half
// the time); after settings.max_failed_starts of them in a row, with the work still
// there, it gives the work up for this run and ends what waits on it (endWaits).
func (c *Coordinator) failedStart(k workKey, sp *filestore.Spawn, why string, held time.Duration, w filestore.Work, left bool) {
	c.backoff(k, sp, why, held)
	if !left {
		return
	}
	c.broken[k]++
	limit := 5
	if p, err := c.s.Project(); err == nil {
		limit = p.Settings.FailedStarts()
	}
	if c.broken[k] < limit {
		return
	}
	fix := fmt.Sprintf("its last %d starts failed (settings.max_failed_starts), the last one: %s", c.broken[k], why)
	c.gaveUp[k] = fix
	delete(c.until, k)
	c.Say("give up %s: %s; fix its command (settings.agent_commands.%s), then run aipm run again", k, fix, sp.AIType)
	c.endWaits(k, w, fix)
}

// endWaits ends what waits on work this run gave up: the agent's task is blocked with
// the reason (its manager, or a person, decides what next), and the delegations and
// conversations that wait on its chat session end (endTalks, on every look from now on).
func (c *Coordinator) endWaits(k workKey, w filestore.Work, why string) {
	if k.purpose == filestore.PurposeChat {
		c.endTalks(nil)
		return
	}
	if w.TaskID == "" {
		return
	}
	reason := fmt.Sprintf("aipm run cannot start %s for it: %s; once that is mended, set it in progress again", k.agent, why)
	if _, err := c.s.SetTaskStatus(filestore.QueueActor, w.TaskID, filestore.StatusBlocked, reason); err != nil {
		c.Say("%s: blocking task %s: %v", k, w.TaskID, err)
		return
	}
	c.Say("blocked task %s: %s", w.TaskID, reason)
}

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
			pr.askedAt = time.Time{} // a long poll or a wait for someone else is not silence
			continue
		}
		if signs == nil {
			signs = c.lastSigns()
		}
		sg := signs[pr.spawn.ID]
		if sg.inCall {
			pr.askedAt = time.Time{} // inside a call the server is serving
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
			c.Say("%s answered: it is active again", k)
			pr.askedAt = time.Time{}
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

// usage is what the agents this run started spent in tool calls, every session of
// every process summed.
func (c *Coordinator) usage() filestore.Usage {
	var sum filestore.Usage
	for _, id := range c.spawned {
		sp, err := c.s.Spawn(id)
		if err != nil {
			continue
		}
		for _, se := range sp.SessionIDs {
			if u, err := c.s.SessionUsage(se); err == nil {
				sum = sum.Plus(u)
			}
		}
	}
	return sum
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

// landLoop runs the merge queue beside the coordinator: it lands one entry after another
// while there are any it may land, then waits to be woken (a change of the store, an
// agent process that exited) or for a held entry's next look.
func (c *Coordinator) landLoop(ctx context.Context) {
	busy := func(id string) bool {
		c.busyMu.Lock()
		defer c.busyMu.Unlock()
		return c.busyTasks[id]
	}
	for {
		did, next, err := c.opt.Lander.Step(busy)
		if err != nil {
			c.Say("land: %v", err)
		}
		if did {
			continue
		}
		wait := 30 * time.Second
		if !next.IsZero() {
			wait = max(time.Until(next), 10*time.Millisecond)
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-c.landKick:
		case <-timer.C:
		}
		timer.Stop()
	}
}
