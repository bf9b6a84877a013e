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
	// Remote, when the state branch is synced with a remote, says what the remote holds
	// of the agent leases: an agent starts only once the remote holds this machine's
	// lease of it. nil: this clone's lease files decide (no remote).
	Remote RemoteLeases
	// Lander gives each task a worktree and a branch of its own and lands their code
	// (cmd/aipm/internal/land); nil: tasks work in the repository itself.
	Lander Lander
}

// RemoteLeases follows the remote's copy of the agent leases (gitstate.Published).
type RemoteLeases interface {
	// Remote names the remote.
	Remote() string
	// Published returns the remote's leases by agent as of the last sync round that
	// reached it, and since when the rounds reach it (zero: they fail now, err says why).
	Published() (leases map[string]*filestore.Lease, reachableSince time.Time, err error)
	// Changed is signalled after every sync round.
	Changed() <-chan struct{}
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
	// fenced: stopped (moved is set too) because its lease's renewals no longer reached
	// the remote.
	fenced bool
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
	// heldWork maps each agent with work that came from another clone and waits for an
	// approval here (held.go) to why, as of the last evaluation.
	heldWork map[string]string
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
	// With a remote: leaseWhy says why each agent whose lease is this machine's here does
	// not run (the remote does not hold it yet, or no longer long enough); fenceAt is the
	// earliest moment an agent must stop because its renewals have not reached the remote;
	// remoteUp whether the last round reached it (remoteNoted: said once).
	leaseWhy              map[string]string
	fenceAt               time.Time
	remoteUp, remoteNoted bool
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
	var remoteChanged <-chan struct{}
	if c.opt.Remote != nil {
		remoteChanged = c.opt.Remote.Changed()
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
			stuck = append(stuck, c.heldStuck()...)
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
		if !c.fenceAt.IsZero() {
			wait = min(wait, max(time.Until(c.fenceAt), 10*time.Millisecond))
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
		case <-remoteChanged:
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
	ais = c.withoutHeld(ais, works)
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
				if why := c.leaseWhy[ag.ID]; why != "" {
					// Waits for the remote to decide its lease: work in progress.
					idle = false
					c.hold(k, why)
					continue
				}
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
