package clone

import (
	"os"
	"path/filepath"
	"testing"
)

// A linked worktree as Git lays it out: <wt>/.git names <main>/.git/worktrees/<name>,
// whose commondir leads back to <main>/.git.
func TestSharedRootFromGitFiles(t *testing.T) {
	dir := t.TempDir()
	main, wt := filepath.Join(dir, "main"), filepath.Join(dir, "wt")
	admin := filepath.Join(main, ".git", "worktrees", "wt")
	for _, d := range []string{admin, filepath.Join(main, "sub", ".ai-pm"), filepath.Join(wt, "sub", ".ai-pm")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(wt, ".git"), "gitdir: "+admin+"\n")
	write(filepath.Join(admin, "commondir"), "../..\n")
	write(filepath.Join(admin, "gitdir"), filepath.Join(wt, ".git")+"\n")
	write(filepath.Join(main, "sub", ".ai-pm", "project.json"), "{}\n")

	// The same .git file elsewhere (an archive, an edit): git's bookkeeping names another
	// worktree, so it leads nowhere.
	other := filepath.Join(dir, "other")
	if err := os.MkdirAll(filepath.Join(other, "sub", ".ai-pm"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(other, ".git"), "gitdir: "+admin+"\n")
	if got, linked, err := SharedRoot(filepath.Join(other, "sub")); err != nil || linked || got != filepath.Join(other, "sub") {
		t.Fatalf("SharedRoot(other/sub) = %q, %v, %v; want itself: a copied .git file is not git's worktree", got, linked, err)
	}

	got, linked, err := SharedRoot(filepath.Join(wt, "sub"))
	if err != nil || !linked || got != filepath.Join(main, "sub") {
		t.Fatalf("SharedRoot(wt/sub) = %q, %v, %v; want %q, true", got, linked, err, filepath.Join(main, "sub"))
	}
	got, linked, err = SharedRoot(filepath.Join(main, "sub"))
	if err != nil || linked || got != filepath.Join(main, "sub") {
		t.Fatalf("SharedRoot(main/sub) = %q, %v, %v; want itself", got, linked, err)
	}
	// A store that exists only in the linked worktree is an error naming the main one.
	os.Remove(filepath.Join(main, "sub", ".ai-pm", "project.json"))
	if _, _, err := SharedRoot(filepath.Join(wt, "sub")); err == nil {
		t.Fatal("no error for a main worktree without the store")
	}
	// A submodule's .git file has no commondir: not a linked worktree.
	write(filepath.Join(admin, "commondir"), "")
	os.Remove(filepath.Join(admin, "commondir"))
	if w, ok := Find(filepath.Join(wt, "sub")); !ok || w.Main != "" {
		t.Fatalf("Find = %+v, %v; want a worktree with no main", w, ok)
	}
}

func TestDriverProgram(t *testing.T) {
	for _, exe := range []string{"/usr/local/bin/aipm", "/home/o'neil/go/bin/aipm", "/tmp/with space/aipm"} {
		if got := DriverProgram(DriverCommand(exe)); got != exe {
			t.Errorf("DriverProgram(DriverCommand(%q)) = %q", exe, got)
		}
	}
	if got := DriverProgram("aipm merge-driver %O %A %B %P"); got != "aipm" {
		t.Errorf("unquoted: %q", got)
	}
}
