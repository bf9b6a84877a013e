//go:build linux

package engine

import (
	"io/fs"
	"os"
	"syscall"
)

// dirID is what the checks of a store's directories compare (StoreRoot,
// StoreDir): device, inode and file type. The check of .ai-pm itself, made by every
// access to a file under it, reads them into a Stat_t on the stack rather than into an
// os.FileInfo allocated per check.
type dirID struct {
	dev, ino uint64
	mode     uint32
}

func (a dirID) same(b dirID) bool { return a.dev == b.dev && a.ino == b.ino }

func (a dirID) isDir() bool { return a.mode&syscall.S_IFMT == syscall.S_IFDIR }

// kind names what the entry is, for an UnsafePathError.
func (a dirID) kind() string {
	var m fs.FileMode
	switch a.mode & syscall.S_IFMT {
	case syscall.S_IFLNK:
		m = fs.ModeSymlink
	case syscall.S_IFDIR:
		m = fs.ModeDir
	case syscall.S_IFIFO:
		m = fs.ModeNamedPipe
	case syscall.S_IFSOCK:
		m = fs.ModeSocket
	case syscall.S_IFBLK, syscall.S_IFCHR:
		m = fs.ModeDevice
	}
	return KindOf(m)
}

func dirIDOfStat(st *syscall.Stat_t) dirID {
	return dirID{dev: uint64(st.Dev), ino: st.Ino, mode: st.Mode}
}

// dirIDOf is the identity of an opened directory's FileInfo.
func dirIDOf(fi os.FileInfo) dirID {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return dirIDOfStat(st)
	}
	return dirID{}
}

// lstatDir is os.Lstat(p) as a dirID.
func lstatDir(p string) (dirID, error) {
	var st syscall.Stat_t
	for {
		err := syscall.Lstat(p, &st)
		if err == nil {
			return dirIDOfStat(&st), nil
		}
		if err != syscall.EINTR {
			return dirID{}, &fs.PathError{Op: "lstat", Path: p, Err: err}
		}
	}
}

// lstatIn is parent.Lstat(name) as a dirID.
func lstatIn(parent *os.Root, name string) (dirID, error) {
	fi, err := parent.Lstat(name)
	if err != nil {
		return dirID{}, err
	}
	return dirIDOf(fi), nil
}
