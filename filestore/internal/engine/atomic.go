package engine

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// WriteAtomic replaces path with data so that a reader sees either the old or the new
// content, never a mix, and a crash leaves one of the two: temp file (in runtime/tmp, see
// below), fsync, rename, then fsync of the file's directory so the rename itself is
// durable. Under .ai-pm every step goes through the store's os.Root, so no rename of a
// directory meanwhile can carry the write outside the store.
func WriteAtomic(path string, data []byte, perm os.FileMode) error {
	return WriteAtomicThen(path, data, perm, nil)
}

// WriteAtomicThen is WriteAtomic that calls renamed, if not nil, right after the
// rename (before the directory's fsync) with the identity the file was given: the temp
// file's, taken before the rename (which keeps inode, size and modification time), so
// that it names this content even if someone changes the file right after. A file
// outside the store gets no call.
func WriteAtomicThen(path string, data []byte, perm os.FileMode, renamed func(os.FileInfo)) error {
	return writeAtomic(path, data, perm, renamed, false)
}

// WriteAtomicLazy is WriteAtomic without its two fsyncs: the file is replaced whole, as
// every reader sees it, and a killed process leaves the old or the new content, but a
// power cut may leave either until SyncFS. It is for many files written at once from
// content kept elsewhere (a sync round writes another clone's files, which Git holds),
// as `git checkout` writes a worktree: one SyncFS after the last makes them all durable,
// at the cost of one flush instead of two per file.
func WriteAtomicLazy(path string, data []byte, perm os.FileMode) error {
	return writeAtomic(path, data, perm, nil, true)
}

func writeAtomic(path string, data []byte, perm os.FileMode, renamed func(os.FileInfo), lazy bool) error {
	cp := filepath.Clean(path)
	b := StoreBase(cp)
	if b < 0 {
		return writeAtomicOutside(path, data, perm)
	}
	dir, _, err := StoreDir(filepath.Dir(cp), true)
	if err != nil {
		return err
	}
	name := filepath.Base(cp)
	if fi, err := dir.Lstat(name); err == nil && !fi.Mode().IsRegular() {
		return &UnsafePathError{Path: RelToRepo(path), Problem: KindOf(fi.Mode())}
	}
	store, rel, _, err := StoreRoot(cp, true)
	if err != nil {
		return err
	}
	// The temp file is made in runtime/tmp, which no watcher watches (UnwatchedDirs): its
	// creation, writes and rename would otherwise reach every watching process, while
	// only the rename into place is news. A store whose directories are on other
	// filesystems (a rename cannot cross them) gets it beside the file, as before.
	dirRel := filepath.Dir(rel)
	tmpRel := filepath.FromSlash(TempDir)
	tmp, _, err := StoreDir(filepath.Join(cp[:b], tmpRel), true)
	if err != nil || dirRel == tmpRel {
		tmp, tmpRel = dir, dirRel
	}
	err = writeAtomicVia(store, tmp, tmpRel, dir, rel, data, perm, renamed, lazy)
	if errors.Is(err, syscall.EXDEV) && tmpRel != dirRel {
		err = writeAtomicVia(store, dir, dirRel, dir, rel, data, perm, renamed, lazy)
	}
	return err
}

// TempDir is where WriteAtomic makes its temp files, relative to .ai-pm.
const TempDir = "runtime/tmp"

// writeAtomicVia is WriteAtomic with its temp file in the directory tmp (tmpRel from
// the store's root): write, fsync, rename to rel, call renamed (if not nil) with the temp
// file's identity, fsync rel's directory dir. lazy leaves out both fsyncs.
func writeAtomicVia(store, tmp *os.Root, tmpRel string, dir *os.Root, rel string, data []byte, perm os.FileMode, renamed func(os.FileInfo), lazy bool) (err error) {
	var f *os.File
	var name string
	for range 10 {
		name = "." + filepath.Base(rel) + "." + tempSuffix() + ".tmp"
		f, err = tmp.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|NoFollow, 0o600)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return err
	}
	fi, err := fillTempSync(f, data, perm, !lazy)
	if err != nil {
		tmp.Remove(name)
		return err
	}
	tf, err := heldDirFile(tmp)
	var df *os.File
	if err == nil {
		df, err = heldDirFile(dir)
	}
	if err != nil {
		tmp.Remove(name)
		return err
	}
	done, err := renameAt(tf, name, df, filepath.Base(rel))
	if !done {
		err = store.Rename(filepath.Join(tmpRel, name), rel)
	}
	if err != nil {
		tmp.Remove(name)
		return err
	}
	if renamed != nil {
		renamed(fi)
	}
	if lazy {
		return nil
	}
	return df.Sync()
}

// writeAtomicOutside is WriteAtomic for a file under no store (the machine
// directory, a config file of the repository).
func writeAtomicOutside(path string, data []byte, perm os.FileMode) (err error) {
	dir, base := filepath.Split(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return &UnsafePathError{Path: path, Problem: KindOf(fi.Mode())}
	}
	f, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	if _, err = fillTemp(f, data, perm); err != nil {
		os.Remove(tmp)
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return SyncDir(dir)
}

// fillTemp writes data to a new temp file, gives it perm, makes it durable and closes
// it: what both atomic writes do before the rename. f is closed whatever happens. It
// returns the file's identity once written.
func fillTemp(f *os.File, data []byte, perm os.FileMode) (os.FileInfo, error) {
	return fillTempSync(f, data, perm, true)
}

// fillTempSync is fillTemp that makes the file durable only when sync is set.
func fillTempSync(f *os.File, data []byte, perm os.FileMode, sync bool) (os.FileInfo, error) {
	_, err := f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil && sync {
		err = f.Sync()
	}
	var fi os.FileInfo
	if err == nil {
		fi, err = f.Stat()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return fi, err
}

func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// EncodeJSON is the one encoding of persisted entities: two-space indent, keys in struct
// order, trailing newline. Writing, reading and rewriting an entity gives identical bytes.
func EncodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// CleanTemp removes temp files left by writers killed between create and rename. Only files
// older than a minute go, so a concurrent writer's live temp file is never pulled away.
func CleanTemp(dir string, now time.Time) {
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(d.Name(), ".tmp") || !strings.HasPrefix(d.Name(), ".") {
			return nil
		}
		if info, err := d.Info(); err == nil && now.Sub(info.ModTime()) > time.Minute {
			os.Remove(path)
		}
		return nil
	})
}

// WriteJSON atomically writes v to path in the canonical encoding.
func WriteJSON(path string, v any, perm os.FileMode) error {
	return WriteJSONThen(path, v, perm, nil)
}

// WriteJSONThen is WriteJSON with a call right after the rename (WriteAtomicThen).
func WriteJSONThen(path string, v any, perm os.FileMode, renamed func(os.FileInfo)) error {
	data, err := EncodeJSON(v)
	if err != nil {
		return err
	}
	return WriteAtomicThen(path, data, perm, renamed)
}

// tempSuffix is 12 random hexadecimal digits, for a temp file's name.
func tempSuffix() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// CreateTemp makes a new file in the TempDir of the store at storeDir, for a caller that
// writes a large file as a stream and then puts it in place with InstallAtomic.
func CreateTemp(storeDir, pattern string) (*os.File, error) {
	dir := filepath.Join(storeDir, filepath.FromSlash(TempDir))
	if err := EnsureDir(dir); err != nil {
		return nil, err
	}
	return os.CreateTemp(dir, pattern)
}

// InstallAtomic replaces the file at path with tmp, a file CreateTemp made and its caller
// wrote, as WriteAtomic replaces a file with its own temp file: by one rename, through
// the store's directories, never through a link; the directory is synced.
func InstallAtomic(tmp, path string) error {
	cp := filepath.Clean(path)
	if StoreBase(cp) < 0 {
		return &UnsafePathError{Path: path, Problem: "not inside a store"}
	}
	dir, _, err := StoreDir(filepath.Dir(cp), true)
	if err != nil {
		return err
	}
	name := filepath.Base(cp)
	if fi, err := dir.Lstat(name); err == nil && !fi.Mode().IsRegular() {
		return &UnsafePathError{Path: RelToRepo(path), Problem: KindOf(fi.Mode())}
	}
	tdir, _, err := StoreDir(filepath.Dir(filepath.Clean(tmp)), false)
	if err != nil {
		return err
	}
	tf, err := heldDirFile(tdir)
	if err != nil {
		return err
	}
	df, err := heldDirFile(dir)
	if err != nil {
		return err
	}
	done, err := renameAt(tf, filepath.Base(tmp), df, name)
	if err != nil {
		return err
	}
	if !done { // no renameat here: by path, the directory checked just above
		if err := os.Rename(tmp, cp); err != nil {
			return err
		}
	}
	return df.Sync()
}
