package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/aipm/aipm/cmd/aipm/internal/gitstate"
	"github.com/aipm/aipm/filestore"
	"github.com/aipm/aipm/filestore/merge"
)

// cmdResolve settles a conflict Git left in an entity file under .ai-pm: it keeps one
// side of every conflicting field (the merge driver has already merged the rest) and
// writes the file back in the store's format, ready for `git add`.
func (a *app) cmdResolve(args []string) error {
	fs := newFlags(a, "resolve")
	ours := fs.Bool("ours", false, "take our side (in a merge: the branch you are on; in a rebase: the branch you rebase onto)")
	theirs := fs.Bool("theirs", false, "take their side (in a merge: the branch merged in; in a rebase: your commit being replayed)")
	pos, err := fs.parse(args, 1, 1, "PATH --ours|--theirs")
	if err != nil {
		return err
	}
	if *ours == *theirs {
		return &usageError{msg: "say which side to keep of each conflicting field: --ours or --theirs (`aipm doctor` shows both values)", path: "resolve"}
	}
	path := pos[0]
	// doctor prints paths from the repository's root: take them from anywhere inside it.
	if _, err := os.Stat(path); err != nil && !filepath.IsAbs(path) {
		if root, ferr := filestore.Find("."); ferr == nil {
			if _, err := os.Stat(filepath.Join(root, path)); err == nil {
				path = filepath.Join(root, path)
			}
		}
	}
	kind := filestore.EntityKind(path)
	if kind == "" {
		return fmt.Errorf("%s is not an aipm entity file (tasks/, conversations/, delegations/, executions/, agents/<id>/agent.json, project.json): edit it by hand", path)
	}
	s, err := a.open()
	if err != nil {
		return err
	}
	return s.Locked(func() error { return a.resolveLocked(s.Root(), path, kind, *ours) })
}

// resolveLocked is resolve under the store lock: read with the store's limits (no link
// followed, nothing over the entity limit), written back by atomic replace.
func (a *app) resolveLocked(root, path, kind string, ours bool) error {
	data, err := filestore.ReadFile(path, filestore.MaxEntityFile)
	if err != nil {
		return err
	}
	if !filestore.HasConflictMarkers(data) {
		return fmt.Errorf("%s has no conflict markers: nothing to resolve", path)
	}
	o, t, ok := filestore.SplitConflict(data)
	if !ok {
		return fmt.Errorf("%s: the conflict markers are not well nested: edit the file by hand", path)
	}
	fields, err := filestore.ConflictFields(o, t)
	if err != nil {
		return fmt.Errorf("%s: %v: edit the file by hand", path, err)
	}
	out, err := merge.ResolveConflict(kind, data, ours)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := filestore.WriteFile(path, out, 0o644); err != nil {
		return err
	}
	side := "theirs"
	if ours {
		side = "ours"
	}
	a.printf("%s: took %s for %s\n", path, side, strings.Join(fields, ", "))
	if gitstate.Attached(root) && gitstate.Healthy(root) == nil {
		a.printf("next: nothing to add: the next `aipm sync` round (or a running `aipm run`) commits it and carries it to every clone\n")
		return nil
	}
	a.printf("next: git add %s, then finish the merge (git commit) or the rebase (git rebase --continue)\n", path)
	return nil
}
