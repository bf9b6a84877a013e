package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aipm/aipm/filestore"
)

// scaleSize is the shape of a generated store (see buildScaleStore).
type scaleSize struct {
	Name string
	// Background is the number of tasks besides the fixtures: trees of
	// finished work (most done or cancelled, some deep) and a few open ones.
	Background int
	// BigSubtasks is the number of sub-tasks of the big fixture task (0: none).
	BigSubtasks int
	// Messages is the number of chat messages (each written to both mailboxes);
	// about three quarters of them belong to Conversations ended AI↔AI
	// conversations, the rest are between the owner and the agents.
	Messages      int
	Conversations int
	// Events is the least number of history lines: the tasks' and
	// conversations' own events, topped up with session starts and ends.
	Events int
}

// Agents of the generated store: the owner (human), 3 managers under it and
// 9 workers under each manager.
const (
	scaleManagers   = 3
	scaleWorkersPer = 9
)

func scaleManager(i int) string { return fmt.Sprintf("m%d", i) } // 1-based
func scaleWorker(i int) string  { return fmt.Sprintf("w%d", i) } // 1-based
func scalePasskey(id string) string {
	return id + "-passkey"
}

// Roles of the fixture agents.
var (
	scaleCPUWorkers  = []string{"w10", "w11", "w12", "w13", "w14", "w15", "w16", "w17", "w18", "w19"}
	scaleChatAgent   = "m3"
	scaleWakeSender  = "w20"
	scaleWakeReciver = "w21"
)

// scaleStore is a generated store and the ids the benchmark needs.
type scaleStore struct {
	dir  string
	size scaleSize
	// Counts of what was generated (fixtures included).
	tasks, messages, conversations, events int
	// w1Task: w1's in_progress top-level task with 20 sub-tasks assigned to w1.
	w1Task string
	// m1Task: m1's in_progress task with 20 sub-tasks dispatched to w2..w9.
	m1Task string
	// bigTask: m2's in_progress task with BigSubtasks sub-tasks ("" if none).
	bigTask string
	// cpuTasks: the in_progress top-level task of each scaleCPUWorkers agent.
	cpuTasks map[string]string
	genTime  time.Duration
}

// scaleCLI runs the test binary as `aipm args...` in dir.
func scaleCLI(tb testing.TB, exe, dir string, args ...string) string {
	tb.Helper()
	cmd := exec.Command(exe, args...)
	cmd.Args[0] = "aipm"
	cmd.Dir = dir
	cmd.Env = wakeEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("aipm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// buildScaleStore makes a project in dir: `aipm init` and the 30 agents
// through the real CLI (known passkeys), then tasks, conversations,
// mailboxes, read cursors and history written directly in the on-disk
// format of filestore/doc.go (what aipm itself would have written over
// months), then `aipm chat open` for the agents that need chat work.
//
// Fixtures, identical at every size: w1's task (20 sub-tasks of its own,
// 8 done, 1 in progress, 11 todo), m1's task (20 sub-tasks for w2..w9, 8 in
// progress, 12 todo), one in_progress task with 5 sub-tasks for each of
// w10..w19, and, if BigSubtasks > 0, m2's task with that many sub-tasks.
func buildScaleStore(tb testing.TB, exe, dir string, sz scaleSize) *scaleStore {
	tb.Helper()
	t0 := time.Now()
	scaleCLI(tb, exe, dir, "init", "--name", "scalebench", "--owner", "owner")
	agents := []string{}
	for m := 1; m <= scaleManagers; m++ {
		id := scaleManager(m)
		scaleCLI(tb, exe, dir, "agent", "add", id, "--hierarchy", "manager", "--parent", "owner", "--passkey", scalePasskey(id))
		agents = append(agents, id)
	}
	for w := 1; w <= scaleManagers*scaleWorkersPer; w++ {
		id := scaleWorker(w)
		scaleCLI(tb, exe, dir, "agent", "add", id, "--parent", scaleManager((w-1)/scaleWorkersPer+1), "--passkey", scalePasskey(id))
		agents = append(agents, id)
	}
	st, err := filestore.Open(dir, filestore.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	p, err := st.Project()
	if err != nil {
		tb.Fatal(err)
	}
	g := &scaleGen{rng: rand.New(rand.NewPCG(1, 2)), root: filepath.Join(dir, ".ai-pm"), projectID: p.ID, agents: agents}
	g.now = time.Now().UTC().Truncate(time.Microsecond)
	out := &scaleStore{dir: dir, size: sz, cpuTasks: map[string]string{}}

	// Background first (the project's past), then the fixtures (the present).
	g.background(sz.Background)
	recent := g.now.Add(-48 * time.Hour)
	w1 := g.task(nil, "w1: payment retries", "owner", "w1", filestore.StatusInProgress, recent, 0)
	for i := range 20 {
		status := filestore.StatusTodo
		switch {
		case i < 8:
			status = filestore.StatusDone
		case i == 8:
			status = filestore.StatusInProgress
		}
		g.task(w1, fmt.Sprintf("w1 step %d", i+1), "w1", "w1", status, recent.Add(time.Duration(i+1)*time.Minute), 1)
	}
	out.w1Task = w1.ID
	m1 := g.task(nil, "m1: search rewrite", "owner", "m1", filestore.StatusInProgress, recent.Add(time.Hour), 0)
	for i := range 20 {
		status := filestore.StatusTodo
		if i < 8 {
			status = filestore.StatusInProgress
		}
		g.task(m1, fmt.Sprintf("m1 part %d", i+1), "m1", scaleWorker(2+i%8), status, recent.Add(time.Hour+time.Duration(i+1)*time.Minute), 1)
	}
	out.m1Task = m1.ID
	for k, w := range scaleCPUWorkers {
		at := recent.Add(2*time.Hour + time.Duration(k)*time.Minute)
		t := g.task(nil, w+": maintenance", "owner", w, filestore.StatusInProgress, at, 0)
		for i := range 5 {
			status := filestore.StatusTodo
			if i < 2 {
				status = filestore.StatusDone
			}
			g.task(t, fmt.Sprintf("%s step %d", w, i+1), w, w, status, at.Add(time.Duration(i+1)*time.Second), 1)
		}
		out.cpuTasks[w] = t.ID
	}
	if sz.BigSubtasks > 0 {
		at := recent.Add(3 * time.Hour)
		big := g.task(nil, "m2: data migration", "owner", "m2", filestore.StatusInProgress, at, 0)
		for i := range sz.BigSubtasks {
			status := filestore.StatusDone
			if i >= sz.BigSubtasks*95/100 {
				status = filestore.StatusTodo
			}
			g.task(big, fmt.Sprintf("migrate table %d of the legacy schema", i+1), "m2", scaleWorker(20+i%8), status, at.Add(time.Duration(i+1)*time.Second), 1)
		}
		out.bigTask = big.ID
	}
	g.chat(sz.Messages, sz.Conversations)
	g.padEvents(sz.Events)
	g.write(tb)
	out.tasks, out.messages, out.conversations, out.events = len(g.tasks), g.messages, len(g.convs), len(g.events)

	for _, a := range append([]string{scaleChatAgent, scaleWakeSender, scaleWakeReciver}, scaleCPUWorkers...) {
		scaleCLI(tb, exe, dir, "chat", "open", a)
	}
	out.genTime = time.Since(t0)
	return out
}

// scaleMeta is what cachedScaleStore keeps beside a generated store.
type scaleMeta struct {
	Tasks, Messages, Conversations, Events int
	W1Task, M1Task, BigTask                string
	CPUTasks                               map[string]string
	GenTime                                time.Duration
}

// cachedScaleStore returns a store of size sz in a directory of its own. With
// AIPM_BENCH_STORE_CACHE=DIR the store is generated once into DIR (a store of
// 100,000 tasks and a million messages takes a while) and copied from there on
// each run; without it, it is generated each time.
func cachedScaleStore(b *testing.B, exe string, sz scaleSize) *scaleStore {
	cache := os.Getenv("AIPM_BENCH_STORE_CACHE")
	if cache == "" {
		return buildScaleStore(b, exe, b.TempDir(), sz)
	}
	src := filepath.Join(cache, fmt.Sprintf("%s-%d-%d-%d-%d-%d", sz.Name, sz.Background, sz.BigSubtasks, sz.Messages, sz.Conversations, sz.Events))
	metaPath := src + ".json"
	var m scaleMeta
	if data, err := os.ReadFile(metaPath); err != nil || json.Unmarshal(data, &m) != nil {
		os.RemoveAll(src)
		if err := os.MkdirAll(src, 0o755); err != nil {
			b.Fatal(err)
		}
		st := buildScaleStore(b, exe, src, sz)
		// What this machine trusts for the store (its passkeys' credentials, its key) lives
		// outside it, under a directory named after its path: kept beside it.
		if err := copyDir(scaleMachineDir(b, src), src+".machine"); err != nil {
			b.Fatal(err)
		}
		m = scaleMeta{Tasks: st.tasks, Messages: st.messages, Conversations: st.conversations, Events: st.events,
			W1Task: st.w1Task, M1Task: st.m1Task, BigTask: st.bigTask, CPUTasks: st.cpuTasks, GenTime: st.genTime}
		data, _ := json.Marshal(m)
		if err := os.WriteFile(metaPath, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	dst := filepath.Join(b.TempDir(), "store")
	t0 := time.Now()
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		b.Fatalf("copy the cached store: %v\n%s", err, out)
	}
	if err := copyDir(src+".machine", scaleMachineDir(b, dst)); err != nil {
		b.Fatalf("copy what the machine trusts for the cached store (generate it again: remove %s): %v", metaPath, err)
	}
	scaleProgress("%s store: copied from %s in %v", sz.Name, src, time.Since(t0).Round(time.Millisecond))
	return &scaleStore{dir: dst, size: sz, tasks: m.Tasks, messages: m.Messages, conversations: m.Conversations, events: m.Events,
		w1Task: m.W1Task, m1Task: m.M1Task, bigTask: m.BigTask, cpuTasks: m.CPUTasks, genTime: m.GenTime}
}

// scaleMachineDir is the directory of what this machine trusts for the store in dir.
func scaleMachineDir(b *testing.B, dir string) string {
	st, err := filestore.Open(dir, filestore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	m, err := st.MachineDir()
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// copyDir copies the files of src into dst (made if needed), but for the file that
// names the repository's path.
func copyDir(src, dst string) error {
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return err
	}
	for _, e := range ents {
		if e.Name() == "repo" {
			continue
		}
		if out, err := exec.Command("cp", "-a", filepath.Join(src, e.Name()), dst).CombinedOutput(); err != nil {
			return fmt.Errorf("cp: %v %s", err, out)
		}
	}
	return nil
}

// scaleGen accumulates the generated entities, then writes them.
type scaleGen struct {
	rng       *rand.Rand
	root      string // .ai-pm
	projectID string
	agents    []string // AI agents: managers then workers
	now       time.Time

	tasks    []*filestore.Task
	convs    []*filestore.Conversation
	events   []filestore.Event
	mail     map[string]*bytes.Buffer // agent → chat.jsonl
	messages int
}

// id is a generated id of filestore's format: prefix, 10 base32 digits of
// the millisecond time, 16 random ones.
func (g *scaleGen) id(prefix string, at time.Time) string {
	const crockford = "0123456789abcdefghjkmnpqrstvwxyz"
	var b strings.Builder
	b.WriteString(prefix)
	b.WriteByte('_')
	ms := at.UnixMilli()
	for i := 9; i >= 0; i-- {
		b.WriteByte(crockford[(ms>>(uint(i)*5))&31])
	}
	for range 16 {
		b.WriteByte(crockford[g.rng.IntN(32)])
	}
	return b.String()
}

func (g *scaleGen) event(at time.Time, actor, via, entity, id, change, from, to, reason string) {
	g.events = append(g.events, filestore.Event{At: at, Actor: actor, Via: via, Entity: entity, ID: id, Change: change, From: from, To: to, Reason: reason})
}

// task adds a task created at `at` as todo, moved along the status table
// to its final status, with its history events. depth places the end of a
// finished sub-task before its parent's (parents finish last).
func (g *scaleGen) task(parent *filestore.Task, title, creator, assignee, status string, at time.Time, depth int) *filestore.Task {
	via := filestore.ViaTool
	if creator == "owner" {
		via = filestore.ViaCLI
	}
	t := &filestore.Task{ID: g.id(filestore.PrefixTask, at), ProjectID: g.projectID, Title: title,
		Description: "Generated for the scale benchmark: " + title + ".", Status: filestore.StatusTodo,
		Priority: filestore.Priorities[g.rng.IntN(len(filestore.Priorities))], AssigneeID: assignee, CreatedBy: creator,
		Dependencies: []string{}, StatusChangedBy: creator, StatusChangedAt: &at, Approval: filestore.ApprovalApproved,
		CreatedAt: at, UpdatedAt: at, Version: 1}
	if parent != nil {
		t.ParentID = parent.ID
	}
	g.event(at, creator, via, "task", t.ID, "created", "", filestore.StatusTodo, "")
	move := func(to, actor string, when time.Time) {
		g.event(when, actor, filestore.ViaTool, "task", t.ID, "status", t.Status, to, "")
		t.Status, t.StatusChangedBy, t.UpdatedAt = to, actor, when
		t.StatusChangedAt = &when
		t.Version++
	}
	started := at.Add(10 * time.Minute)
	// Finished work ends a day after it began, parents after their children.
	end := at.Add(24*time.Hour - time.Duration(depth)*time.Hour)
	worker := assignee
	if worker == "" {
		worker = creator
	}
	switch status {
	case filestore.StatusInProgress:
		move(filestore.StatusInProgress, worker, started)
	case filestore.StatusDone:
		move(filestore.StatusInProgress, worker, started)
		move(filestore.StatusDone, worker, end)
		t.CompletedAt = &end
	case filestore.StatusCancelled:
		move(filestore.StatusCancelled, creator, end)
	case filestore.StatusBacklog:
		move(filestore.StatusBacklog, creator, started)
	case filestore.StatusBlocked:
		move(filestore.StatusBlocked, worker, started)
		t.BlockedReason = "waiting for a decision"
	}
	g.tasks = append(g.tasks, t)
	return t
}

// background adds n tasks of past work: trees (epics) of 1 to ~150 tasks,
// created over the last 180 days. Most are finished: a done tree has done
// or cancelled nodes; a cancelled node's sub-tree is cancelled or done. One
// tree in 20 is open (todo, backlog or blocked at the top; nothing in
// progress, so no agent gets task work from the past).
func (g *scaleGen) background(n int) {
	start := g.now.Add(-180 * 24 * time.Hour)
	made := 0
	epic := 0
	for made < n {
		size := 1 + g.rng.IntN(8)
		deep := false
		switch r := g.rng.IntN(100); {
		case r >= 95:
			size, deep = 40+g.rng.IntN(110), true
		case r >= 70:
			size = 9 + g.rng.IntN(32)
		}
		size = min(size, n-made)
		// Epics are spread evenly over the period, in creation order.
		base := start.Add(time.Duration(float64(made) / float64(max(n, 1)) * float64(178*24*time.Hour)))
		open := g.rng.IntN(20) == 0
		m := 1 + g.rng.IntN(scaleManagers)
		manager := scaleManager(m)
		team := func() string { return scaleWorker((m-1)*scaleWorkersPer + 1 + g.rng.IntN(scaleWorkersPer)) }
		rootStatus := filestore.StatusDone
		switch {
		case open:
			rootStatus = []string{filestore.StatusTodo, filestore.StatusBacklog, filestore.StatusBlocked}[g.rng.IntN(3)]
		case g.rng.IntN(100) < 15:
			rootStatus = filestore.StatusCancelled
		}
		nodes := []*filestore.Task{g.task(nil, fmt.Sprintf("epic %d: area %d", epic, g.rng.IntN(50)), "owner", manager, rootStatus, base, 0)}
		depth := map[string]int{nodes[0].ID: 0}
		for i := 1; i < size; i++ {
			parent := nodes[g.rng.IntN(len(nodes))]
			if deep && g.rng.IntN(2) == 0 {
				parent = nodes[len(nodes)-1]
			}
			if depth[parent.ID] >= 8 {
				parent = nodes[0]
			}
			var status string
			switch ps := parent.Status; {
			case ps == filestore.StatusDone:
				status = pick(g.rng, 90, filestore.StatusDone, filestore.StatusCancelled)
			case ps == filestore.StatusCancelled:
				status = pick(g.rng, 80, filestore.StatusCancelled, filestore.StatusDone)
			default: // open
				status = []string{filestore.StatusDone, filestore.StatusTodo, filestore.StatusBacklog}[g.rng.IntN(3)]
			}
			d := depth[parent.ID] + 1
			t := g.task(parent, fmt.Sprintf("epic %d task %d", epic, i), manager, team(), status, base.Add(time.Duration(i)*time.Minute), d)
			depth[t.ID] = d
			nodes = append(nodes, t)
		}
		made += size
		epic++
	}
}

// pick returns a with probability pct percent, else b.
func pick(rng *rand.Rand, pct int, a, b string) string {
	if rng.IntN(100) < pct {
		return a
	}
	return b
}

// chat adds n messages: about three quarters in convs ended conversations
// between AI agents (a manager and one of its workers, or two workers of a
// team), the rest between the owner and an agent, over the last 90 days in
// send order.
func (g *scaleGen) chat(n, convs int) {
	g.mail = map[string]*bytes.Buffer{}
	// Turns per conversation: an even share of three quarters of n, within
	// 2..40, varied in pairs (+d, −d) so that the total stays exact.
	turns := make([]int, convs)
	ai := 0
	if convs > 0 {
		share := n * 3 / 4
		for i := range turns {
			turns[i] = min(max(share/convs, filestore.MinMaxTurns), filestore.MaxMaxTurns)
			if i < share%convs && turns[i] < filestore.MaxMaxTurns {
				turns[i]++
			}
		}
		for i := 0; i+1 < convs; i += 2 {
			d := g.rng.IntN(9)
			d = min(d, filestore.MaxMaxTurns-turns[i], turns[i+1]-filestore.MinMaxTurns)
			turns[i] += d
			turns[i+1] -= d
		}
		for _, t := range turns {
			ai += t
		}
	}
	human := max(n-ai, 0)
	start := g.now.Add(-90 * 24 * time.Hour)
	slots := max(convs, 1)
	step := 89 * 24 * time.Hour / time.Duration(slots)
	for i := range slots {
		at := start.Add(time.Duration(i) * step)
		// The owner's messages of this slot come first.
		hn := human / slots
		if i < human%slots {
			hn++
		}
		for j := range hn {
			a := g.agents[g.rng.IntN(len(g.agents))]
			from, to := "owner", a
			if j%2 == 1 {
				from, to = a, "owner"
			}
			g.message(from, to, "", at.Add(time.Duration(j)*time.Second))
		}
		if i >= convs {
			continue
		}
		m := 1 + g.rng.IntN(scaleManagers)
		x := scaleWorker((m-1)*scaleWorkersPer + 1 + g.rng.IntN(scaleWorkersPer))
		y := scaleManager(m)
		if g.rng.IntN(5) < 2 {
			y = scaleWorker((m-1)*scaleWorkersPer + 1 + g.rng.IntN(scaleWorkersPer))
			if y == x {
				y = scaleManager(m)
			}
		}
		if g.rng.IntN(2) == 0 {
			x, y = y, x
		}
		g.conversation(x, y, turns[i], at.Add(time.Duration(hn+1)*time.Second))
	}
}

// conversation adds one ended conversation of turns messages, started by
// initiator, and its history.
func (g *scaleGen) conversation(initiator, participant string, turns int, at time.Time) {
	c := &filestore.Conversation{ID: g.id(filestore.PrefixConversation, at), ProjectID: g.projectID,
		InitiatorID: initiator, ParticipantID: participant, Purpose: "coordinate work", MaxTurns: filestore.MaxMaxTurns,
		CreatedAt: at}
	activated := at.Add(5 * time.Second)
	c.ActivatedAt = &activated
	g.event(at, initiator, filestore.ViaTool, "conversation", c.ID, "created", "", filestore.ConvPending, c.Purpose)
	g.event(activated, participant, filestore.ViaTool, "conversation", c.ID, "state", filestore.ConvPending, filestore.ConvActive, "")
	last := activated
	for k := range turns {
		from, to := initiator, participant
		if k%2 == 1 {
			from, to = participant, initiator
		}
		last = activated.Add(time.Duration(k+1) * 20 * time.Second)
		g.message(from, to, c.ID, last)
	}
	c.Turns = turns
	c.LastMessageAt = &last
	ended := last.Add(10 * time.Second)
	c.EndedAt, c.EndedBy, c.EndReason = &ended, initiator, filestore.EndInitiator
	reason := filestore.EndInitiator
	if turns == c.MaxTurns {
		// The message that reached max_turns ended it: its sender's.
		c.EndedBy, c.EndReason, reason = initiator, filestore.EndMaxTurns, filestore.EndMaxTurns
		if turns%2 == 0 {
			c.EndedBy = participant
		}
	}
	g.event(ended, c.EndedBy, filestore.ViaTool, "conversation", c.ID, "state", filestore.ConvActive, filestore.ConvTerminating, reason)
	told := ended.Add(30 * time.Second)
	g.event(told, c.Partner(c.EndedBy), filestore.ViaTool, "conversation", c.ID, "state", filestore.ConvTerminating, filestore.ConvEnded, "both sides told")
	c.State = filestore.ConvEnded
	c.Notified = []string{initiator, participant}
	slices.Sort(c.Notified)
	c.UpdatedAt = told
	c.Version = 3 + turns + 2
	g.convs = append(g.convs, c)
}

// message writes one message to both mailboxes: the sender's copy with
// receiverId, the receiver's without (doc.go, Chat).
func (g *scaleGen) message(from, to, conv string, at time.Time) {
	m := filestore.Message{ID: g.id(filestore.PrefixMessage, at), SenderID: from, ReceiverID: to, CreatedAt: at, ConversationID: conv,
		Content: fmt.Sprintf("Status of step %d: the change is in review; tests pass locally, one flaky case left to look at (%s to %s).", g.messages, from, to)}
	if g.rng.IntN(4) == 0 && len(g.tasks) > 0 {
		m.RelatedTaskID = g.tasks[g.rng.IntN(len(g.tasks))].ID
	}
	g.line(from, m)
	m.ReceiverID = ""
	g.line(to, m)
	g.messages++
}

func (g *scaleGen) line(agent string, v any) {
	buf := g.mail[agent]
	if buf == nil {
		buf = &bytes.Buffer{}
		g.mail[agent] = buf
	}
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	buf.Write(data)
	buf.WriteByte('\n')
}

// padEvents tops the history up to n lines with session starts and ends of
// the AI agents, spread over the last 180 days.
func (g *scaleGen) padEvents(n int) {
	start := g.now.Add(-180 * 24 * time.Hour)
	span := 178 * 24 * time.Hour
	for len(g.events) < n {
		at := start.Add(time.Duration(g.rng.Int64N(int64(span))))
		a := g.agents[g.rng.IntN(len(g.agents))]
		id := g.id(filestore.PrefixSession, at)
		purpose := pick(g.rng, 60, filestore.PurposeTask, filestore.PurposeChat)
		g.event(at, a, filestore.ViaTool, "session", id, "started", "", purpose, "")
		g.event(at.Add(20*time.Minute), a, filestore.ViaTool, "session", id, "ended", purpose, "", "stdin_closed")
	}
}

// scaleJSON is filestore's encoding of an entity file: two-space indent, no
// HTML escaping, trailing newline.
func scaleJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// write puts everything on disk: entity files, mailboxes (appended after
// whatever the CLI wrote), read cursors at the end of every mailbox (all
// read: the past is not new mail), and the history after the CLI's events.
func (g *scaleGen) write(tb testing.TB) {
	tb.Helper()
	must := func(err error) {
		if err != nil {
			tb.Fatal(err)
		}
	}
	for _, d := range []string{"tasks", "conversations", "runtime/cursors"} {
		must(os.MkdirAll(filepath.Join(g.root, d), 0o755))
	}
	for _, t := range g.tasks {
		must(os.WriteFile(filepath.Join(g.root, "tasks", t.ID+".json"), scaleJSON(t), 0o644))
	}
	for _, c := range g.convs {
		must(os.WriteFile(filepath.Join(g.root, "conversations", c.ID+".json"), scaleJSON(c), 0o644))
	}
	for agent, buf := range g.mail {
		path := filepath.Join(g.root, "agents", agent, "chat.jsonl")
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		must(err)
		_, err = f.Write(buf.Bytes())
		must(err)
		fi, err := f.Stat()
		must(err)
		must(f.Close())
		cur := struct {
			Offset    int64     `json:"offset"`
			UpdatedAt time.Time `json:"updated_at"`
		}{fi.Size(), g.now}
		must(os.WriteFile(filepath.Join(g.root, "runtime", "cursors", agent+".json"), scaleJSON(cur), 0o644))
	}
	slices.SortStableFunc(g.events, func(a, b filestore.Event) int { return a.At.Compare(b.At) })
	f, err := os.OpenFile(filepath.Join(g.root, "events.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	must(err)
	w := bufio.NewWriterSize(f, 1<<20)
	for _, e := range g.events {
		data, err := json.Marshal(e)
		must(err)
		w.Write(data)
		w.WriteByte('\n')
	}
	must(w.Flush())
	must(f.Close())
}

// TestScaleStoreIsSound checks that the generator of BenchmarkScale writes a
// store aipm itself could have written: `aipm doctor` finds nothing wrong,
// entity files re-encode to the same bytes, every mailbox is read up to its
// end, each conversation's turns are the messages carrying its id in both
// mailboxes, and work detection finds exactly the fixtures' task work.
func TestScaleStoreIsSound(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sz := scaleSize{Name: "check", Background: 300, BigSubtasks: 40, Messages: 3000, Conversations: 60, Events: 3000}
	st := buildScaleStore(t, exe, dir, sz)
	// The agents name Claude Code (the default ai_type): a stand-in on PATH, with a key,
	// satisfies doctor's check of the agent commands, which is not what this test is about.
	stub := t.TempDir()
	if err := os.WriteFile(filepath.Join(stub, "claude"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", stub+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("ANTHROPIC_API_KEY", "stand-in")
	// A generated store, like a clone, comes with commands this machine never approved;
	// doctor names those, and they are not what this test is about either.
	scaleCLI(t, exe, dir, "trust")
	if out := scaleCLI(t, exe, dir, "doctor"); !strings.HasPrefix(out, "ok:") {
		t.Fatalf("aipm doctor on the generated store:\n%s", out)
	}
	want := 21 + 21 + len(scaleCPUWorkers)*6 + 1 + sz.BigSubtasks + sz.Background
	if st.tasks != want || st.messages != sz.Messages || st.conversations != sz.Conversations || st.events < sz.Events {
		t.Fatalf("generated %d tasks, %d messages, %d conversations, %d events; want %d, %d, %d, ≥ %d",
			st.tasks, st.messages, st.conversations, st.events, want, sz.Messages, sz.Conversations, sz.Events)
	}
	s, err := filestore.Open(dir, filestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, ".ai-pm")
	tasks, err := s.Tasks(filestore.TaskFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != st.tasks {
		t.Fatalf("the store lists %d tasks, generated %d", len(tasks), st.tasks)
	}
	for _, tk := range tasks[:50] {
		data, err := os.ReadFile(filepath.Join(root, "tasks", tk.ID+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if got := scaleJSON(tk); !bytes.Equal(got, data) {
			t.Fatalf("task %s does not re-encode to its file:\n%s\nvs\n%s", tk.ID, got, data)
		}
	}
	convs, err := s.Conversations(filestore.ConversationFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(convs) != sz.Conversations {
		t.Fatalf("the store lists %d conversations, generated %d", len(convs), sz.Conversations)
	}
	// Turns per conversation, counted in each participant's mailbox.
	turns := map[string]map[string]int{} // conversation → agent → lines
	for _, a := range append([]string{"owner"}, scaleAgentIDs()...) {
		if n, err := s.UnreadCount(a); err != nil || n != 0 {
			t.Fatalf("%s: %d unread messages (%v), want every generated message read", a, n, err)
		}
		data, err := os.ReadFile(filepath.Join(root, "agents", a, "chat.jsonl"))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for line := range bytes.Lines(data) {
			var m filestore.Message
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatalf("%s's mailbox: %v: %s", a, err, line)
			}
			if m.ConversationID != "" {
				if turns[m.ConversationID] == nil {
					turns[m.ConversationID] = map[string]int{}
				}
				turns[m.ConversationID][a]++
			}
		}
	}
	for _, c := range convs {
		data, err := os.ReadFile(filepath.Join(root, "conversations", c.ID+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if got := scaleJSON(c); !bytes.Equal(got, data) {
			t.Fatalf("conversation %s does not re-encode to its file:\n%s\nvs\n%s", c.ID, got, data)
		}
		if c.State != filestore.ConvEnded || turns[c.ID][c.InitiatorID] != c.Turns || turns[c.ID][c.ParticipantID] != c.Turns {
			t.Fatalf("conversation %s: %s with %d turns; mailboxes hold %v", c.ID, c.State, c.Turns, turns[c.ID])
		}
	}
	expect := map[string]string{"w1": st.w1Task, "m1": st.m1Task, "m2": st.bigTask, scaleChatAgent: "", scaleWakeSender: ""}
	for a, task := range st.cpuTasks {
		expect[a] = task
	}
	for a, task := range expect {
		w, err := s.DetectWork(a)
		if err != nil {
			t.Fatal(err)
		}
		if w.TaskID != task {
			t.Errorf("%s: task work %q, want %q", a, w.TaskID, task)
		}
	}
}

// scaleAgentIDs lists the AI agents of a generated store.
func scaleAgentIDs() []string {
	var out []string
	for m := 1; m <= scaleManagers; m++ {
		out = append(out, scaleManager(m))
	}
	for w := 1; w <= scaleManagers*scaleWorkersPer; w++ {
		out = append(out, scaleWorker(w))
	}
	return out
}
