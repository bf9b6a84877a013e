package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/aipm/aipm/filestore"
)

// taskEdit is `aipm task edit ID`: the acting human changes a task's title, description,
// priority or dependencies, under the same rules and with the same history as the tools.
func (a *app) taskEdit(args []string) error {
	fs := newFlags(a, "task edit")
	title := fs.String("title", "", "the new `TITLE`")
	desc := fs.String("description", "", "the new `TEXT` of the description (- reads it from stdin; \"\" clears it)")
	prio := fs.String("priority", "", "the new `PRIORITY`: "+strings.Join(filestore.Priorities, ", "))
	var deps, add, remove stringList
	fs.Var(&deps, "dep", "a `TASK` it depends on, replacing the list (repeatable)")
	noDeps := fs.Bool("no-deps", false, "remove every dependency")
	fs.Var(&add, "add-dep", "add a `TASK` to its dependencies (repeatable)")
	fs.Var(&remove, "remove-dep", "remove a `TASK` from its dependencies (repeatable)")
	pos, err := fs.parse(args, 1, 1, "ID [--title T] [--description D] [--priority P] [--dep TASK]... [--add-dep TASK] [--remove-dep TASK]")
	if err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	s, actor, err := a.openAs(fs.as)
	if err != nil {
		return err
	}
	id, err := taskID(s, pos[0])
	if err != nil {
		return err
	}
	var e filestore.TaskEdit
	if set["title"] {
		e.Title = title
	}
	if set["description"] {
		if *desc == "-" {
			b, err := io.ReadAll(a.stdin)
			if err != nil {
				return fmt.Errorf("reading the description from stdin: %w", err)
			}
			*desc = strings.TrimSuffix(string(b), "\n")
		}
		e.Description = desc
	}
	if set["priority"] {
		e.Priority = prio
	}
	if set["dep"] && *noDeps {
		return &usageError{msg: "--dep and --no-deps contradict each other: give one", path: "task edit"}
	}
	if set["dep"] || *noDeps || set["add-dep"] || set["remove-dep"] {
		t, err := s.Task(id)
		if err != nil {
			return err
		}
		list := slices.Clone(t.Dependencies)
		if set["dep"] {
			if list, err = taskIDs(s, deps); err != nil {
				return err
			}
		}
		if *noDeps {
			list = []string{}
		}
		plus, err := taskIDs(s, add)
		if err != nil {
			return err
		}
		minus, err := taskIDs(s, remove)
		if err != nil {
			return err
		}
		for _, d := range minus {
			if !slices.Contains(list, d) {
				return &filestore.Error{Code: "invalid_dependency", Kind: filestore.ErrInvalid,
					Message: fmt.Sprintf("task %s does not depend on %s", id, d), Hint: "`aipm task show " + id + "` lists its dependencies"}
			}
			list = slices.DeleteFunc(list, func(x string) bool { return x == d })
		}
		list = append(list, plus...)
		e.Dependencies = &list
	}
	t, fields, err := s.EditTask(actor, id, e)
	if err != nil {
		return err
	}
	if fs.json {
		if fields == nil {
			fields = []string{}
		}
		return a.printJSON(map[string]any{"task": t, "updated_fields": fields})
	}
	if len(fields) == 0 {
		a.printf("%s: nothing changed\n", t.ID)
		return nil
	}
	a.printf("%s: changed %s\n", t.ID, strings.Join(fields, ", "))
	return nil
}
