package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/aipm/aipm/filestore"
)

// taskTree is `aipm task tree [ID]`: the hierarchy of every top-level task, or of one task,
// drawn with each sub-task under its own parent, in creation order.
func (a *app) taskTree(args []string) error {
	fs := newFlags(a, "task tree")
	full := fs.Bool("no-abbrev", false, "show whole task ids")
	pos, err := fs.parse(args, 0, 1, "[ID]")
	if err != nil {
		return err
	}
	s, err := a.open()
	if err != nil {
		return err
	}
	var roots, tasks []*filestore.Task
	if len(pos) == 1 {
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
		roots, tasks = []*filestore.Task{t}, append([]*filestore.Task{t}, sub...)
	} else {
		if tasks, err = s.Tasks(filestore.TaskFilter{}); err != nil {
			return err
		}
		for _, t := range tasks {
			if t.ParentID == "" {
				roots = append(roots, t)
			}
		}
	}
	if fs.json {
		return a.printJSON(treeJSON(roots, tasks))
	}
	sh := shortener{}
	if !*full {
		if sh, err = newShortener(s); err != nil {
			return err
		}
	}
	sort.Slice(roots, func(i, j int) bool { return roots[i].ID < roots[j].ID })
	status := statusOf(s, tasks)
	for _, r := range roots {
		a.printf("%s\n", treeLine(r, sh, status))
		drawTree(a.stdout, r.ID, tasks, sh, status, "")
	}
	if len(pos) == 1 {
		if err := a.printLinks(s, roots[0], sh, ""); err != nil {
			return err
		}
	}
	if len(roots) == 0 {
		a.printf("no tasks yet: add one with `aipm task add \"TITLE\"`\n")
	}
	return nil
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
	if t.Status == filestore.StatusDone && t.Landing != nil {
		// Done is the agent's word; landed is the code's.
		return t.Status + " (" + t.Landing.State + ")"
	}
	return t.Status
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
