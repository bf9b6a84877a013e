package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aipm/aipm/filestore"
)

// The floor of the work (tool calls per finished task): a worker's simple task is
// authenticate (whose answer carries the first step), get_my_task, the work,
// report_completed; a sub-task it creates adds start and finish; a manager adds about 2
// per sub-task it dispatches.
const (
	floorManagerPerSubtask = 2.5
	floorWorkerDirect      = 4
	floorWorkerPerSubtask  = 2
)

// callsPlan is one project for BenchmarkCallsPerTask: the agents (id, hierarchy, parent)
// and the managers' tasks, in the simulated agents' script.
type callsPlan struct {
	name   string
	agents [][3]string
	tasks  map[string]string // manager → description
}

// callsTeamPlan is 3 managers with 7 workers each: per team 7 sub-tasks, with
// dependencies, two of which the worker splits into steps of its own. No step sleeps
// (see callsDemoPlan).
func callsTeamPlan() callsPlan {
	p := callsPlan{name: "team (3 managers, 21 workers)", tasks: map[string]string{}}
	for _, m := range []string{"m1", "m2", "m3"} {
		p.agents = append(p.agents, [3]string{m, "manager", "alice"})
		for _, w := range "abcdefg" {
			p.agents = append(p.agents, [3]string{m + string(w), "worker", m})
		}
		p.tasks[m] = strings.Join([]string{
			"Team " + m + " builds its part.",
			"plan a for " + m + "a: Seed " + m + " | write " + m + "-a.txt random 1-99",
			"plan b after a for " + m + "b: Double " + m + " | double " + m + "-a.txt " + m + "-b.txt",
			"plan c for " + m + "c: Notes " + m + " | write " + m + "-c1.txt one; write " + m + "-c2.txt two",
			"plan d after a for " + m + "d: Steps " + m + " | write " + m + "-d1.txt one; double " + m + "-a.txt " + m + "-d2.txt; write " + m + "-d3.txt three",
			"plan e after b for " + m + "e: Again " + m + " | double " + m + "-b.txt " + m + "-e.txt",
			"plan f for " + m + "f: Check " + m + " | write " + m + "-f.txt checked",
			"plan g after c,d for " + m + "g: Last " + m + " | write " + m + "-g.txt done",
		}, "\n")
	}
	return p
}

// callsDemoPlan is `aipm demo`'s plan without its 2 s of simulated work (and without the
// owner's pause): while it "works", the simulated agent calls a cheap tool every 200 ms
// to notice an interrupt, calls a real agent at work does not make.
func callsDemoPlan() callsPlan {
	return callsPlan{name: "demo", agents: [][3]string{{"manager", "manager", "alice"}, {"worker-gen", "worker", "manager"}, {"worker-calc", "worker", "manager"}},
		tasks: map[string]string{"manager": strings.Replace(demoPlan, "sleep 2s; ", "", 1)}}
}

// callsFigures are the calls per finished task of one run, from its run records.
type callsFigures struct {
	managerCalls, managerSubtasks int // managers: calls, and the sub-tasks they dispatched
	directCalls, directTasks      int // workers' tasks done directly
	splitCalls, splitSubtasks     int // workers' tasks split into sub-tasks
	splitTasks                    int
	total                         filestore.Usage
}

// BenchmarkCallsPerTask runs the demo plan and a team plan with simulated agents under
// `aipm run` and prints the tool calls per finished task from the run records, next to
// the floor the work needs. Every call is a model request: this is what a team of real
// agents pays for in time and money.
//
//	go test -run='^$' -bench=CallsPerTask -benchtime=1x ./cmd/aipm
func BenchmarkCallsPerTask(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	bin := b.TempDir()
	if err := os.Symlink(exe, filepath.Join(bin, "aipm")); err != nil {
		b.Fatal(err)
	}
	for _, p := range []callsPlan{callsDemoPlan(), callsTeamPlan()} {
		b.Run(strings.Fields(p.name)[0], func(b *testing.B) {
			var f callsFigures
			for range b.N {
				f = runCallsPlan(b, bin, p)
			}
			mgr := float64(f.managerCalls) / float64(max(f.managerSubtasks, 1))
			direct := float64(f.directCalls) / float64(max(f.directTasks, 1))
			split := (float64(f.splitCalls) - floorWorkerDirect*float64(f.splitTasks)) / float64(max(f.splitSubtasks, 1))
			fmt.Printf("calls per finished task, %s plan (%s in all):\n", p.name, f.total)
			fmt.Printf("  manager, per dispatched sub-task:   %5.2f  (floor %.1f; %d calls, %d sub-tasks)\n", mgr, floorManagerPerSubtask, f.managerCalls, f.managerSubtasks)
			fmt.Printf("  worker, per task done directly:     %5.2f  (floor %d; %d calls, %d tasks)\n", direct, floorWorkerDirect, f.directCalls, f.directTasks)
			fmt.Printf("  worker, per sub-task beyond %d:      %5.2f  (floor %d; %d calls, %d tasks, %d sub-tasks)\n", floorWorkerDirect, split, floorWorkerPerSubtask, f.splitCalls, f.splitTasks, f.splitSubtasks)
			b.ReportMetric(mgr, "mgr-calls/subtask")
			b.ReportMetric(direct, "calls/direct-task")
			b.ReportMetric(split, "calls/worker-subtask")
		})
	}
}

// runCallsPlan sets the plan up in a fresh project, runs it to the end and reads the
// figures from the execution records.
func runCallsPlan(b *testing.B, bin string, p callsPlan) callsFigures {
	dir := b.TempDir()
	env := append(wakeEnv(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "CHAT_IDLE_TIMEOUT_SECONDS=2")
	aipm := func(args ...string) string {
		cmd := exec.Command("aipm", args...)
		cmd.Dir, cmd.Env = dir, env
		cmd.Path = filepath.Join(bin, "aipm")
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("aipm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	aipm("init", "--owner", "alice")
	for _, a := range p.agents {
		aipm("agent", "add", a[0], "--ai-type", "sim", "--hierarchy", a[1], "--parent", a[2])
	}
	for m, desc := range p.tasks {
		id := aipm("task", "add", "Part of "+m, "--assign", m, "--status", "todo", "--description", desc)
		aipm("task", "status", id, "in_progress")
	}
	out := aipm("run", "--exit-when-idle", "--timeout", "4m", "--max", "8")
	last := out[strings.LastIndex(out, "\n")+1:]
	b.Logf("%s: %s", p.name, last)

	s, err := filestore.Open(dir, filestore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	tasks, err := s.Tasks(filestore.TaskFilter{})
	if err != nil {
		b.Fatal(err)
	}
	children := map[string]int{}
	for _, t := range tasks {
		if t.Status != filestore.StatusDone {
			b.Fatalf("%s: task %s (%s) ended %s:\n%s", p.name, t.ID, t.Title, t.Status, out)
		}
		if t.ParentID != "" {
			children[t.ParentID]++
		}
	}
	runs, err := s.Executions("")
	if err != nil {
		b.Fatal(err)
	}
	var f callsFigures
	for _, ex := range runs {
		if ex.Status != filestore.ExecCompleted {
			continue // a run cut short (a pause, say) is not a finished task's
		}
		f.total = f.total.Plus(ex.Usage)
		ag, err := s.Agent(ex.AgentID)
		if err != nil {
			b.Fatal(err)
		}
		k := children[ex.TaskID]
		switch {
		case ag.IsManager():
			f.managerCalls += ex.Calls
			f.managerSubtasks += k
		case k == 0:
			f.directCalls += ex.Calls
			f.directTasks++
		default:
			f.splitCalls += ex.Calls
			f.splitSubtasks += k
			f.splitTasks++
		}
	}
	return f
}
