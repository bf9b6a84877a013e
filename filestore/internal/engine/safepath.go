package engine

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// A cloned repository is untrusted input: everything under .ai-pm may come from a
// stranger's commit. The store therefore never follows a link there. Every open for
// reading, appending or replacing goes through an os.Root of the .ai-pm directory, so it
// resolves inside the store by construction, whatever is renamed meanwhile; within it,
// each directory down to the file is checked with Lstat (to name a link in the error) and
// the file is opened with O_NOFOLLOW, then checked to be a regular file of a sane size,
// and, when it is written in place, to have no other hard link.

// Size limits by kind of file. A file over its limit is refused, never read into memory.
const (
	MaxEntityFile = 4 << 20   // one JSON entity (task, agent, conversation, ...)
	MaxJSONLFile  = 256 << 20 // a JSONL log (mailbox, events, notifications)
)

// UnsafePathError is a link or a non-regular file where the store expects a plain file or
// directory.
type UnsafePathError struct {
	Path    string
	Problem string
}

func (e *UnsafePathError) Error() string {
	return fmt.Sprintf("%s is %s: aipm never follows links or opens special files under %s; remove it (git rm it if it is committed) and run `aipm doctor`", e.Path, e.Problem, DirName)
}

// TooLargeError is a file far larger than its kind ever is.
type TooLargeError struct {
	Path  string
	Size  int64
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is %d bytes, over the %d-byte limit for such a file: it is refused rather than read into memory; inspect it and move it out of %s", e.Path, e.Size, e.Limit, DirName)
}

// StoreBase returns the index in path just past its last ".ai-pm" component, or -1 when
// the path is not under a store directory.
func StoreBase(path string) int {
	sep := string(filepath.Separator)
	marker := sep + DirName
	i := strings.LastIndex(path, marker+sep)
	if i < 0 {
		if strings.HasSuffix(path, marker) {
			return len(path)
		}
		return -1
	}
	return i + len(marker)
}

func KindOf(mode fs.FileMode) string {
	switch {
	case mode&fs.ModeSymlink != 0:
		return "a symbolic link"
	case mode.IsDir():
		return "a directory"
	case mode&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case mode&fs.ModeSocket != 0:
		return "a socket"
	case mode&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file"
}

// StoreRoot opens the .ai-pm directory holding path as an os.Root, or finds it held
// open (heldRoots: the caller must not close it), and returns the path relative to it.
// Every access below then resolves inside the directory by construction (openat under
// the hood): a directory swapped for a link between a check and an open cannot carry the
// access outside. The .ai-pm directory itself must be a real
// directory, and the one opened must be the one checked (a swap of .ai-pm itself in that
// instant is refused). ok is false for a path under no store.
func StoreRoot(path string, create bool) (root *os.Root, rel string, ok bool, err error) {
	path = filepath.Clean(path)
	b := StoreBase(path)
	if b < 0 {
		return nil, "", false, nil
	}
	dir := path[:b]
	rel = strings.TrimPrefix(path[b:], string(filepath.Separator))
	if rel == "" {
		rel = "."
	}
	id, err := lstatDir(dir)
	if errors.Is(err, fs.ErrNotExist) && create {
		// Mkdir makes the last component itself, never through a link.
		if err = os.Mkdir(dir, 0o755); err == nil || errors.Is(err, fs.ErrExist) {
			id, err = lstatDir(dir)
		}
	}
	if err != nil {
		return nil, "", true, err
	}
	if !id.isDir() {
		return nil, "", true, &UnsafePathError{Path: RelToRepo(dir), Problem: id.kind()}
	}
	heldRoots.Lock()
	h, held := heldRoots.m[dir]
	heldRoots.Unlock()
	if held && id.same(h.id) {
		return h.root, rel, true, nil
	}
	root, err = os.OpenRoot(dir)
	if err != nil {
		return nil, "", true, err
	}
	got, err := root.Stat(".")
	if err != nil || !id.same(dirIDOf(got)) {
		root.Close()
		return nil, "", true, &UnsafePathError{Path: RelToRepo(dir), Problem: "replaced while it was opened (a directory swapped for a link)"}
	}
	heldRoots.Lock()
	if len(heldRoots.m) >= maxHeldRoots {
		clear(heldRoots.m)
	}
	heldRoots.m[dir] = heldRoot{root: root, id: dirIDOf(got)}
	heldRoots.Unlock()
	return root, rel, true, nil
}

// heldRoots are the .ai-pm directories this process opened as os.Roots, by path, each
// with the identity it had when opened. They stay open, so that a file access does not
// open, stat and close the store's directory every time. One is used only while a Lstat
// of its path finds that identity (device and inode): held open, its inode cannot be
// freed and given to a directory made anew, so the identity cannot match another
// directory. A replaced or dropped one is not closed, as another goroutine's access may
// be using it; the garbage collector closes it once none is.
var heldRoots = struct {
	sync.Mutex
	m map[string]heldRoot
}{m: map[string]heldRoot{}}

type heldRoot struct {
	root *os.Root
	id   dirID
}

// maxHeldRoots bounds heldRoots: a process that opens many stores in turn (a test
// binary) drops them all past it and starts again.
const maxHeldRoots = 64

// StoreDir returns the directory dir (a store's .ai-pm or a directory below it) as
// an os.Root for opening the files directly in it, held open (heldDirs: the caller must
// not close it); ok is false for a directory under no store. Each directory from .ai-pm
// down to dir is checked with one Lstat inside its parent's held root (no link is
// followed) and must be a real directory, made with create when missing; a held root is
// used only while that Lstat finds the identity it was opened with (see heldRoots). An
// access to agents/<id>/chat.jsonl then costs a stat per directory and one open, where an
// open through the store's root opens and closes each directory on the way.
func StoreDir(dir string, create bool) (root *os.Root, ok bool, err error) {
	dir = filepath.Clean(dir)
	b := StoreBase(dir)
	if b < 0 {
		return nil, false, nil
	}
	if b == len(dir) {
		root, _, _, err := StoreRoot(dir, create)
		return root, true, err
	}
	parent, _, err := StoreDir(filepath.Dir(dir), create)
	if err != nil {
		return nil, true, err
	}
	name := filepath.Base(dir)
	id, err := lstatIn(parent, name)
	if errors.Is(err, fs.ErrNotExist) && create {
		if err = parent.Mkdir(name, 0o755); err == nil || errors.Is(err, fs.ErrExist) {
			id, err = lstatIn(parent, name)
		}
	}
	if err != nil {
		return nil, true, err
	}
	if !id.isDir() {
		return nil, true, &UnsafePathError{Path: RelToRepo(dir), Problem: id.kind()}
	}
	heldDirs.Lock()
	h, held := heldDirs.m[dir]
	heldDirs.Unlock()
	if held && id.same(h.id) {
		return h.root, true, nil
	}
	sub, err := parent.OpenRoot(name)
	if err != nil {
		return nil, true, err
	}
	got, err := sub.Stat(".")
	if err != nil || !id.same(dirIDOf(got)) {
		sub.Close()
		if err != nil {
			return nil, true, err
		}
		return nil, true, &UnsafePathError{Path: RelToRepo(dir), Problem: "replaced while it was opened (a directory swapped for a link)"}
	}
	heldDirs.Lock()
	if len(heldDirs.m) >= maxHeldDirs {
		clear(heldDirs.m)
	}
	heldDirs.m[dir] = heldRoot{root: sub, id: dirIDOf(got)}
	heldDirs.Unlock()
	return sub, true, nil
}

// heldDirFile returns the directory root (a held one) itself as an open file, for renames
// into it and for fsyncs of it, opened once per root.
func heldDirFile(root *os.Root) (*os.File, error) {
	dirFiles.Lock()
	f := dirFiles.m[root]
	dirFiles.Unlock()
	if f != nil {
		return f, nil
	}
	f, err := root.Open(".")
	if err != nil {
		return nil, err
	}
	dirFiles.Lock()
	if len(dirFiles.m) >= 2*maxHeldDirs {
		clear(dirFiles.m) // the garbage collector closes them once unused
	}
	dirFiles.m[root] = f
	dirFiles.Unlock()
	return f, nil
}

var dirFiles = struct {
	sync.Mutex
	m map[*os.Root]*os.File
}{m: map[*os.Root]*os.File{}}

// heldDirs are the directories below a store's .ai-pm this process opened as os.Roots
// (StoreDir), by path, kept as heldRoots keeps the store directories.
var heldDirs = struct {
	sync.Mutex
	m map[string]heldRoot
}{m: map[string]heldRoot{}}

// maxHeldDirs bounds heldDirs: a store has a few dozen directories one process opens
// files in (one per agent, and runtime's); past it, all are dropped and opened again.
const maxHeldDirs = 256

// CheckDirs verifies that the .ai-pm directory and every directory below it down to dir
// are real directories. With create, missing ones are made (one level at a time, so a
// link is never followed to make them); without, a missing one is os.ErrNotExist.
func CheckDirs(dir string, create bool) error {
	_, ok, err := StoreDir(dir, create)
	if !ok && create {
		return os.MkdirAll(dir, 0o755)
	}
	return err
}

// RelToRepo names a path from the repository root (the directory holding .ai-pm).
func RelToRepo(p string) string {
	if b := StoreBase(p); b >= 0 {
		return filepath.ToSlash(p[b-len(DirName):])
	}
	return p
}

// Open opens path with flag, refusing links and non-regular files at the path and in
// the directories between .ai-pm and it. limit > 0 refuses a file larger than limit. A
// path under .ai-pm is opened through the store's os.Root, so it cannot resolve outside
// the store whatever is renamed meanwhile.
func Open(path string, flag int, perm os.FileMode, limit int64) (*os.File, error) {
	f, _, err := OpenInfo(path, flag, perm, limit)
	return f, err
}

// OpenInfo is Open that also returns what the open file's stat said.
func OpenInfo(path string, flag int, perm os.FileMode, limit int64) (*os.File, os.FileInfo, error) {
	if h := openHook.Load(); h != nil {
		(*h)(path)
	}
	var f *os.File
	cp := filepath.Clean(path)
	b := StoreBase(cp)
	inStore := b >= 0
	if inStore {
		if b == len(cp) {
			return nil, nil, &UnsafePathError{Path: RelToRepo(path), Problem: KindOf(fs.ModeDir)}
		}
		dir, _, err := StoreDir(filepath.Dir(cp), flag&os.O_CREATE != 0)
		if err != nil {
			return nil, nil, err
		}
		name := filepath.Base(cp)
		f, err = dir.OpenFile(name, flag|NoFollow, perm)
		if err != nil {
			// Nothing there (no link either: a link is refused with ELOOP) needs no look.
			if errors.Is(err, fs.ErrNotExist) {
				return nil, nil, err
			}
			if fi, lerr := dir.Lstat(name); lerr == nil && !fi.Mode().IsRegular() {
				return nil, nil, &UnsafePathError{Path: RelToRepo(path), Problem: KindOf(fi.Mode())}
			}
			return nil, nil, err
		}
	} else {
		if flag&os.O_CREATE != 0 {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return nil, nil, err
			}
		}
		var err error
		f, err = os.OpenFile(path, flag|NoFollow, perm)
		if err != nil {
			if fi, lerr := os.Lstat(path); lerr == nil && !fi.Mode().IsRegular() {
				return nil, nil, &UnsafePathError{Path: RelToRepo(path), Problem: KindOf(fi.Mode())}
			}
			return nil, nil, err
		}
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, &UnsafePathError{Path: RelToRepo(path), Problem: KindOf(fi.Mode())}
	}
	// A file aipm appends to or rewrites in place must be its own: a hard link would carry
	// the write to a file elsewhere (a link to a file outside the store).
	if flag&(os.O_WRONLY|os.O_RDWR) != 0 && inStore {
		if n, ok := LinkCount(fi); ok && n > 1 {
			f.Close()
			return nil, nil, &UnsafePathError{Path: RelToRepo(path), Problem: fmt.Sprintf("a hard link (%d names for one file)", n)}
		}
	}
	if limit > 0 && fi.Size() > limit {
		f.Close()
		return nil, nil, &TooLargeError{Path: RelToRepo(path), Size: fi.Size(), Limit: limit}
	}
	return f, fi, nil
}

// OpenRead opens a store file for reading (see Open).
func OpenRead(path string, limit int64) (*os.File, error) {
	return Open(path, os.O_RDONLY, 0, limit)
}

// ReadFile is os.ReadFile through Open.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, fi, err := OpenInfo(path, os.O_RDONLY, 0, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Room for the size the file had when opened and a byte more to meet its end (as
	// os.ReadFile): one allocation and two reads for a file nobody is changing.
	r := io.LimitReader(f, limit+1)
	data := make([]byte, 0, min(fi.Size(), limit)+1)
	for {
		n, err := r.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return nil, err
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)] // it grew meanwhile
		}
	}
}

// EnsureDir is os.MkdirAll for directories under .ai-pm, refusing links on the way.
func EnsureDir(dir string) error { return CheckDirs(dir, true) }
