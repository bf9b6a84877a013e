package coordinator

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/aipm/aipm/filestore"
)

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
