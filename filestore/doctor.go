package filestore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/aipm/aipm/filestore/internal/engine"
)

// Problem is one finding of Check, printed as "path:line: problem".
type Problem struct {
	Path    string `json:"path"` // relative to the repository root
	Line    int    `json:"line"`
	Problem string `json:"problem"`
}

func (p Problem) String() string { return fmt.Sprintf("%s:%d: %s", p.Path, p.Line, p.Problem) }

// Check reads every file of the store and reports what is wrong: files that do not decode,
// values outside their enums, references to missing agents or tasks, dependency cycles,
// task states that break the rules (e.g. in_progress with unfinished dependencies, as a
// hand edit can leave), torn JSONL tails and undecodable lines. It changes nothing.
func (s *Store) Check() ([]Problem, error) {
	c := &checker{s: s, tasks: map[string]*Task{}, taskData: map[string][]byte{}, agents: map[string]*Agent{}, convs: map[string]*Conversation{}, convData: map[string][]byte{}}
	c.links()
	c.project()
	c.agentsDir()
	mailboxes := c.mailboxes() // the mailboxes' lines need no other entity
	c.tasksDir()
	c.taskRules()
	c.jsonl(s.path("events.jsonl"), func(data []byte) string {
		if _, _, ok := quickObject(data, eventKeys, "", ""); ok {
			return "" // what aipm writes, vouched for without decoding it
		}
		var e Event
		if err := json.Unmarshal(data, &e); err != nil {
			return "undecodable history event: " + err.Error()
		}
		return ""
	})
	c.conversationsDir()
	c.rules()
	c.leasesDir()
	c.delegationsDir()
	c.notifications()
	c.entityDir("executions", PrefixExecution, func() any { return &Execution{} })
	c.entityDir("runtime/sessions", PrefixSession, func() any { return &Session{} })
	c.entityDir("runtime/sessions/ended", PrefixSession, func() any { return &Session{} })
	c.entityDir("runtime/notifications", PrefixSession, func() any { return &notificationReads{} })
	c.readLogs()
	c.chatStates()
	c.startLines()() // the rest, which look up the entities read above
	mailboxes()
	sort.SliceStable(c.out, func(i, j int) bool {
		if c.out[i].Path != c.out[j].Path {
			return c.out[i].Path < c.out[j].Path
		}
		return c.out[i].Line < c.out[j].Line
	})
	return c.out, nil
}

type checker struct {
	s        *Store
	out      []Problem
	tasks    map[string]*Task
	taskData map[string][]byte
	agents   map[string]*Agent
	convs    map[string]*Conversation
	convData map[string][]byte
	// lineJobs are the JSONL files to check, each with its check of a line (jsonl).
	lineJobs []lineJob
}

func (c *checker) add(path string, line int, format string, args ...any) {
	if line < 1 {
		line = 1
	}
	c.out = append(c.out, Problem{Path: c.s.Rel(path), Line: line, Problem: fmt.Sprintf(format, args...)})
}

// links reports every symbolic link and special file under .ai-pm: the store never
// follows or opens them, so each is a problem to remove.
func (c *checker) links() {
	filepath.WalkDir(c.s.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Type().IsRegular() {
			return nil
		}
		c.add(path, 1, "%s: aipm never follows links or opens special files under %s; remove it", engine.KindOf(d.Type()), DirName)
		return nil
	})
}

// decode reads path into v, reporting a problem and returning nil data when it fails.
func (c *checker) decode(path string, v any) []byte { return c.decodeRead(path, nil, v) }

// decodeRead is decode of the file's bytes when data holds them (nil: read them).
func (c *checker) decodeRead(path string, data []byte, v any) []byte {
	if data == nil {
		var err error
		if data, err = engine.ReadFile(path, engine.MaxEntityFile); err != nil {
			c.add(path, 1, "cannot read: %v", err)
			return nil
		}
	}
	if HasConflictMarkers(data) {
		c.conflict(path, data)
		return nil
	}
	if err := c.s.decodeJSON(path, data, v); err != nil {
		if ce, ok := err.(*CorruptError); ok {
			c.add(path, ce.Line, "%s", ce.Problem)
		} else {
			c.add(path, 1, "%v", err)
		}
		return nil
	}
	return data
}

// keyLine returns the line of the first occurrence of "key": in data, for pointing at a
// field.
func keyLine(data []byte, key string) int {
	i := bytes.Index(data, []byte(`"`+key+`"`))
	if i < 0 {
		return 1
	}
	return bytes.Count(data[:i], []byte("\n")) + 1
}

func (c *checker) project() {
	path := c.s.path("project.json")
	var p Project
	data := c.decode(path, &p)
	if data == nil {
		return
	}
	if strings.TrimSpace(p.Name) == "" {
		c.add(path, keyLine(data, "name"), "project name is empty")
	}
	if !slices.Contains([]string{ProjectActive, ProjectPaused, ProjectArchived}, p.Status) {
		c.add(path, keyLine(data, "status"), "invalid project status %q (want active, paused or archived)", p.Status)
	}
	if l := p.Settings.Language; l != "" && l != "en" && l != "ja" {
		c.add(path, keyLine(data, "language"), "unsupported language %q (want en or ja)", l)
	}
}

func (c *checker) agentsDir() {
	dir := c.s.path("agents")
	entries, err := engine.ReadDir(dir)
	if err != nil {
		c.add(dir, 1, "cannot read agents directory: %v", err)
		return
	}
	datas := map[string][]byte{}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if !e.IsDir() {
			c.add(p, 1, "unexpected file (agents live in agents/<id>/agent.json)")
			continue
		}
		if err := ValidateAgentID(e.Name()); err != nil {
			c.add(p, 1, "%v", err)
			continue
		}
		path := filepath.Join(p, "agent.json")
		var a Agent
		data := c.decode(path, &a)
		if data == nil {
			continue
		}
		datas[a.ID] = data
		if a.ID != e.Name() {
			c.add(path, keyLine(data, "id"), "id %q does not match its directory %q", a.ID, e.Name())
		}
		if !slices.Contains([]string{AgentHuman, AgentAI}, a.Type) {
			c.add(path, keyLine(data, "type"), "invalid type %q (want human or ai)", a.Type)
		}
		if !slices.Contains([]string{HierarchyOwner, HierarchyManager, HierarchyWorker}, a.Hierarchy) {
			c.add(path, keyLine(data, "hierarchy"), "invalid hierarchy %q (want owner, manager or worker)", a.Hierarchy)
		}
		if a.Hierarchy == HierarchyOwner && c.s.checkedHierarchy(&a) != HierarchyOwner {
			c.add(path, keyLine(data, "hierarchy"), "claims to be the owner, but only the project's owner (owner_id in project.json, a human) is; it is treated as a %s: set its hierarchy to manager or worker", c.s.checkedHierarchy(&a))
		}
		if !slices.Contains([]string{AgentActive, AgentInactive, AgentSuspended}, a.Status) {
			c.add(path, keyLine(data, "status"), "invalid status %q (want active, inactive or suspended)", a.Status)
		}
		c.agents[e.Name()] = &a // its mailbox is checked by mailboxes
		c.jsonl(filepath.Join(p, "reads.jsonl"), func(line []byte) string {
			var m readMarks
			if err := json.Unmarshal(line, &m); err != nil {
				return "undecodable read marks: " + err.Error()
			}
			return ""
		})
	}
	for id, a := range c.agents {
		path := c.s.agentPath(id)
		if a.ParentID == "" {
			continue
		}
		if _, ok := c.agents[a.ParentID]; !ok {
			c.add(path, keyLine(datas[id], "parent_id"), "parent agent %q does not exist", a.ParentID)
			continue
		}
		seen := map[string]bool{id: true}
		for cur := a.ParentID; cur != ""; {
			if seen[cur] {
				c.add(path, keyLine(datas[id], "parent_id"), "parent chain loops back through %s", cur)
				break
			}
			seen[cur] = true
			p, ok := c.agents[cur]
			if !ok {
				break
			}
			cur = p.ParentID
		}
	}
}

func (c *checker) tasksDir() {
	files := c.filesIn("tasks", ".json", func(id string) error { return ValidateEntityID(PrefixTask, id) },
		"unexpected file (tasks are tasks/tsk_<id>.json)")
	// Read and decoded on every core, checked in name order.
	type read struct {
		t     Task
		data  []byte
		found []Problem
	}
	reads := make([]read, len(files))
	dir, _, derr := engine.StoreDir(c.s.path("tasks"), false) // opened and checked once (readIn)
	next := make(chan int, len(files))
	for i := range files {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				sub := &checker{s: c.s}
				var pre []byte
				if derr == nil && dir != nil {
					pre, _ = readIn(dir, filepath.Base(files[i].path))
				}
				reads[i].data = sub.decodeRead(files[i].path, pre, &reads[i].t)
				reads[i].found = sub.out
			}
		}()
	}
	wg.Wait()
	for i, f := range files {
		id, path := f.id, f.path
		c.out = append(c.out, reads[i].found...)
		t, data := reads[i].t, reads[i].data
		if data == nil {
			continue
		}
		t.normalize()
		c.tasks[id] = &t
		c.taskData[id] = data
		if t.ID != id {
			c.add(path, keyLine(data, "id"), "id %q does not match the file name", t.ID)
		}
		if strings.TrimSpace(t.Title) == "" {
			c.add(path, keyLine(data, "title"), "title is empty")
		}
		if p := statusProblem(t.Status); p != "" {
			c.add(path, keyLine(data, "status"), "%s", p)
		}
		if !slices.Contains(Priorities, t.Priority) {
			c.add(path, keyLine(data, "priority"), "invalid priority %q (want %s)", t.Priority, strings.Join(Priorities, ", "))
		}
		if !slices.Contains([]string{ApprovalApproved, ApprovalPending, ApprovalRejected}, t.Approval) {
			c.add(path, keyLine(data, "approval"), "invalid approval %q", t.Approval)
		}
	}
}

func (c *checker) taskRules() {
	ids := make([]string, 0, len(c.tasks))
	for id := range c.tasks {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		t, data, path := c.tasks[id], c.taskData[id], c.s.taskPath(id)
		if t.AssigneeID != "" {
			if _, ok := c.agents[t.AssigneeID]; !ok {
				c.add(path, keyLine(data, "assignee_id"), "assignee %q does not exist", t.AssigneeID)
			}
		}
		if t.ParentID != "" {
			if _, ok := c.tasks[t.ParentID]; !ok {
				c.add(path, keyLine(data, "parent_id"), "parent task %q does not exist", t.ParentID)
			}
		}
		for _, d := range t.Dependencies {
			dt, ok := c.tasks[d]
			switch {
			case d == id:
				c.add(path, keyLine(data, "dependencies"), "task depends on itself")
			case !ok:
				c.add(path, keyLine(data, "dependencies"), "dependency %q does not exist", d)
			case t.Status == StatusInProgress && dt.Status != StatusDone:
				c.add(path, keyLine(data, "status"), "in_progress while dependency %s is %s", d, dt.Status)
			}
		}
		if t.Status == StatusInProgress && t.AssigneeID == "" {
			c.add(path, keyLine(data, "status"), "in_progress without an assignee")
		}
	}
}

// jsonl checks every complete line of a JSONL file with fn (which returns a problem or "")
// and reports a torn last line.
// jsonl checks each line of the JSONL file path with fn (a problem, or ""). The check is
// queued: the files are checked at the end of Check, several at once (checkLines), when
// every entity fn may look up is known; fn must only read the checker's maps.
func (c *checker) jsonl(path string, fn func([]byte) string) {
	c.lineJobs = append(c.lineJobs, lineJob{path, fn})
}

type lineJob struct {
	path string
	fn   func([]byte) string
}

// startLines starts the line checks queued so far, on every core, and returns the wait
// for them, which adds their problems. The largest files go first; each file's problems
// keep their order. (The mailboxes are checked apart: mailboxes.)
func (c *checker) startLines() (wait func()) {
	done := make(chan []Problem, 1)
	jobs := c.lineJobs
	c.lineJobs = nil
	go func() { done <- checkLines(c.s, jobs) }()
	return func() { c.out = append(c.out, <-done...) }
}

// checkLines checks the lines of each file of jobs, on every core.
func checkLines(s *Store, jobs []lineJob) []Problem {
	size := make([]int64, len(jobs))
	for i, j := range jobs {
		if fi, err := engine.Lstat(j.path); err == nil {
			size[i] = fi.Size()
		}
	}
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return size[order[a]] > size[order[b]] })
	found := make([][]Problem, len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				sub := &checker{s: s}
				sub.lines(jobs[i].path, jobs[i].fn)
				found[i] = sub.out
			}
		}()
	}
	for _, i := range order {
		next <- i
	}
	close(next)
	wg.Wait()
	var out []Problem
	for _, p := range found {
		out = append(out, p...)
	}
	return out
}

// lines checks one JSONL file (see jsonl).
func (c *checker) lines(path string, fn func([]byte) string) {
	// Streamed: a history of hundreds of megabytes is checked line by line, never held in
	// memory; past maxReported problems in one file the rest are counted.
	n, end, problems := 0, int64(0), 0
	err := engine.ScanLinesReport(path, 0, func(l Line) error {
		n, end = l.N, l.Next
		p := markerProblem(l.Data)
		if p == "" {
			p = fn(l.Data)
		}
		if p != "" {
			if problems++; problems <= maxReported {
				c.add(path, n, "%s", p)
			}
		}
		return nil
	}, func(e *engine.LineTooLongError) {
		n, end = e.Line, e.Offset+e.Size+1
		if problems++; problems <= maxReported {
			c.add(path, n, "%d bytes, over the %d a line may have: every reader skips this line; delete it", e.Size, engine.MaxLine)
		}
	})
	if problems > maxReported {
		c.add(path, n, "%d more problem lines like those above", problems-maxReported)
	}
	if err != nil {
		if !os.IsNotExist(err) {
			c.add(path, n+1, "cannot read: %v", err)
		}
		return
	}
	if fi, err := engine.Lstat(path); err == nil && fi.Size() > end {
		c.add(path, n+1, "torn last line without newline (an interrupted write; the next append repairs it)")
	}
}

func (c *checker) entityDir(rel, prefix string, mk func() any) {
	for _, f := range c.filesIn(rel, ".json", func(id string) error { return ValidateEntityID(prefix, id) }, "") {
		c.decode(f.path, mk())
	}
}

func isIgnorable(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasSuffix(name, "~") || strings.HasSuffix(name, ".lock")
}

// dirFile is a file of a store directory named by an id: <id><suffix>.
type dirFile struct{ id, path string }

// filesIn lists, in name order, the files of the store directory rel named <id><suffix>
// whose id valid accepts; nothing when the directory does not exist, and a directory
// that cannot be read is reported. Other names are reported with unexpected, or, when it
// is "", only a name with the suffix and an invalid id is ("unexpected file name") and the
// rest is left alone. Editors' and locks' files (isIgnorable) are never reported.
func (c *checker) filesIn(rel, suffix string, valid func(string) error, unexpected string) []dirFile {
	dir := c.s.path(filepath.FromSlash(rel))
	entries, err := engine.ReadDir(dir)
	if err != nil {
		if !os.IsNotExist(err) {
			c.add(dir, 1, "cannot read %s directory: %v", rel, err)
		}
		return nil
	}
	var out []dirFile
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		id, ok := strings.CutSuffix(e.Name(), suffix)
		switch {
		case isIgnorable(e.Name()):
		case !e.IsDir() && ok && valid(id) == nil:
			out = append(out, dirFile{id, path})
		case unexpected != "":
			c.add(path, 1, "%s", unexpected)
		case !e.IsDir() && ok:
			c.add(path, 1, "unexpected file name")
		}
	}
	return out
}

// entityFiles lists the <prefix>_*.json files of a store directory, reporting any other
// file in it.
func (c *checker) entityFiles(rel, prefix, what string) []dirFile {
	return c.filesIn(rel, ".json", func(id string) error { return ValidateEntityID(prefix, id) },
		fmt.Sprintf("unexpected file (%s are %s/%s_<id>.json)", what, rel, prefix))
}

// agentRef reports a field naming an agent that does not exist.
func (c *checker) agentRef(path string, data []byte, key, id string) {
	if id == "" {
		c.add(path, keyLine(data, key), "%s is empty", key)
	} else if _, ok := c.agents[id]; !ok {
		c.add(path, keyLine(data, key), "%s %q does not exist", key, id)
	}
}

// conversationsDir checks conversations/: decodable, known state, two distinct existing
// agents, turn limits, notified agents from the conversation, an end for ended states,
// the task reference, and at most one pending or active conversation per pair.
func (c *checker) conversationsDir() {
	files := c.entityFiles("conversations", PrefixConversation, "conversations")
	// Read and decoded on every core, checked in name order.
	convs := make([]Conversation, len(files))
	datas := make([][]byte, len(files))
	found := make([][]Problem, len(files))
	onEvery(len(files), func(i int) {
		sub := &checker{s: c.s}
		datas[i] = sub.decode(files[i].path, &convs[i])
		found[i] = sub.out
	})
	for i, f := range files {
		id, path := f.id, f.path
		c.out = append(c.out, found[i]...)
		cv, data := &convs[i], datas[i]
		if data == nil {
			continue
		}
		c.convs[id] = cv
		if cv.ID != id {
			c.add(path, keyLine(data, "id"), "id %q does not match the file name", cv.ID)
		}
		if !slices.Contains(ConversationStates, cv.State) {
			c.add(path, keyLine(data, "state"), "invalid state %q (want %s)", cv.State, strings.Join(ConversationStates, ", "))
		}
		c.agentRef(path, data, "initiator_id", cv.InitiatorID)
		c.agentRef(path, data, "participant_id", cv.ParticipantID)
		if cv.InitiatorID != "" && cv.InitiatorID == cv.ParticipantID {
			c.add(path, keyLine(data, "participant_id"), "conversation of %s with itself", cv.InitiatorID)
		}
		if cv.MaxTurns < MinMaxTurns || cv.MaxTurns > MaxMaxTurns {
			c.add(path, keyLine(data, "max_turns"), "max_turns %d outside %d..%d", cv.MaxTurns, MinMaxTurns, MaxMaxTurns)
		}
		if cv.Turns < 0 {
			c.add(path, keyLine(data, "turns"), "negative turns %d", cv.Turns)
		}
		for _, n := range cv.Notified {
			if !cv.Includes(n) {
				c.add(path, keyLine(data, "notified"), "notified agent %q is not part of the conversation", n)
			}
		}
		if (cv.State == ConvTerminating || cv.State == ConvEnded || cv.State == ConvExpired) && (cv.EndedAt == nil || cv.EndReason == "") {
			c.add(path, keyLine(data, "state"), "%s without ended_at and end_reason", cv.State)
		}
		if cv.TaskID != "" {
			if _, ok := c.tasks[cv.TaskID]; !ok {
				c.add(path, keyLine(data, "task_id"), "task %q does not exist", cv.TaskID)
			}
		}
		c.convData[id] = data
	}
}

// rules reports the states that break a rule a merge can break (Breaches): each with the
// repair `aipm run` or `aipm sync` applies, or the fix a human must make.
func (c *checker) rules() {
	st := &ruleState{tasks: c.tasks, agents: c.agents, s: c.s}
	for _, cv := range c.convs {
		if cv.Live() {
			st.convs = append(st.convs, cv)
		}
	}
	sort.Slice(st.convs, func(i, j int) bool { return st.convs[i].ID < st.convs[j].ID })
	for _, b := range st.breaches() {
		path, data := c.s.taskPath(b.ID), c.taskData[b.ID]
		if b.Entity == "conversation" {
			path, data = c.s.conversationPath(b.ID), c.convData[b.ID]
		}
		if b.Repair != "" {
			c.add(path, keyLine(data, b.Key), "%s; `aipm doctor --repair` (or a running `aipm run`) repairs it: %s; or by hand: %s", b.Problem, b.Repair, b.Fix)
		} else {
			c.add(path, keyLine(data, b.Key), "%s; %s", b.Problem, b.Fix)
		}
	}
}

// leasesDir checks leases/<agent-id>.json: decodable, about an existing agent, naming a
// valid machine.
func (c *checker) leasesDir() {
	for _, f := range c.filesIn("leases", ".json", ValidateAgentID, "unexpected file (leases are leases/<agent-id>.json)") {
		id, path := f.id, f.path
		var l Lease
		data := c.decode(path, &l)
		if data == nil {
			continue
		}
		if l.AgentID != id {
			c.add(path, keyLine(data, "agent_id"), "agent_id %q does not match the file name", l.AgentID)
		}
		if _, ok := c.agents[id]; !ok {
			c.add(path, keyLine(data, "agent_id"), "lease of agent %q, which does not exist: delete the file", id)
		}
		if ValidateMachineID(l.MachineID) != nil {
			c.add(path, keyLine(data, "machine_id"), "invalid machine id %q: move the agent with `aipm agent move %s --to MACHINE`, or release it with `aipm agent release %s`", l.MachineID, id, id)
		}
	}
}

// delegationsDir checks delegations/: decodable, known status, existing agents, task and
// conversation.
func (c *checker) delegationsDir() {
	for _, f := range c.entityFiles("delegations", PrefixDelegation, "delegations") {
		id, path := f.id, f.path
		var d Delegation
		data := c.decode(path, &d)
		if data == nil {
			continue
		}
		if d.ID != id {
			c.add(path, keyLine(data, "id"), "id %q does not match the file name", d.ID)
		}
		if !slices.Contains(DelegationStatuses, d.Status) {
			c.add(path, keyLine(data, "status"), "invalid status %q (want %s)", d.Status, strings.Join(DelegationStatuses, ", "))
		}
		c.agentRef(path, data, "agent_id", d.AgentID)
		c.agentRef(path, data, "target_agent_id", d.TargetAgentID)
		if d.TaskID != "" {
			if _, ok := c.tasks[d.TaskID]; !ok {
				c.add(path, keyLine(data, "task_id"), "task %q does not exist", d.TaskID)
			}
		}
		if d.ConversationID != "" {
			if _, ok := c.convs[d.ConversationID]; !ok {
				c.add(path, keyLine(data, "conversation_id"), "conversation %q does not exist", d.ConversationID)
			}
		}
	}
}

// chatStates checks runtime/chat/<agent>.json: decodable and about an existing agent.
func (c *checker) chatStates() {
	for _, f := range c.filesIn("runtime/chat", ".json", ValidateAgentID, "") {
		id, path := f.id, f.path
		var st ChatState
		if data := c.decode(path, &st); data != nil {
			if _, ok := c.agents[id]; !ok {
				c.add(path, keyLine(data, "agent_id"), "agent %q does not exist", id)
			}
		}
	}
}

// notifications checks every agent's notifications.jsonl, line by line: decodable, an id
// of its own, addressed to the inbox's agent, known type, purpose and priority, an
// action, a message, a creation time, and references to existing tasks and
// conversations. Sessions are machine-local, so target_session_id is checked for form
// only.
func (c *checker) notifications() {
	ids := make([]string, 0, len(c.agents))
	for id := range c.agents {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, agentID := range ids {
		seen := map[string]bool{}
		c.jsonl(c.s.inboxPath(agentID), func(line []byte) string {
			var n Notification
			if err := json.Unmarshal(line, &n); err != nil {
				return "undecodable notification: " + err.Error()
			}
			var probs []string
			bad := func(format string, args ...any) { probs = append(probs, fmt.Sprintf(format, args...)) }
			if ValidateEntityID(PrefixNotification, n.ID) != nil {
				bad("invalid notification id %q", n.ID)
			} else if seen[n.ID] {
				bad("duplicate notification %s (a merge artifact; readers use the first)", n.ID)
			}
			seen[n.ID] = true
			if n.TargetAgentID != agentID {
				bad("target_agent_id %q in the inbox of %s", n.TargetAgentID, agentID)
			}
			if !slices.Contains(NotificationPurposes, n.TargetPurpose) {
				bad("invalid target_purpose %q (want %s)", n.TargetPurpose, strings.Join(NotificationPurposes, ", "))
			}
			if n.TargetSessionID != "" && ValidateEntityID(PrefixSession, n.TargetSessionID) != nil {
				bad("invalid target_session_id %q", n.TargetSessionID)
			}
			if !slices.Contains(NotificationTypes, n.Type) {
				bad("invalid type %q (want %s)", n.Type, strings.Join(NotificationTypes, ", "))
			}
			if !actionRe.MatchString(n.Action) {
				bad("invalid action %q", n.Action)
			}
			if !slices.Contains(NotificationPriorities, n.Priority) {
				bad("invalid priority %q (want %s)", n.Priority, strings.Join(NotificationPriorities, ", "))
			}
			if n.TaskID != "" {
				if _, ok := c.tasks[n.TaskID]; !ok {
					bad("task %q does not exist", n.TaskID)
				}
			}
			if n.ConversationID != "" {
				if _, ok := c.convs[n.ConversationID]; !ok {
					bad("conversation %q does not exist", n.ConversationID)
				}
			}
			if n.FromAgentID != "" && n.FromAgentID != SystemSender {
				if _, ok := c.agents[n.FromAgentID]; !ok {
					bad("from_agent_id %q does not exist", n.FromAgentID)
				}
			}
			if strings.TrimSpace(n.Message) == "" {
				bad("message is empty")
			}
			if n.CreatedAt.IsZero() {
				bad("created_at is missing")
			}
			return strings.Join(probs, "; ")
		})
	}
}

// readLogs checks the sessions' notification read logs, runtime/notifications/*.read.jsonl.
func (c *checker) readLogs() {
	for _, f := range c.filesIn("runtime/notifications", ".read.jsonl", func(id string) error { return ValidateEntityID(PrefixSession, id) }, "") {
		path := f.path
		c.jsonl(path, func(line []byte) string {
			var m readMarks
			if err := json.Unmarshal(line, &m); err != nil {
				return "undecodable read mark: " + err.Error()
			}
			for _, n := range m.IDs {
				if ValidateEntityID(PrefixNotification, n) != nil {
					return fmt.Sprintf("invalid notification id %q", n)
				}
			}
			return ""
		})
	}
}

// conflict explains a file Git left with conflict markers: which entity, which fields
// differ on the two sides and with what values, and how to settle it.
func (c *checker) conflict(path string, data []byte) {
	line := firstMarkerLine(data)
	rel := c.s.Rel(path)
	kind := EntityKind(rel)
	what := rel
	if kind != "" {
		what = kind + " " + strings.TrimSuffix(filepath.Base(path), ".json")
		if kind == KindAgent {
			what = kind + " " + filepath.Base(filepath.Dir(path))
		} else if kind == KindProject {
			what = "the project"
		}
	}
	ours, theirs, ok := SplitConflict(data)
	var fields []string
	var err error
	if ok {
		fields, err = ConflictFields(ours, theirs)
	}
	if !ok || err != nil || kind == "" {
		c.add(path, line, "unresolved merge conflict in %s: edit the file keeping one side of each conflict (`git show :2:%s` is ours, `:3:` theirs), then `git add` it", what, rel)
		return
	}
	var o, t Object
	json.Unmarshal(ours, &o)
	json.Unmarshal(theirs, &t)
	var parts []string
	for _, f := range fields {
		parts = append(parts, fmt.Sprintf("%s (ours %s, theirs %s)", f, clip(CompactJSON(o[f])), clip(CompactJSON(t[f]))))
	}
	next := fmt.Sprintf("then `git add %s` and finish the merge or rebase", rel)
	if fi, err := engine.Lstat(c.s.path(".git")); err == nil && fi.Mode().IsRegular() {
		// .ai-pm is a worktree of the state branch: a sync round merged it.
		next = "and the next `aipm sync` round (or a running `aipm run`) carries it to every clone (if a git merge or rebase is under way in .ai-pm, `git -C .ai-pm add` the file and finish that instead)"
	}
	c.add(path, line, "unresolved merge conflict in %s: both sides changed %s; keep one side with `aipm resolve %s --ours` or `--theirs` (or edit the file), %s",
		what, strings.Join(parts, ", "), rel, next)
}

// maxReported is how many problem lines of one JSONL file are reported; the rest are
// counted.
const maxReported = 100

// markerProblem is the problem of a JSONL line that is a merge conflict marker; "" for
// any other line.
func markerProblem(line []byte) string {
	if !isMarkerLine(line) {
		return ""
	}
	return fmt.Sprintf("merge conflict marker %q: this file is merged as a union of lines (.gitattributes *.jsonl merge=union), which Git did not apply; delete the marker lines, keep both sides' lines, then `git add` it", clip(string(line)))
}

func isMarkerLine(line []byte) bool {
	if len(line) == 0 || line[0] != '<' && line[0] != '>' && line[0] != '=' {
		return false // most lines: not converted to a string to be compared
	}
	l := string(line)
	return strings.HasPrefix(l, markerOurs) || strings.HasPrefix(l, markerTheirs) || strings.TrimRight(l, "\r") == markerSep ||
		l == strings.TrimSpace(markerOurs) || l == strings.TrimSpace(markerTheirs)
}
