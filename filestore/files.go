package filestore

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/aipm/aipm/filestore/internal/engine"
)

// The engine's types and places that the store's API hands out.
type (
	// Line is one complete record of a JSONL file (engine.Line).
	Line = engine.Line
	// LineTooLongError is a JSONL line longer than any record aipm writes.
	LineTooLongError = engine.LineTooLongError
	// UnsafePathError is a link or a non-regular file where the store expects a plain file
	// or directory.
	UnsafePathError = engine.UnsafePathError
	// TooLargeError is a file far larger than its kind ever is.
	TooLargeError = engine.TooLargeError
)

const (
	// TempDir is where atomic writes make their temp files, relative to .ai-pm.
	TempDir = engine.TempDir
	// JournalDir holds the change journal and the record of a send under way.
	JournalDir = engine.JournalDir
	// JournalPath is the change journal's path relative to .ai-pm.
	JournalPath = engine.JournalPath
	// IndexDir is where the index files live, relative to .ai-pm.
	IndexDir = engine.IndexDir
)

// ReadFile reads a file under .ai-pm the way the store does: no links followed, no
// special files, nothing over limit bytes.
func ReadFile(path string, limit int64) ([]byte, error) { return engine.ReadFile(path, limit) }

// OpenAppend opens a file under .ai-pm for appending the way the store does.
func OpenAppend(path string) (*os.File, error) {
	return engine.Open(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644, 0)
}

// EnsureDir makes a directory under .ai-pm, refusing links on the way.
func EnsureDir(dir string) error { return engine.EnsureDir(dir) }

// WriteFile replaces a file atomically the way the store does (temp file, fsync, rename):
// a link at the path is refused, never written through.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return engine.WriteAtomic(path, data, perm)
}

// MaxEntityFile is the size limit of one JSON entity file; the merge driver and
// `aipm resolve` apply it too.
const MaxEntityFile = engine.MaxEntityFile

// MaxJSONLFile is the size limit of one JSONL log the store reads; a sync round takes
// no larger one from a remote.
const MaxJSONLFile = engine.MaxJSONLFile

// MaxLine is the longest JSONL line the store reads (readers skip longer ones); a sync
// round takes no file holding a longer one from a remote.
func MaxLine() int { return engine.MaxLine }

// Locked runs fn holding the store lock, for commands that rewrite a store file outside
// the store's own operations (`aipm resolve`).
func (s *Store) Locked(fn func() error) error { return s.locked(fn) }

// OpenRead opens a file under .ai-pm for reading the way the store does.
func OpenRead(path string) (*os.File, error) { return engine.OpenRead(path, 0) }

// OpenFile opens a file under .ai-pm with flag and perm the way the store does.
func OpenFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	return engine.Open(path, flag, perm, 0)
}

// ScrubPaths rewrites the absolute paths of this machine's checkout in text that is
// committed (a blocked reason, a completion summary): the repository root becomes
// relative, and a sibling of it (an agent's worktree beside the repository) "../…". An
// agent's error message would otherwise put this machine's layout into every clone.
func (s *Store) ScrubPaths(text string) string {
	root := s.Root()
	if root == "" || !strings.Contains(text, string(filepath.Separator)) {
		return text
	}
	text = strings.ReplaceAll(text, root+string(filepath.Separator), "")
	if parent := filepath.Dir(root); parent != root && parent != string(filepath.Separator) {
		text = strings.ReplaceAll(text, parent+string(filepath.Separator), ".."+string(filepath.Separator))
	}
	return text
}
