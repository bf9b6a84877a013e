package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportDirection keeps the floors of the code in order (docs/CONTRIBUTING.md, "Layout of the code"):
// filestore at the bottom with nothing of aipm but its own sub-packages, watch beside it
// with nothing of aipm, tools above them and never the command, and the command's own
// packages (cmd/aipm/internal/...) independent of one another. It reads every package's
// transitive imports from `go list -deps`.
func TestImportDirection(t *testing.T) {
	const mod = "github.com/aipm/aipm"
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the imports: %v", err)
	}
	cmd := exec.Command(goCmd, "list", "-deps", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}", "./...")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := map[string][]string{} // every aipm package, with the aipm packages it imports
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], mod) {
			continue
		}
		deps[f[0]] = deps[f[0]][:0]
		for _, d := range f[1:] {
			if strings.HasPrefix(d, mod) {
				deps[f[0]] = append(deps[f[0]], d)
			}
		}
	}
	under := func(p, dir string) bool { return p == mod+"/"+dir || strings.HasPrefix(p, mod+"/"+dir+"/") }
	rules := []struct {
		pkg    func(string) bool
		allows func(dep string) bool
		rule   string
	}{
		{func(p string) bool { return under(p, "filestore") }, func(d string) bool { return under(d, "filestore") },
			"filestore imports no aipm package but its own sub-packages"},
		{func(p string) bool { return under(p, "filestore/internal/engine") }, func(string) bool { return false },
			"the store's engine imports no aipm package: it knows files, not tasks"},
		{func(p string) bool { return p == "github.com/aipm/aipm/filestore" }, func(d string) bool {
			return d == "github.com/aipm/aipm/filestore/internal/engine" || d == "github.com/aipm/aipm/filestore/msg"
		},
			"the domain stands on the engine alone: the merge rules sit above it"},
		{func(p string) bool { return under(p, "watch") }, func(string) bool { return false },
			"watch imports no aipm package"},
		{func(p string) bool { return under(p, "tools") }, func(d string) bool { return !under(d, "cmd") },
			"tools never imports the command"},
		{func(p string) bool { return under(p, "cmd/aipm/internal") }, func(d string) bool {
			return !under(d, "cmd/aipm/internal") && d != mod+"/cmd/aipm"
		}, "the command's packages import neither the command nor one another"},
	}
	checked := 0
	for pkg, ds := range deps {
		for _, r := range rules {
			if !r.pkg(pkg) {
				continue
			}
			checked++
			for _, d := range ds {
				if !r.allows(d) {
					t.Errorf("%s imports %s: %s", pkg, d, r.rule)
				}
			}
		}
	}
	for _, p := range []string{"filestore", "filestore/internal/engine", "filestore/merge", "filestore/msg", "watch", "tools", "cmd/aipm/internal/coordinator", "cmd/aipm/internal/sim", "cmd/aipm/internal/ui"} {
		if _, ok := deps[mod+"/"+p]; !ok {
			t.Errorf("go list did not list %s: the test no longer sees the layout it checks", p)
		}
	}
	if checked == 0 {
		t.Fatal("no package was checked")
	}
}
