package main

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/aipm/aipm/filestore"
)

// taskTree is `aipm task tree [ID]`: the hierarchy of every top-level task, or of one task,
// drawn with each sub-task under its own parent, in creation order. Without an ID it draws
// the open work: a sub-tree where every task is finished is folded into a count (--all
// draws it), and only the files of the tasks drawn are read.
func (a *app) taskTree(args []string) error {
	fs := newFlags(a, "task tree")
	full := fs.Bool("no-abbrev", false, "show whole task ids")
	all := fs.Bool("all", false, "draw finished sub-trees too, instead of a count of their tasks")
	pos, err := fs.parse(args, 0, 1, "[ID] [--all]")
	if err != nil {
		return err
	}
	s, err := a.open()
	if err != nil {
		return err
	}
	s.OneShot()
	if len(pos) == 0 {
		return a.projectTree(s, fs.json, *all, *full)
	}
	id, err := taskID(s, pos[0])
	if err != nil {
		return err
	}
	t, err := s.Task(id)
	if err != nil {
		return err
	}
	sub, err := s.Subtree(id)
	if err != nil {
		return err
	}
	roots, tasks := []*filestore.Task{t}, append([]*filestore.Task{t}, sub...)
	if fs.json {
		return a.printJSON(treeJSON(roots, tasks))
	}
	sh := shortener{}
	if !*full {
		if sh, err = newShortener(s); err != nil {
			return err
		}
	}
	status := statusOf(s, tasks)
	a.printf("%s\n", treeLine(t, sh, status))
	drawTree(a.stdout, t.ID, tasks, sh, status, "")
	return a.printLinks(s, t, sh, "")
}

// projectTree draws every top-level task's tree (taskTree without an ID). What to draw is
// chosen from the index; a finished task is drawn only with open work below it, unless
// all; the rest is counted.
func (a *app) projectTree(s *filestore.Store, asJSON, all, full bool) error {
	entries, err := s.TaskEntries(filestore.TaskFilter{})
	if err != nil {
		return err
	}
	kids := map[string][]string{}
	status := make(map[string]string, len(entries))
	for _, e := range entries { // by id: each parent's children in creation order
		kids[e.ParentID] = append(kids[e.ParentID], e.ID)
		status[e.ID] = e.Status
	}
	// open: the sub-tree of id holds unfinished work; size: how many tasks it holds.
	open, size := map[string]bool{}, map[string]int{}
	var walk func(id string)
	walk = func(id string) {
		n, o := 1, !filestore.Finished(status[id])
		for _, c := range kids[id] {
			walk(c)
			n += size[c]
			o = o || open[c]
		}
		open[id], size[id] = o, n
	}
	roots := kids[""]
	for _, r := range roots {
		walk(r)
	}
	// JSON is every task, as before: a program folds what it wants.
	every := all || asJSON
	var drawn []string
	var mark func(id string)
	mark = func(id string) {
		drawn = append(drawn, id)
		for _, c := range kids[id] {
			if every || open[c] {
				mark(c)
			}
		}
	}
	for _, r := range roots {
		if every || open[r] {
			mark(r)
		}
	}
	slices.Sort(drawn)
	byID := make(map[string]*filestore.Task, len(drawn))
	var read []*filestore.Task
	if err := s.ReadTasks(drawn, func(t *filestore.Task) error {
		byID[t.ID] = t
		read = append(read, t)
		return nil
	}); err != nil {
		return err
	}
	if asJSON {
		var top []*filestore.Task
		for _, t := range read {
			if t.ParentID == "" {
				top = append(top, t)
			}
		}
		return a.printJSON(treeJSON(top, read))
	}
	sh := shortener{}
	if !full {
		if sh, err = newShortener(s); err != nil {
			return err
		}
	}
	w := bufio.NewWriterSize(a.stdout, 64<<10)
	folded := false
	var draw func(id, prefix string)
	draw = func(id, prefix string) {
		var shown []string
		hidden, hiddenTasks := 0, 0
		for _, c := range kids[id] {
			if byID[c] != nil {
				shown = append(shown, c)
			} else if all || open[c] {
				continue // unreadable: doctor names it
			} else {
				hidden++
				hiddenTasks += size[c]
			}
		}
		for i, c := range shown {
			branch, next := "├── ", "│   "
			if i == len(shown)-1 && hidden == 0 {
				branch, next = "└── ", "    "
			}
			fmt.Fprintf(w, "%s%s%s\n", prefix, branch, treeLine(byID[c], sh, status))
			draw(c, prefix+next)
		}
		if hidden > 0 {
			folded = true
			fmt.Fprintf(w, "%s└── + %s\n", prefix, finishedCount(hidden, hiddenTasks, "sub-task"))
		}
	}
	hidden, hiddenTasks := 0, 0
	for _, r := range roots {
		if t := byID[r]; t != nil {
			fmt.Fprintf(w, "%s\n", treeLine(t, sh, status))
			draw(r, "")
		} else if !all && !open[r] {
			hidden++
			hiddenTasks += size[r]
		}
	}
	if hidden > 0 {
		folded = true
		fmt.Fprintf(w, "+ %s\n", finishedCount(hidden, hiddenTasks, "top-level task"))
	}
	switch {
	case len(roots) == 0:
		fmt.Fprintf(w, "no tasks yet: add one with `aipm task add \"TITLE\"`\n")
	case folded:
		fmt.Fprintf(w, "(finished work is folded: `aipm task tree --all` draws every task)\n")
	}
	return w.Flush()
}

// finishedCount says how many finished sub-trees of what were folded, and how many tasks
// they hold: "3 finished sub-tasks" or "3 finished sub-tasks (12 tasks in all)".
func finishedCount(trees, tasks int, what string) string {
	out := fmt.Sprintf("%d finished %s", trees, plural(trees, what))
	if tasks > trees {
		out += fmt.Sprintf(" (%d tasks in all)", tasks)
	}
	return out
}

func plural(n int, what string) string {
	if n == 1 {
		return what
	}
	return what + "s"
}

// drawTree draws the descendants of id found in tasks, each line prefixed by indent and
// the branches of the tree.
func drawTree(w io.Writer, id string, tasks []*filestore.Task, sh shortener, status map[string]string, indent string) {
	kids := childrenOf(tasks)
	var walk func(id, prefix string)
	walk = func(id, prefix string) {
		list := kids[id]
		for i, c := range list {
			branch, next := "├── ", "│   "
			if i == len(list)-1 {
				branch, next = "└── ", "    "
			}
			fmt.Fprintf(w, "%s%s%s%s\n", indent, prefix, branch, treeLine(c, sh, status))
			walk(c.ID, prefix+next)
		}
	}
	walk(id, "")
}

// statusOf maps each of tasks, and each task they depend on, to its status.
func statusOf(s *filestore.Store, tasks []*filestore.Task) map[string]string {
	m := make(map[string]string, len(tasks))
	for _, t := range tasks {
		m[t.ID] = t.Status
	}
	for _, t := range tasks {
		for _, d := range t.Dependencies {
			if _, ok := m[d]; !ok {
				if dt, err := s.Task(d); err == nil {
					m[d] = dt.Status
				} else {
					m[d] = ""
				}
			}
		}
	}
	return m
}

// treeLine is one task in a tree: short id, status, assignee, title, and what it still
// waits for (dependencies not finished, with their status).
func treeLine(t *filestore.Task, sh shortener, status map[string]string) string {
	line := fmt.Sprintf("%s  %s  %s  %s", sh.id(t.ID), statusLabel(t), orDash(t.AssigneeID), t.Title)
	var waits []string
	for _, d := range t.Dependencies {
		if !filestore.Finished(status[d]) {
			waits = append(waits, sh.id(d)+" "+orDash(status[d]))
		}
	}
	if len(waits) > 0 && !filestore.Finished(t.Status) {
		line += "  (waits for " + strings.Join(waits, ", ") + ")"
	}
	if t.Status == filestore.StatusBlocked && t.BlockedReason != "" {
		line += "  (blocked: " + oneLine(t.BlockedReason) + ")"
	}
	return line
}

// statusLabel is a task's status as every listing shows it: a status broken by hand is
// marked, in the words of Task.Problem.
func statusLabel(t *filestore.Task) string {
	if t.Problem() != "" {
		return fmt.Sprintf("INVALID(%s)", t.Status)
	}
	label := t.Status
	if t.Status == filestore.StatusDone && t.Landing != nil {
		// Done is the agent's word; landed is the code's.
		label += " (" + t.Landing.State + ")"
	}
	if t.Conflict != nil {
		label += " CONFLICT(" + strings.Join(t.Conflict.Fields, ",") + ")"
	}
	return label
}

type treeNode struct {
	*filestore.Task
	Children []*treeNode `json:"children"`
}

func treeJSON(roots, tasks []*filestore.Task) []*treeNode {
	kids := childrenOf(tasks)
	var build func(t *filestore.Task) *treeNode
	build = func(t *filestore.Task) *treeNode {
		n := &treeNode{Task: t, Children: []*treeNode{}}
		for _, c := range kids[t.ID] {
			n.Children = append(n.Children, build(c))
		}
		return n
	}
	out := []*treeNode{}
	for _, r := range roots {
		out = append(out, build(r))
	}
	return out
}

// childrenOf maps each task id to its sub-tasks among tasks, in creation (id) order.
func childrenOf(tasks []*filestore.Task) map[string][]*filestore.Task {
	kids := map[string][]*filestore.Task{}
	for _, t := range tasks {
		if t.ParentID != "" {
			kids[t.ParentID] = append(kids[t.ParentID], t)
		}
	}
	for _, k := range kids {
		sort.Slice(k, func(i, j int) bool { return k[i].ID < k[j].ID })
	}
	return kids
}
