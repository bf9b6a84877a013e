package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/aipm/aipm/filestore"
)

// Ids on the command line, as in git: a task or agent id may be shortened to any prefix
// that names one of them alone (for tasks, with or without "tsk_"), listings show ids
// shortened to what is unique, and an id that names nothing gets the ids it was likely
// meant to be.

// ambiguousError is an abbreviated id that names several entities.
type ambiguousError struct {
	kind, prefix string
	count        int      // how many ids it starts
	matches      []string // ids, with a label each; perhaps the first few and "… and N more"
}

func (e *ambiguousError) Error() string {
	return fmt.Sprintf("%s id %q is ambiguous: it is the start of %d ids:\n  %s", e.kind, e.prefix, max(e.count, len(e.matches)),
		strings.Join(e.matches, "\n  "))
}

func (e *ambiguousError) hint() string { return "type more of the id" }

// taskID expands a task id typed on the command line: the whole id, or a unique prefix of
// it, with or without "tsk_".
func taskID(s *filestore.Store, arg string) (string, error) {
	if arg == "" {
		return "", nil
	}
	want := strings.ToLower(arg)
	if !strings.HasPrefix(want, filestore.PrefixTask+"_") {
		want = filestore.PrefixTask + "_" + want
	}
	if err := filestore.ValidateEntityID(filestore.PrefixTask, want); err != nil {
		return "", err // no task id starts so
	}
	// A whole id names its file, whatever the file is: the store says what is wrong with it
	// (a link, a broken file) better than "not found".
	if _, err := os.Lstat(s.TaskFile(want)); err == nil {
		return want, nil
	}
	set, err := s.TaskIDSet()
	if err != nil {
		return "", err
	}
	matches := set.WithPrefix(want)
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return "", notFound("task", arg, nearIDs(want, set.All()), "list tasks with `aipm task list`")
	}
	labels := make([]string, 0, len(matches))
	const shown = 8
	for i, id := range matches {
		if i == shown && len(matches) > shown+1 {
			labels = append(labels, fmt.Sprintf("… and %d more", len(matches)-shown))
			break
		}
		label := set.Short(id)
		if t, err := s.Task(id); err == nil {
			label += "  " + oneLine(t.Title)
		}
		labels = append(labels, label)
	}
	return "", &ambiguousError{kind: "task", prefix: arg, count: len(matches), matches: labels}
}

// taskIDs expands each of ids (see taskID).
func taskIDs(s *filestore.Store, ids []string) ([]string, error) {
	out := make([]string, 0, len(ids))
	for _, arg := range ids {
		id, err := taskID(s, arg)
		if err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, nil
}

// agentID expands an agent id typed on the command line: the whole id, or a unique prefix.
func agentID(s *filestore.Store, arg string) (string, error) {
	if arg == "" || arg == "-" {
		return arg, nil
	}
	if err := filestore.ValidateAgentID(arg); err != nil {
		return "", err
	}
	agents, err := s.Agents()
	if err != nil {
		return "", err
	}
	var ids, matches []string
	for _, ag := range agents {
		ids = append(ids, ag.ID)
		if ag.ID == arg {
			return arg, nil
		}
		if strings.HasPrefix(ag.ID, arg) {
			matches = append(matches, ag.ID)
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return "", notFound("agent", arg, closest(arg, ids), "list agents with `aipm agent list`")
	}
	return "", &ambiguousError{kind: "agent", prefix: arg, matches: matches}
}

func notFound(kind, arg string, near []string, list string) error {
	hint := list
	if len(near) > 0 {
		hint = "did you mean " + orList(near) + "? or " + list
	}
	return &filestore.Error{Code: kind + "_not_found", Kind: filestore.ErrNotFound,
		Message: fmt.Sprintf("%s %s not found", kind, arg), Hint: hint}
}

// nearIDs are the task ids a mistyped one was likely meant to be: those whose start is
// within one edit of it (two for longer ids), at most three.
func nearIDs(want string, ids []string) []string {
	allowed := 1
	if len(want) > 12 {
		allowed = 2
	}
	var out []string
	for _, id := range ids {
		if len(id) < len(want)-1 {
			continue
		}
		head := id[:min(len(id), len(want))]
		if editDistance(want, head) <= allowed {
			out = append(out, id)
			if len(out) == 3 {
				break
			}
		}
	}
	return out
}

// shortener abbreviates task ids for a listing; ids it does not know stay whole, and the
// zero value abbreviates nothing.
type shortener struct{ set *filestore.TaskIDSet }

func newShortener(s *filestore.Store) (shortener, error) {
	set, err := s.TaskIDSet()
	return shortener{set}, err
}

func (sh shortener) id(id string) string {
	if sh.set == nil {
		return id
	}
	return sh.set.Short(id)
}
