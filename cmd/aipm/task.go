package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aipm/aipm/filestore"
)

func (a *app) taskAdd(args []string) error {
	fs := newFlags(a, "task add")
	var n filestore.NewTask
	var deps stringList
	fs.StringVar(&n.Description, "description", "", "what to do, in detail")
	fs.StringVar(&n.Priority, "priority", "medium", "low, medium, high or urgent")
	fs.StringVar(&n.Status, "status", "backlog", "backlog or todo")
	fs.StringVar(&n.AssigneeID, "assign", "", "the assignee's agent `ID`")
	fs.StringVar(&n.ParentID, "parent", "", "the parent `TASK` (makes this a sub-task)")
	fs.Var(&deps, "dep", "a `TASK` this one depends on (repeatable)")
	pos, err := fs.parse(args, 1, 1, `"TITLE" [--description D] [--assign AGENT] [--parent TASK] [--dep TASK]...`)
	if err != nil {
		return err
	}
	n.Title = pos[0]
	s, actor, err := a.openAs(fs.as)
	if err != nil {
		return err
	}
	s.OneShot()
	if n.Dependencies, err = taskIDs(s, deps); err != nil {
		return err
	}
	if n.ParentID, err = taskID(s, n.ParentID); err != nil {
		return err
	}
	if n.AssigneeID, err = agentID(s, n.AssigneeID); err != nil {
		return err
	}
	t, err := s.CreateTask(actor, n)
	if err != nil {
		return err
	}
	if fs.json {
		return a.printJSON(t)
	}
	if !isTerminal(a.term) {
		// For scripts: T=$(aipm task add "…") names the task whatever the project grows to.
		a.printf("%s\n", t.ID)
		return nil
	}
	sh, err := newShortener(s)
	if err != nil {
		return err
	}
	a.printf("created %s  %s  %s\n", sh.id(t.ID), t.Status, t.Title)
	return nil
}

// listPage is how many tasks `aipm task list` shows on a terminal when not asked for a
// number: a screenful of the most recently changed, as `gh issue list` shows.
const listPage = 30

func (a *app) taskList(args []string) error {
	fs := newFlags(a, "task list")
	var f filestore.TaskFilter
	var statuses stringList
	fs.Var(&statuses, "status", "only tasks with this `STATUS` (repeatable, or comma-separated: --status todo,in_progress)")
	fs.StringVar(&f.AssigneeID, "assignee", "", "only tasks assigned to this agent `ID`")
	fs.StringVar(&f.ParentID, "parent", "", "only the sub-tasks of this `TASK`")
	search := fs.String("search", "", "only tasks whose title, description or id contains `TEXT` (any case)")
	limit := fs.Int("limit", 0, fmt.Sprintf("show at most `N` tasks: on a terminal the N most recently changed (%d unless --all), piped the first N in creation order", listPage))
	all := fs.Bool("all", false, "on a terminal, show every task (piped or with --json every task is shown)")
	full := fs.Bool("no-abbrev", false, "show whole task ids")
	if _, err := fs.parse(args, 0, 0, "[--status S[,S]...] [--assignee A] [--parent T] [--search TEXT] [--limit N | --all]"); err != nil {
		return err
	}
	if *limit < 0 {
		return &usageError{msg: fmt.Sprintf("--limit %d: give a positive number of tasks, or leave it out for all", *limit), path: "task list"}
	}
	want := map[string]bool{}
	for _, v := range statuses {
		for st := range strings.SplitSeq(v, ",") {
			st = strings.TrimSpace(st)
			if !slices.Contains(filestore.Statuses, st) {
				return &filestore.Error{Code: "invalid_status", Kind: filestore.ErrInvalid,
					Message: fmt.Sprintf("invalid status %q", st), Hint: "use one or more of " + strings.Join(filestore.Statuses, ", ")}
			}
			want[st] = true
		}
	}
	if len(want) == 1 {
		for st := range want {
			f.Status = st // the store narrows a single status by its index
		}
	}
	s, err := a.open()
	if err != nil {
		return err
	}
	s.OneShot()
	if f.ParentID, err = taskID(s, f.ParentID); err != nil {
		return err
	}
	if f.AssigneeID, err = agentID(s, f.AssigneeID); err != nil {
		return err
	}
	// What to show is chosen from the index; only the files of what is shown are read,
	// each once, and printed as they are read.
	entries, err := s.TaskEntries(f)
	if err != nil {
		return err
	}
	if len(want) > 1 {
		entries = slices.DeleteFunc(entries, func(e filestore.TaskEntry) bool { return !want[e.Status] })
	}
	// On a terminal a person reads a page: the most recently changed tasks first, as many
	// as fit a screen, and how to see the rest. Piped or as JSON, every task, oldest first.
	paged := isTerminal(a.term) && !fs.json
	asked := *limit
	if paged {
		slices.SortStableFunc(entries, func(x, y filestore.TaskEntry) int {
			if c := y.Changed.Compare(x.Changed); c != 0 {
				return c
			}
			return strings.Compare(y.ID, x.ID)
		})
		if asked == 0 && !*all {
			*limit = listPage
		}
	}
	needle := strings.ToLower(strings.TrimSpace(*search))
	matches := func(t *filestore.Task) bool {
		return needle == "" || strings.Contains(strings.ToLower(t.Title), needle) ||
			strings.Contains(strings.ToLower(t.Description), needle) || strings.Contains(t.ID, strings.TrimPrefix(needle, "tsk_"))
	}
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = e.ID
	}
	if needle == "" && *limit > 0 && len(ids) > *limit {
		ids = ids[:*limit] // without a search, the rest need not be read to be counted
	}
	out := bufio.NewWriterSize(a.stdout, 64<<10)
	if fs.json {
		if err := a.streamJSON(out, s, ids, matches, *limit); err != nil {
			return err
		}
		return out.Flush()
	}
	sh := shortener{}
	if !*full {
		if sh, err = newShortener(s); err != nil {
			return err
		}
	}
	cols := newListColumns(entries, ids, sh)
	cols.row(out, "ID", "STATUS", "PRIORITY", "ASSIGNEE", "PARENT", "TITLE")
	shown := 0
	var broken []*filestore.Task
	err = s.ReadTasks(ids, func(t *filestore.Task) error {
		if !matches(t) {
			return nil
		}
		if shown++; *limit > 0 && shown > *limit {
			return nil // counted, not shown
		}
		cols.row(out, sh.id(t.ID), statusLabel(t), t.Priority, orDash(t.AssigneeID), orDash(sh.id(t.ParentID)), t.Title)
		if t.Problem() != "" {
			broken = append(broken, t)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if needle == "" {
		shown = len(entries)
	}
	if more := shown - *limit; *limit > 0 && more > 0 {
		switch {
		case paged && asked == 0:
			fmt.Fprintf(out, "… and %d more, older: --limit N shows N, --all every task\n", more)
		case paged:
			fmt.Fprintf(out, "… and %d more, older (--limit %d; --all shows every task)\n", more, *limit)
		default:
			fmt.Fprintf(out, "… and %d more (--limit %d)\n", more, *limit)
		}
	}
	// A task broken by hand is named with the doctor's words wherever it is listed.
	for _, t := range broken {
		fmt.Fprintf(out, "%s: %s: %s (repair the file by hand; `aipm doctor` checks every file)\n", sh.id(t.ID), s.Rel(s.TaskFile(t.ID)), t.Problem())
	}
	return out.Flush()
}

// streamJSON prints the tasks of ids that match as one JSON array, as printJSON prints a
// list, each task as it is read: at most limit of them (0: all).
func (a *app) streamJSON(w io.Writer, s *filestore.Store, ids []string, matches func(*filestore.Task) bool, limit int) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("  ", "  ")
	n := 0
	err := s.ReadTasks(ids, func(t *filestore.Task) error {
		if !matches(t) || limit > 0 && n >= limit {
			return nil
		}
		buf.Reset()
		if err := enc.Encode(t); err != nil {
			return err
		}
		sep := ",\n  "
		if n == 0 {
			sep = "[\n  "
		}
		n++
		io.WriteString(w, sep)
		_, err := w.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
		return err
	})
	if err != nil {
		return err
	}
	if n == 0 {
		_, err = io.WriteString(w, "[]\n")
	} else {
		_, err = io.WriteString(w, "\n]\n")
	}
	return err
}

// listColumns lays out the table of `aipm task list` before a file is read, so that each
// row is printed as its task is read: every column's width but the title's comes from
// the index (a priority wider than its heading, written by hand, shifts its own row).
type listColumns struct{ w [5]int }

func newListColumns(entries []filestore.TaskEntry, ids []string, sh shortener) *listColumns {
	c := &listColumns{w: [5]int{len("ID"), len("STATUS"), len("PRIORITY"), len("ASSIGNEE"), len("PARENT")}}
	in := make(map[string]bool, len(ids))
	for _, id := range ids {
		in[id] = true
	}
	for _, e := range entries {
		if !in[e.ID] {
			continue
		}
		status := e.Status
		if !slices.Contains(filestore.Statuses, status) {
			status = "INVALID(" + status + ")"
		}
		for i, v := range []string{sh.id(e.ID), status, "", orDash(e.AssigneeID), orDash(sh.id(e.ParentID))} {
			c.w[i] = max(c.w[i], utf8.RuneCountInString(v))
		}
	}
	return c
}

// row prints one line of the table, each column but the last padded to its width and two
// spaces, as text/tabwriter lays it out.
func (c *listColumns) row(w io.Writer, cells ...string) {
	var b strings.Builder
	for i, v := range cells {
		b.WriteString(v)
		if i < len(c.w) {
			b.WriteString(strings.Repeat(" ", max(c.w[i]-utf8.RuneCountInString(v), 0)+2))
		}
	}
	b.WriteByte('\n')
	io.WriteString(w, b.String())
}

func (a *app) taskShow(args []string) error {
	fs := newFlags(a, "task show")
	full := fs.Bool("no-abbrev", false, "show whole task ids")
	s, id, err := a.openOne(fs, args, "ID", taskID)
	if err != nil {
		return err
	}
	t, err := s.Task(id)
	if err != nil {
		return err
	}
	sub, err := s.Subtree(t.ID)
	if err != nil {
		return err
	}
	// The table shows the latest changes; --json has the whole history.
	n := filestore.HistoryShown
	if fs.json {
		n = -1
	}
	hist, total, err := s.EventsTail(t.ID, n)
	if err != nil {
		return err
	}
	runs, err := taskRuns(s, t, sub)
	if err != nil {
		return err
	}
	if fs.json {
		if sub == nil {
			sub = []*filestore.Task{}
		}
		if hist == nil {
			hist = []filestore.Event{}
		}
		if runs == nil {
			runs = []*filestore.Execution{}
		}
		return a.printJSON(struct {
			*filestore.Task
			Subtasks []*filestore.Task      `json:"subtasks"`
			History  []filestore.Event      `json:"history"`
			Runs     []*filestore.Execution `json:"runs"`
		}{t, sub, hist, runs})
	}
	sh := shortener{}
	if !*full {
		if sh, err = newShortener(s); err != nil {
			return err
		}
	}
	a.printf("%s  %s\n", t.ID, t.Title)
	a.printf("  status: %s  priority: %s  assignee: %s  parent: %s\n", statusLabel(t), t.Priority, orDash(t.AssigneeID), orDash(sh.id(t.ParentID)))
	if p := t.Problem(); p != "" {
		a.printf("  problem: %s (fix %s by hand; `aipm doctor` checks every file)\n", p, s.Rel(s.TaskFile(t.ID)))
	}
	if t.Conflict != nil {
		rel := s.Rel(s.TaskFile(t.ID))
		a.printf("  conflict: two clones changed %s; shown as ours, and no change is made to it until a person keeps one side: `aipm resolve %s --ours` or `--theirs`\n",
			t.Conflict.String(t), rel)
	}
	if t.Approval != filestore.ApprovalApproved {
		a.printf("  approval: %s\n", t.Approval)
	}
	if t.BlockedReason != "" {
		a.printf("  blocked: %s\n", t.BlockedReason)
	}
	if t.Description != "" {
		a.printf("  %s\n", strings.ReplaceAll(t.Description, "\n", "\n  "))
	}
	if err := a.printLinks(s, t, sh, "  "); err != nil {
		return err
	}
	a.printLanding(s, t, sh)
	if len(sub) > 0 {
		a.printf("sub-tasks:\n")
		drawTree(a.stdout, t.ID, sub, sh, statusOf(s, sub), "  ")
	}
	if len(hist) > 0 {
		a.printf("history:\n")
		if total > len(hist) {
			a.printf("  (the last %d of %d changes; --json has them all)\n", len(hist), total)
		}
		here := s.ThisMachine()
		for _, e := range hist {
			if e.Machine == here {
				e.Machine = "" // only the changes made elsewhere name their machine
			}
			a.printf("  %s\n", historyLine(e, sh))
		}
	}
	if len(runs) > 0 {
		a.printf("runs:\n")
		for _, r := range runs {
			took := "running"
			if r.CompletedAt != nil {
				took = fmt.Sprintf("%.1fs", r.DurationSeconds)
			}
			line := fmt.Sprintf("  %s  %s  %-9s %s  %s  %s", r.ID, r.TaskID, r.Status, r.AgentID, localTime(r.StartedAt), took)
			if r.Calls > 0 {
				line += "  " + r.Usage.String()
			}
			if r.LogPath != "" {
				line += "  log: " + r.LogPath
			}
			a.printf("%s\n", line)
		}
	}
	return nil
}

// printLinks prints what the task depends on and what depends on it, each task with its
// short id, status and title.
func (a *app) printLinks(s *filestore.Store, t *filestore.Task, sh shortener, indent string) error {
	deps, err := s.TasksByID(t.Dependencies)
	if err != nil {
		return err
	}
	by, err := s.Dependents(t.ID)
	if err != nil {
		return err
	}
	for _, part := range []struct {
		head  string
		tasks []*filestore.Task
	}{{"depends on", deps}, {"needed by", by}} {
		if len(part.tasks) == 0 {
			continue
		}
		a.printf("%s%s:\n", indent, part.head)
		for _, d := range part.tasks {
			a.printf("%s  %s  %s  %s\n", indent, sh.id(d.ID), statusLabel(d), oneLine(d.Title))
		}
	}
	// A dependency whose file is gone is still named.
	for _, d := range t.Dependencies {
		if !slices.ContainsFunc(deps, func(x *filestore.Task) bool { return x.ID == d }) {
			a.printf("%s  %s  (missing)\n", indent, d)
		}
	}
	return nil
}

// historyLine is one history event for a person: local time with its offset, who, how,
// what changed from what to what.
func historyLine(e filestore.Event, sh shortener) string {
	actor := e.Actor
	if e.Machine != "" {
		actor += " on " + e.Machine
	}
	line := fmt.Sprintf("%s  %s via %s: %s", localTime(e.At), actor, e.Via, e.Change)
	if len(e.Changes) > 0 {
		var parts []string
		for _, c := range e.Changes {
			parts = append(parts, fmt.Sprintf("%s %s → %s", c.Field, shownValue(c.Field, c.From, sh), shownValue(c.Field, c.To, sh)))
		}
		line += " " + strings.Join(parts, "; ")
	} else if len(e.Fields) > 0 {
		line += " " + strings.Join(e.Fields, ", ")
	}
	if len(e.Changes) == 0 && (e.From != "" || e.To != "") {
		line += fmt.Sprintf(" %s → %s", orDash(e.From), orDash(e.To))
	}
	if e.Reason != "" {
		line += " (" + e.Reason + ")"
	}
	if e.RequesterID != "" {
		line += " at the request of " + e.RequesterID
	}
	if e.Warning != "" {
		line += "; warning: " + e.Warning
	}
	return line
}

// shownValue is a field's value in a history line: quoted text, cut to a line; ids short.
func shownValue(field, v string, sh shortener) string {
	switch field {
	case "priority":
		return orDash(v)
	case "dependencies":
		if v == "" {
			return "none"
		}
		ids := strings.Split(v, ",")
		for i, id := range ids {
			ids[i] = sh.id(id)
		}
		return strings.Join(ids, ",")
	}
	r := []rune(oneLine(v))
	if len(r) > 60 {
		return strconv.Quote(string(r[:59]) + "…")
	}
	return strconv.Quote(string(r))
}

// localTime is a time as people read it on this machine: local, with its offset, as git
// shows it. --json output keeps UTC.
func localTime(t time.Time) string {
	return t.Local().Format("2006-01-02 15:04:05 -0700")
}

// taskRuns lists the execution records of a task and its sub-tasks, oldest first.
func taskRuns(s *filestore.Store, t *filestore.Task, sub []*filestore.Task) ([]*filestore.Execution, error) {
	all, err := s.Executions("")
	if err != nil {
		return nil, err
	}
	in := map[string]bool{t.ID: true}
	for _, c := range sub {
		in[c.ID] = true
	}
	var out []*filestore.Execution
	for i := len(all) - 1; i >= 0; i-- { // Executions is newest first
		if in[all[i].TaskID] {
			out = append(out, all[i])
		}
	}
	return out, nil
}

func (a *app) taskStatus(args []string) error {
	fs := newFlags(a, "task status")
	reason := fs.String("reason", "", "why (recorded in the history; for blocked, what it waits for)")
	pos, err := fs.parse(args, 2, 2, "ID STATUS [--reason R]")
	if err != nil {
		return err
	}
	s, actor, err := a.openAs(fs.as)
	if err != nil {
		return err
	}
	s.OneShot()
	id, err := taskID(s, pos[0])
	if err != nil {
		return err
	}
	ch, err := s.SetTaskStatus(actor, id, pos[1], *reason)
	if err != nil {
		return err
	}
	if fs.json {
		return a.printJSON(map[string]any{"task": ch.Task, "previous_status": ch.Previous, "cascaded": ch.Cascaded})
	}
	a.printf("%s: %s → %s\n", ch.Task.ID, ch.Previous, ch.Task.Status)
	for _, c := range ch.Cascaded {
		a.printf("  %s: → %s (cascade)\n", c.ID, c.Status)
	}
	return nil
}

func (a *app) taskAssign(args []string) error {
	fs := newFlags(a, "task assign")
	pos, err := fs.parse(args, 2, 2, "ID AGENT (use - to unassign)")
	if err != nil {
		return err
	}
	s, actor, err := a.openAs(fs.as)
	if err != nil {
		return err
	}
	id, err := taskID(s, pos[0])
	if err != nil {
		return err
	}
	assignee, err := agentID(s, pos[1])
	if err != nil {
		return err
	}
	if assignee == "-" {
		assignee = ""
	}
	t, err := s.AssignTask(actor, id, assignee)
	if err != nil {
		return err
	}
	if fs.json {
		return a.printJSON(t)
	}
	a.printf("%s: assigned to %s\n", t.ID, orDash(t.AssigneeID))
	return nil
}
