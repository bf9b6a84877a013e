package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/aipm/aipm/filestore"
	"github.com/aipm/aipm/filestore/merge"
)

// cmdMergeDriver is the merge driver Git runs (merge=aipm in .ai-pm/.gitattributes, the
// command registered by `aipm init`) when both sides of a merge, rebase or cherry-pick
// changed one entity file: BASE OURS THEIRS [PATH], Git's %O %A %B %P. It writes the result
// over OURS and exits 0, or writes the file with conflict markers around the fields it
// cannot decide and exits 1, as Git expects. It opens no store: mid-rebase, the
// working tree is Git's.
func (a *app) cmdMergeDriver(args []string) error {
	fs := newFlags(a, "merge-driver")
	args, err := fs.parse(args, 3, 4, "BASE OURS THEIRS [PATH]   (Git's %O %A %B %P; `aipm init` registers it)")
	if err != nil {
		return err
	}
	basePath, oursPath, theirsPath := args[0], args[1], args[2]
	name := oursPath
	if len(args) == 4 {
		name = args[3]
	}
	// The store's limit on each side: an entity the store would refuse is not merged (a
	// pull of three 200 MiB sides cost gigabytes and left a file nobody could use). Git
	// keeps our side and reports the conflict.
	var sides [3][]byte
	for i, p := range []string{basePath, oursPath, theirsPath} {
		data, err := filestore.ReadFile(p, filestore.MaxEntityFile)
		var tl *filestore.TooLargeError
		if errors.As(err, &tl) {
			return fmt.Errorf("%s: %s side is %d bytes, over the %d bytes an entity file may hold: not merged; keep one side "+
				"(git checkout --ours or --theirs %s), check it with `aipm doctor`, then git add it", name, [3]string{"the common ancestor's", "our", "their"}[i], tl.Size, tl.Limit, name)
		}
		if err != nil {
			return err
		}
		sides[i] = data
	}
	base, ours, theirs := sides[0], sides[1], sides[2]
	kind := filestore.EntityKind(name)
	var r *merge.Result
	if kind != "" {
		r, err = merge.Merge(kind, base, ours, theirs)
	} else {
		err = fmt.Errorf("not an aipm entity file")
	}
	if err != nil {
		// A side broken by hand, or a file the driver does not know: Git's own line merge,
		// whose markers `aipm doctor` explains.
		fmt.Fprintf(a.stderr, "aipm merge-driver: %s: %v; merging lines instead\n", name, err)
		return lineMerge(basePath, oursPath, theirsPath)
	}
	if len(r.Data) > filestore.MaxEntityFile {
		return fmt.Errorf("%s: the merged file would be %d bytes, over the %d bytes an entity file may hold: not merged; keep one side (git checkout --ours or --theirs %s)",
			name, len(r.Data), filestore.MaxEntityFile, name)
	}
	if err := os.WriteFile(oursPath, r.Data, 0o644); err != nil {
		return err
	}
	if len(r.Conflicts) == 0 {
		return nil
	}
	var fields []string
	for _, c := range r.Conflicts {
		fields = append(fields, c.Field)
	}
	fmt.Fprintf(a.stderr, "aipm merge-driver: %s: both sides changed %s; run `aipm doctor` for how to resolve it\n", name, strings.Join(fields, ", "))
	return exitError(1)
}

// lineMerge is `git merge-file`: markers in OURS where lines conflict.
func lineMerge(base, ours, theirs string) error {
	cmd := exec.Command("git", "merge-file", "-L", "ours", "-L", "base", "-L", "theirs", ours, base, theirs)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee) && ee.ExitCode() > 0 && ee.ExitCode() < 128:
		return exitError(1) // conflicts, written as markers
	}
	return fmt.Errorf("git merge-file: %v %s", err, strings.TrimSpace(errb.String()))
}
