package filestore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/aipm/aipm/filestore/internal/engine"
)

// Files writes files of the store on behalf of a source of changes that is not one of
// the store's verbs — the state branch's sync merging what another clone did. It exists
// only inside Exclusive, so every write holds the store lock; each one replaces its file
// atomically (readers see the old file or the new, never a mix) and is noted in the change
// journal, so the caches of every process and the watchers that wake agents treat it
// exactly as a local write.
type Files struct {
	s *Store
	// Origin, if set, says which commit a file being replaced comes from: an agent that
	// arrives held (agent_trust.go) names it.
	Origin func(rel string) AgentOrigin
}

// Exclusive runs fn holding the store lock: no aipm process writes the store until it
// returns, so fn sees files that stand still (a commit of the state branch reads them)
// and may replace them through f.
func (s *Store) Exclusive(fn func(f *Files) error) error {
	return s.locked(func() error { return fn(&Files{s: s}) })
}

// checkRel refuses a path that is not a plain file path inside .ai-pm, or that names
// the machine-local runtime area: paths come from another clone, which is untrusted.
func checkRel(rel string) error {
	if rel == "" || strings.HasPrefix(rel, "/") || strings.Contains(rel, "\\") || path.Clean(rel) != rel ||
		rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return fmt.Errorf("%q is not a path inside %s", rel, DirName)
	}
	first, _, _ := strings.Cut(rel, "/")
	if first == "runtime" || first == ".git" {
		return fmt.Errorf("%s/%s is machine-local: another clone cannot write it", DirName, rel)
	}
	return nil
}

// AllowedSignersFile is the state's list of the keys that may sign its commits (Git's
// gpg.ssh.allowedSignersFile format), relative to .ai-pm; with
// settings.require_signed_state a sync round refuses commits not signed by one of them.
// A sync takes it in as a plain text file, merged line by line.
const AllowedSignersFile = "allowed_signers"

// StatePath says whether rel (slash-separated, relative to .ai-pm) is a file another
// clone may bring: one the on-disk format (doc.go) shares, by its place and name. A path
// from a remote is untrusted input, compared as Git compares paths on a case-insensitive
// system: any component that is .git or starts with it (a nested repository, a .gitignore
// that would make this clone publish its runtime area or stop sharing its tasks), a case
// variant of a reserved name, a control character, or any other place is refused, each
// with the reason. aipm's own .gitignore and .gitattributes are never taken from a remote.
func StatePath(rel string) error {
	for _, r := range rel {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("a control character in the path")
		}
	}
	if err := checkRel(rel); err != nil {
		return err
	}
	parts := strings.Split(rel, "/")
	for _, c := range parts {
		if strings.HasPrefix(strings.ToLower(c), ".git") {
			if len(parts) == 1 && (c == ".gitignore" || c == ".gitattributes") {
				return fmt.Errorf("aipm writes its own %s: never taken from a remote", c)
			}
			return fmt.Errorf("%q is Git's name: refused at any depth and in any case", c)
		}
	}
	if first := strings.ToLower(parts[0]); first == "runtime" || first == "journal" {
		return fmt.Errorf("%s/%s is machine-local: another clone cannot write it", DirName, rel)
	}
	switch {
	case rel == "project.json" || rel == "events.jsonl" || rel == AllowedSignersFile:
		return nil
	case len(parts) == 2 && strings.HasSuffix(parts[1], ".json") && validStateID(strings.TrimSuffix(parts[1], ".json")) &&
		(parts[0] == "tasks" || parts[0] == "conversations" || parts[0] == "delegations" || parts[0] == "executions" || parts[0] == "leases"):
		return nil
	case len(parts) == 3 && parts[0] == "agents" && ValidateAgentID(parts[1]) == nil &&
		(parts[2] == "agent.json" || parts[2] == "chat.jsonl" || parts[2] == "notifications.jsonl" || parts[2] == "reads.jsonl"):
		return nil
	}
	return fmt.Errorf("not a file of aipm's on-disk format (filestore/doc.go)")
}

// validStateID is an entity id or agent id as a file name: no case games, no dots but
// inner ones.
func validStateID(id string) bool {
	if id == "" || len(id) > 80 || strings.HasPrefix(id, ".") {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

// Read returns the current content of the file at rel (slash-separated, relative to
// .ai-pm); ok is false when there is none.
func (f *Files) Read(rel string) (data []byte, ok bool, err error) {
	if err := checkRel(rel); err != nil {
		return nil, false, err
	}
	data, err = engine.ReadFile(f.s.path(strings.Split(rel, "/")...), engine.MaxJSONLFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return data, true, nil
}

// Holds says whether the file at rel is data (ok: there is one) or, when !ok, that there
// is none — compared as it is read, without loading a large file whole.
func (f *Files) Holds(rel string, ok bool, data []byte) (bool, error) {
	if err := checkRel(rel); err != nil {
		return false, err
	}
	p := f.s.path(strings.Split(rel, "/")...)
	fi, err := engine.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return !ok, nil
	}
	if err != nil {
		return false, err
	}
	if !ok || !fi.Mode().IsRegular() || fi.Size() != int64(len(data)) {
		return false, nil
	}
	file, err := engine.Open(p, os.O_RDONLY, 0, engine.MaxJSONLFile)
	if err != nil {
		return false, err
	}
	defer file.Close()
	buf := make([]byte, min(len(data), 256<<10))
	for off := 0; off < len(data); {
		n, err := io.ReadFull(file, buf[:min(len(buf), len(data)-off)])
		if !bytes.Equal(buf[:n], data[off:off+n]) {
			return false, nil
		}
		if err != nil {
			return false, nil // shorter than it was a moment ago: changed
		}
		off += n
	}
	return true, nil
}

// Replace writes data as the file at rel, atomically, making its directories.
func (f *Files) Replace(rel string, data []byte) error {
	if err := checkRel(rel); err != nil {
		return err
	}
	if id := agentFileID(rel); id != "" {
		// Held before it can be seen: no coordinator may find it unheld.
		if err := f.noteArrival(id, data); err != nil {
			return fmt.Errorf("recording where agent %s came from: %w", id, err)
		}
	}
	if err := engine.WriteAtomic(f.s.path(strings.Split(rel, "/")...), data, 0o644); err != nil {
		return err
	}
	f.noted(rel)
	return nil
}

// ReplaceMany is Replace for many files at once, as a sync round writes another clone's
// changes: each file is replaced whole (engine.WriteAtomicLazy), and one flush of the
// filesystem after the last makes them durable, instead of two per file — at twenty
// thousand files, seconds instead of minutes under the store lock. errs[i] is the
// error of rels[i].
func (f *Files) ReplaceMany(rels []string, datas [][]byte) (errs []error) {
	errs = make([]error, len(rels))
	wrote := false
	for i, rel := range rels {
		if err := checkRel(rel); err != nil {
			errs[i] = err
			continue
		}
		if id := agentFileID(rel); id != "" {
			if err := f.noteArrival(id, datas[i]); err != nil {
				errs[i] = fmt.Errorf("recording where agent %s came from: %w", id, err)
				continue
			}
		}
		if errs[i] = engine.WriteAtomicLazy(f.s.path(strings.Split(rel, "/")...), datas[i], 0o644); errs[i] != nil {
			continue
		}
		wrote = true
		f.noted(rel)
	}
	if wrote {
		if err := engine.SyncFS(f.s.Dir()); err != nil {
			for i := range errs {
				if errs[i] == nil {
					errs[i] = err
				}
			}
		}
	}
	return errs
}

// Remove deletes the file at rel; a file already gone is no error.
func (f *Files) Remove(rel string) error {
	if err := checkRel(rel); err != nil {
		return err
	}
	p := f.s.path(strings.Split(rel, "/")...)
	if fi, err := engine.Lstat(p); err == nil && fi.IsDir() {
		return fmt.Errorf("%s is a directory, not a file", f.s.Rel(p))
	}
	if err := engine.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	f.noted(rel)
	return nil
}

// noted tells the other processes (the journal) and this one (its caches) that rel
// changed.
func (f *Files) noted(rel string) {
	f.s.eng.NoteWrite(rel)
	f.s.eng.MarkPath(rel)
}

// TempFile makes a file in the store's temp area for a large file written as a stream,
// which Files.Install then puts in place.
func (s *Store) TempFile() (*os.File, error) {
	return engine.CreateTemp(s.Dir(), ".merge.*.tmp")
}

// Install replaces the file at rel with tmp (from TempFile), atomically.
func (f *Files) Install(rel, tmp string) error {
	if err := checkRel(rel); err != nil {
		return err
	}
	if agentFileID(rel) != "" {
		return fmt.Errorf("%s is an agent's file: written with Replace", rel)
	}
	if err := engine.InstallAtomic(tmp, f.s.path(strings.Split(rel, "/")...)); err != nil {
		return err
	}
	f.noted(rel)
	return nil
}

// Extends says whether the file at rel still begins with a version of size bytes that
// ended with tail (an append-only log checked cheaply: its end, not its whole), and, if
// so, copies to w what was appended after it.
func (f *Files) Extends(rel string, size int64, tail []byte, w io.Writer) (bool, error) {
	if err := checkRel(rel); err != nil {
		return false, err
	}
	p := f.s.path(strings.Split(rel, "/")...)
	fi, err := engine.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return size == 0, nil
	}
	if err != nil || !fi.Mode().IsRegular() || fi.Size() < size {
		return false, err
	}
	file, err := engine.Open(p, os.O_RDONLY, 0, engine.MaxJSONLFile)
	if err != nil {
		return false, err
	}
	defer file.Close()
	got := make([]byte, len(tail))
	if _, err := file.ReadAt(got, size-int64(len(tail))); err != nil || !bytes.Equal(got, tail) {
		return false, nil
	}
	if _, err := file.Seek(size, io.SeekStart); err != nil {
		return false, err
	}
	_, err = io.Copy(w, file)
	return err == nil, err
}
