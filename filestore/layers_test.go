package filestore

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestDomainCallsTheEngine: the entities and their rules make no file-system call of
// their own; every one goes through the engine (internal/engine), which alone knows how
// a store's files are opened, replaced, locked and listed.
func TestDomainCallsTheEngine(t *testing.T) {
	fsCalls := map[string]bool{}
	for _, n := range strings.Fields(`Open OpenFile OpenRoot OpenInRoot Create CreateTemp MkdirTemp ReadFile WriteFile
		Remove RemoveAll Rename Mkdir MkdirAll Stat Lstat ReadDir Chtimes Chmod Chown Lchown Truncate Link Symlink Readlink DirFS CopyFS`) {
		fsCalls[n] = true
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			pkg, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			if pkg.Name == "syscall" || pkg.Name == "os" && fsCalls[sel.Sel.Name] {
				t.Errorf("%s: %s.%s: the domain calls the engine for file-system operations", fset.Position(sel.Pos()), pkg.Name, sel.Sel.Name)
			}
			return true
		})
	}
	if checked < 20 {
		t.Fatalf("checked %d files: the test no longer sees the package", checked)
	}
}
