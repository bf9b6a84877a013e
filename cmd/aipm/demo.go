package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aipm/aipm/cmd/aipm/internal/clone"
	"github.com/aipm/aipm/cmd/aipm/internal/coordinator"
	"github.com/aipm/aipm/cmd/aipm/internal/land"
	"github.com/aipm/aipm/filestore"
	"github.com/aipm/aipm/tools"
	"github.com/aipm/aipm/watch"
)

// demoPlan is the owner's task for the manager, in the script the simulated agents follow:
// three sub-tasks with dependencies, the second of which consults another worker through a
// delegated AI↔AI conversation.
const demoPlan = `Produce result.txt: twice a random seed, and a short report about it.
plan gen for worker-gen: Generate the seed | write seed.txt random 1-1000; append NOTES.md - worker-gen generated the seed
plan notes for worker-calc: Sign the notes | append NOTES.md - worker-calc was here
plan calc after gen for worker-calc: Compute the result | ask worker-gen what is in seed.txt?; double seed.txt result.txt
plan report after calc for worker-gen: Write the report | sleep 2s; write report.md result.txt holds twice the seed in seed.txt`

// demoNotes is NOTES.md of the demo's first commit: the gen and notes sub-tasks, started
// side by side from it, both add a line at its end, so that the second to land conflicts
// with the first and is done again as rework on the new tip.
const demoNotes = "# Notes\n"

// cmdDemo is the main job on its embedded default: a fresh project where the owner gives a
// manager a task; the manager decomposes it for two simulated workers, one consults the
// other through a delegated conversation, the owner pauses and resumes the project midway
// and asks the manager how it goes, and `aipm run` drives every agent process. A timeline
// prints live; a summary and the path to inspect end it.
func (a *app) cmdDemo(args []string) error {
	fl := newFlags(a, "demo")
	timeout := fl.Duration("timeout", 50*time.Second, "give up after this long")
	pos, err := fl.parse(args, 0, 1, "[DIR]")
	if err != nil {
		return err
	}
	dir := ""
	if len(pos) == 1 {
		dir = pos[0]
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	} else if dir, err = os.MkdirTemp("", "aipm-demo-"); err != nil {
		return err
	}
	// Chat sessions log out after 2 idle seconds instead of 10 minutes, so the demo ends
	// when the work does. The agents inherit it.
	if os.Getenv("CHAT_IDLE_TIMEOUT_SECONDS") == "" {
		os.Setenv("CHAT_IDLE_TIMEOUT_SECONDS", "2")
	}
	exe, err := coordinator.Executable()
	if err != nil {
		return err
	}
	repo, err := demoRepo(dir)
	if err != nil {
		return err
	}
	s, err := filestore.Init(dir, filestore.InitOptions{Name: "demo", Description: "aipm demonstration project", OwnerID: "owner",
		OwnerName: "Project Owner", AgentCommands: coordinator.DefaultAgentCommands(), AIPM: exe, TargetBranch: checkedOutBranch(dir)},
		filestore.Options{Now: a.now})
	if err != nil {
		return err
	}
	var c *coordinator.Coordinator
	opt := coordinator.Options{Max: 6, ExitWhenIdle: true, Backoff: 300 * time.Millisecond, Timeline: true, Out: a.stdout, Err: a.stderr}
	if repo {
		// Prepared as `aipm init` prepares a clone: entity files merge field by field.
		if _, err := clone.RegisterDriver(dir, exe); err != nil {
			return err
		}
		// The demo's own check, approved here as `aipm trust` would: the seed must be a
		// number.
		if err := s.EditSettings(filestore.Actor{ID: "owner", Via: filestore.ViaCLI}, func(set *filestore.Settings) { set.CheckCommand = demoCheck }); err != nil {
			return err
		}
		p, err := s.Project()
		if err != nil {
			return err
		}
		if _, err := s.ApproveCommands(p.Settings.TrustedCommands(), exe); err != nil {
			return err
		}
		if q, ok := land.New(s, func(format string, args ...any) { c.Say(format, args...) }); ok {
			opt.Lander = q
		}
	}
	c, err = coordinator.New(s, opt)
	if err != nil {
		return err
	}
	say := c.Say
	say("project initialized in %s", s.Root())
	if repo {
		say("a Git repository: each task works on a branch of its own; its code lands on %s through the merge queue, checked by `%s`",
			checkedOutBranch(dir), demoCheck)
	}
	owner := filestore.Actor{ID: "owner", Via: filestore.ViaCLI}
	for _, n := range []filestore.NewAgent{
		{ID: "manager", Name: "Manager", Hierarchy: filestore.HierarchyManager, ParentID: "owner", Role: "splits and dispatches work", AIType: "sim"},
		{ID: "worker-gen", Name: "Generator", ParentID: "manager", Role: "generates data files", AIType: "sim"},
		{ID: "worker-calc", Name: "Calculator", ParentID: "manager", Role: "computes results", AIType: "sim"},
	} {
		ag, _, err := s.AddAgent(owner, n)
		if err != nil {
			return err
		}
		say("owner added %s %s (simulated agent, reports to %s)", ag.Hierarchy, ag.ID, ag.ParentID)
	}
	top, err := s.CreateTask(owner, filestore.NewTask{Title: "Produce the doubled seed", Status: filestore.StatusTodo,
		AssigneeID: "manager", Description: demoPlan})
	if err != nil {
		return err
	}
	if _, err := s.SetTaskStatus(owner, top.ID, filestore.StatusInProgress, "kick-off"); err != nil {
		return err
	}
	say("owner started %s %q for the manager; `aipm run` takes over", top.ID, top.Title)

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	ownerDone := make(chan string, 1)
	go func() { ownerDone <- demoOwner(ctx, s, owner, say) }()
	runErr := c.Run(ctx)
	cancel()
	ownerNote := <-ownerDone

	t, err := s.Task(top.ID)
	if err != nil {
		return err
	}
	a.printf("\n")
	demoSummary(a, s, top.ID, time.Since(c.Started()))
	if ownerNote != "" {
		a.printf("Owner: %s\n", ownerNote)
	}
	short := top.ID
	if sh, err := newShortener(s); err == nil {
		short = sh.id(top.ID)
	}
	_, pathErr := exec.LookPath("aipm")
	a.printf("\n%s", inspectHint(s.Root(), short, pathErr == nil))
	a.printf("Files: %s (tasks/, agents/*/chat.jsonl, conversations/, delegations/, executions/, events.jsonl)\n", s.Dir())
	if repo {
		a.printf("Code: git -C %s log --format='%%h %%an %%s' (each landed task one commit, with its Aipm-Task trailer)\n", s.Root())
	}
	if runErr != nil {
		return runErr
	}
	if t.Status != filestore.StatusDone {
		return fmt.Errorf("the demo task ended %s, not done", t.Status)
	}
	return nil
}

// demoOwner is the human's part: once the report is being written it pauses the project
// (the worker is interrupted and stops), resumes it, and asks the manager in chat how the
// work goes. It returns a note when something did not happen as planned.
func demoOwner(ctx context.Context, s *filestore.Store, owner filestore.Actor, say func(string, ...any)) string {
	// Woken by the store's watcher, like everything else: no sleep-polling.
	hub := &watch.Hub{}
	if err := tools.Watch(ctx, s, hub, func(string, ...any) {}); err != nil {
		return "watch: " + err.Error()
	}
	sub := hub.Subscribe("tasks/", "runtime/sessions/")
	defer sub.Close()
	waitFor := func(cond func() bool) bool {
		for !cond() {
			if sub.Wait(ctx) != nil {
				return false
			}
		}
		return true
	}
	inProgress := func(title string) bool {
		tasks, _ := s.Tasks(filestore.TaskFilter{Status: filestore.StatusInProgress})
		for _, t := range tasks {
			if t.Title == title {
				return true
			}
		}
		return false
	}
	liveTask := func() bool {
		live, _ := s.LiveSessions("worker-gen")
		for _, se := range live {
			if se.Purpose == filestore.PurposeTask {
				return true
			}
		}
		return false
	}
	if !waitFor(func() bool { return inProgress("Compute the result") }) {
		return "the calc sub-task never started"
	}
	if _, err := s.SendMessage(owner, filestore.SendRequest{To: "manager", Content: "How is it going?"}); err != nil {
		return "chat: " + err.Error()
	}
	say("owner asks the manager in chat: How is it going?")
	// The worker's session on it is live: the pause then finds it at work, however slowly
	// the machine started it.
	if !waitFor(func() bool { return inProgress("Write the report") && liveTask() }) {
		return "the report sub-task never started"
	}
	time.Sleep(500 * time.Millisecond) // into the worker's 2 s of writing
	if _, err := s.SetProjectStatus(owner, filestore.ProjectPaused); err != nil {
		return "pause: " + err.Error()
	}
	say("owner pauses the project: running agents are interrupted, nothing new starts")
	if !waitFor(func() bool { return !liveTask() }) {
		return "the worker did not stop on pause"
	}
	say("owner sees worker-gen stopped; resumes the project a second later")
	time.Sleep(time.Second)
	if _, err := s.SetProjectStatus(owner, filestore.ProjectActive); err != nil {
		return "resume: " + err.Error()
	}
	return ""
}

// demoCheck is the demo's check: the seed, once written, is a number.
const demoCheck = "! test -e seed.txt || grep -qx '[0-9][0-9]*' seed.txt"

// demoRepo makes dir a Git repository with a first commit, where git is installed and
// dir is in no repository yet, so that the demo's tasks land their code; repo reports
// whether dir is in a repository with a commit now.
func demoRepo(dir string) (repo bool, err error) {
	if _, err := exec.LookPath("git"); err != nil {
		return false, nil
	}
	if clone.IsRepo(dir) {
		return exec.Command("git", "-C", dir, "rev-parse", "-q", "--verify", "HEAD").Run() == nil, nil
	}
	if err := os.WriteFile(filepath.Join(dir, "NOTES.md"), []byte(demoNotes), 0o644); err != nil {
		return false, err
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"config", "user.name", "aipm demo"},
		{"config", "user.email", "demo@aipm.invalid"},
		{"add", "NOTES.md"},
		{"commit", "-q", "-m", "The demo's first commit"},
	} {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return false, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return true, nil
}

// inspectHint is the demo's last word: commands to look at what it did, which work as
// printed only if aipm is on PATH; if it is not (the demo ran from `go run` or a build
// elsewhere), it first says how to put it there.
func inspectHint(root, task string, onPath bool) string {
	out := ""
	if !onPath {
		out = "aipm is not on your PATH, so the commands below need it first: from the aipm checkout run\n" +
			"`go install ./cmd/aipm` (it installs into $(go env GOPATH)/bin: put that directory on PATH),\n" +
			"or `make build` and use ./bin/aipm in place of aipm.\n"
	}
	return out + fmt.Sprintf("Inspect it: cd %s && aipm status && aipm task show %s && aipm chat log worker-calc\n", root, task)
}

// demoSummary prints what the run produced: the task tree, the files, the messages and
// conversations, and the agent processes.
func demoSummary(a *app, s *filestore.Store, topID string, took time.Duration) {
	a.printf("Summary (%.1fs)\n", took.Seconds())
	sub, _ := s.Subtree(topID)
	kids := map[string][]*filestore.Task{}
	for _, t := range sub {
		kids[t.ParentID] = append(kids[t.ParentID], t)
	}
	// Depth first, each task followed by its own sub-tasks.
	var tree []*filestore.Task
	depth := map[string]int{}
	var walk func(t *filestore.Task, d int)
	walk = func(t *filestore.Task, d int) {
		tree, depth[t.ID] = append(tree, t), d
		for _, k := range kids[t.ID] {
			walk(k, d+1)
		}
	}
	if top, err := s.Task(topID); err == nil {
		walk(top, 0)
	}
	a.printf("  Tasks:\n")
	for _, t := range tree {
		indent := "    " + strings.Repeat("  ", depth[t.ID])
		dur := ""
		if t.CompletedAt != nil {
			dur = fmt.Sprintf(", %.1fs", t.CompletedAt.Sub(t.CreatedAt).Seconds())
		}
		a.printf("%s%s %-26q %-19s %s%s\n", indent, t.ID, t.Title, statusLabel(t), t.AssigneeID, dur)
	}
	if log, err := exec.Command("git", "-C", s.Root(), "log", "--format=%h %an: %s", "HEAD").Output(); err == nil {
		a.printf("  Landed on %s:\n", checkedOutBranch(s.Root()))
		for _, l := range strings.Split(strings.TrimSpace(string(log)), "\n") {
			a.printf("    %s\n", l)
		}
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(s.Root(), name))
		if err != nil {
			return "(missing)"
		}
		return strings.TrimSpace(string(b))
	}
	seed, result := read("seed.txt"), read("result.txt")
	check := "≠ 2 × seed"
	if n, err := strconv.Atoi(seed); err == nil {
		if m, err := strconv.Atoi(result); err == nil && m == 2*n {
			check = "= 2 × seed ✔"
		}
	}
	a.printf("  Files: seed.txt = %s, result.txt = %s (%s), report.md = %q\n", seed, result, check, read("report.md"))

	agents, _ := s.Agents()
	msgs := 0
	for _, ag := range agents {
		page, err := s.RecentMessages(ag.ID, 1000)
		if err != nil {
			continue
		}
		for _, m := range page {
			if m.ReceiverID == "" && m.SenderID != ag.ID {
				msgs++ // the receiver's copy: each message once
			}
		}
	}
	convs, _ := s.Conversations(filestore.ConversationFilter{})
	a.printf("  Messages: %d; conversations: %d\n", msgs, len(convs))
	for _, cv := range convs {
		a.printf("    %s %s ↔ %s, %s (%s), %d messages, task %s\n", cv.ID, cv.InitiatorID, cv.ParticipantID, cv.State, cv.EndReason, cv.Turns, cv.TaskID)
	}
	dls, _ := s.Delegations(filestore.DelegationFilter{})
	for _, d := range dls {
		a.printf("  Delegation %s: %s → %s %q: %s, result %q\n", d.ID, d.AgentID, d.TargetAgentID, d.Purpose, d.Status, coordinator.Clip(d.Result, 60))
	}
	spawns, _ := s.Spawns()
	per := map[string][]string{}
	for _, sp := range spawns {
		code := "?"
		if sp.ExitCode != nil {
			code = strconv.Itoa(*sp.ExitCode)
		}
		dur := ""
		if sp.EndedAt != nil {
			dur = fmt.Sprintf(" %.1fs", sp.EndedAt.Sub(sp.StartedAt).Seconds())
		}
		per[sp.AgentID] = append(per[sp.AgentID], fmt.Sprintf("%s(exit %s%s)", sp.Purpose, code, dur))
	}
	names := make([]string, 0, len(per))
	for n := range per {
		names = append(names, n)
	}
	sort.Strings(names)
	a.printf("  Agent processes started by aipm run: %d\n", len(spawns))
	for _, n := range names {
		a.printf("    %-12s %s\n", n, strings.Join(per[n], ", "))
	}
}
