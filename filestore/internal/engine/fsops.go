package engine

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// The plain file operations the domain needs beside reading, appending and replacing
// files: looking at a path, listing a directory, removing and renaming, making a
// directory, and the few writes that are not an entity's (caches, a key made once).
// Under a store, a listing, a removal and a rename go through the store's held
// directories, like every open: no link on the way is followed.

// Lstat is os.Lstat: it looks at the link itself, never where it points. It is the
// cheap look of the hot paths (is a session's file still the one read?), so it does not
// check the directories on the way; what it finds decides no write.
func Lstat(path string) (fs.FileInfo, error) { return os.Lstat(path) }

// Exists tells whether anything, a link included, is at path.
func Exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// Missing tells whether nothing is at path (an error other than "not there", such as a
// permission, is not missing).
func Missing(path string) bool {
	_, err := os.Lstat(path)
	return errors.Is(err, fs.ErrNotExist)
}

// StatFollow is os.Stat, following links: for files outside any store that are reached
// by links as a rule, such as a program found on PATH.
func StatFollow(path string) (fs.FileInfo, error) { return os.Stat(path) }

// OpenFollow opens a file outside any store for reading, following links (a program
// found on PATH, to hash it).
func OpenFollow(path string) (*os.File, error) {
	if StoreBase(filepath.Clean(path)) >= 0 {
		return OpenRead(path, 0)
	}
	return os.Open(path)
}

// ReadDir lists dir by name, as os.ReadDir. Under a store, the directories from .ai-pm
// down to dir are checked first to be real directories, not links; a listing reads names
// and types only, so the instant between the check and the read is left open. (Listed
// through the held directory instead, os.File.ReadDir made an lstat per entry here:
// 60 sessions listed in 166 µs instead of 123, BenchmarkSessions.)
func ReadDir(dir string) ([]fs.DirEntry, error) {
	if _, ok, err := StoreDir(dir, false); ok && err != nil {
		return nil, err
	}
	return os.ReadDir(dir)
}

// ReadDirNames lists the names in dir, unsorted: the cheapest listing, for a directory
// of thousands of files whose names alone are wanted.
func ReadDirNames(dir string) ([]string, error) {
	root, ok, err := StoreDir(dir, false)
	var f *os.File
	switch {
	case !ok:
		f, err = os.Open(dir)
	case err == nil:
		f, err = root.Open(".")
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// Remove removes the file or empty directory at path, as os.Remove; under a store,
// through its held directory.
func Remove(path string) error {
	cp := filepath.Clean(path)
	dir, ok, err := StoreDir(filepath.Dir(cp), false)
	if !ok {
		return os.Remove(path)
	}
	if err != nil {
		return err
	}
	return dir.Remove(filepath.Base(cp))
}

// Rename renames from to to, as os.Rename. Two paths under one store are renamed
// through the store's root, so neither can resolve outside it.
func Rename(from, to string) error {
	rootFrom, relFrom, okFrom, err := StoreRoot(from, false)
	if err != nil {
		return err
	}
	rootTo, relTo, okTo, err := StoreRoot(to, false)
	if err != nil {
		return err
	}
	if okFrom && okTo && rootFrom == rootTo {
		return rootFrom.Rename(relFrom, relTo)
	}
	return os.Rename(from, to)
}

// MkdirAll makes dir and the directories above it. Under a store each is checked not to
// be a link (EnsureDir); elsewhere (a machine's directory) they are made with perm.
func MkdirAll(dir string, perm os.FileMode) error {
	if StoreBase(filepath.Clean(dir)) >= 0 {
		return EnsureDir(dir)
	}
	return os.MkdirAll(dir, perm)
}

// PrivateDir makes dir (and the directories above it) for this user alone: a real
// directory, owned by this user, and unreadable by others (its mode is narrowed to 0700
// if it was wider).
func PrivateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return &UnsafePathError{Path: dir, Problem: KindOf(fi.Mode())}
	}
	if uid, ok := OwnerOf(fi); ok && uid != os.Getuid() {
		return &ForeignOwnerError{Path: dir, UID: uid}
	}
	if fi.Mode().Perm()&0o077 != 0 {
		os.Chmod(dir, 0o700)
	}
	return nil
}

// ForeignOwnerError is a directory that should be this user's and belongs to another.
type ForeignOwnerError struct {
	Path string
	UID  int
}

func (e *ForeignOwnerError) Error() string {
	return fmt.Sprintf("%s belongs to user %d, not to you", e.Path, e.UID)
}

// WriteCache writes a file that is only a cache of what other files say, in place and
// not durably: a reader must check what it reads (a cut-short or missing file costs a
// rebuild, never a wrong answer).
func WriteCache(path string, data []byte, perm os.FileMode) error {
	f, err := Open(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm, 0)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// ReplaceQuick replaces path with data atomically (a temp file beside it, renamed over
// it) but not durably: a reader sees the old content or the new one; a crash may lose
// the new one. For small files rewritten on every call, such as a session's usage.
func ReplaceQuick(path string, data []byte, perm os.FileMode) error {
	return WriteStreamed(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteStreamed replaces path atomically with what write writes, as it writes it (a temp
// file beside it, renamed over it), without an fsync: for index files, which carry a
// checksum that catches a cut, written as they are made so that they are not held twice.
func WriteStreamed(path string, perm os.FileMode, write func(w io.Writer) error) error {
	dir, base := filepath.Split(path)
	if err := MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // after the rename, nothing
	err = write(f)
	if err == nil {
		err = f.Chmod(perm)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// CreateOnce makes a new file at path holding data, durably and whole, unless one is
// there already: the file appears by link(2), which never replaces, so two processes
// making it at once agree on one. It is not an error that one was there.
func CreateOnce(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := fillTemp(tmp, data, perm); err != nil {
		return err
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return SyncDir(filepath.Dir(path))
}
