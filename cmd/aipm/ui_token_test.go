package main

import (
	"os"
	"path/filepath"
	"testing"
)

// The web view's token is made once per machine, kept private, reused by every later
// aipm ui, and replaced when the file is damaged.
func TestUIToken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runtime", "ui-token")
	first, err := uiToken(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 32 {
		t.Fatalf("token %q, want 32 hex digits", first)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", fi.Mode().Perm())
	}
	if again, err := uiToken(path); err != nil || again != first {
		t.Errorf("second start: %q, %v; want the same token %q", again, err, first)
	}
	if err := os.WriteFile(path, []byte("not a token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fresh, err := uiToken(path)
	if err != nil || fresh == first || len(fresh) != 32 {
		t.Errorf("after damage: %q, %v; want a new token", fresh, err)
	}
	if b, _ := os.ReadFile(path); string(b) != fresh+"\n" {
		t.Errorf("file holds %q, want the new token", b)
	}
}
