package engine

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkReadEntityFile is what every read of an entity file costs through the store's
// safe path (an os.Root of .ai-pm, each directory checked, the file opened without
// following links), next to a plain os.ReadFile of the same file.
func BenchmarkReadEntityFile(b *testing.B) {
	dir := filepath.Join(b.TempDir(), DirName, "tasks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, "tsk_x.json")
	if err := os.WriteFile(path, []byte(`{"id":"tsk_x","title":"a task","status":"todo"}`), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Run("safe", func(b *testing.B) {
		for b.Loop() {
			if _, err := ReadFile(path, MaxEntityFile); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			if _, err := os.ReadFile(path); err != nil {
				b.Fatal(err)
			}
		}
	})
}
