//go:build !linux

package engine

import "os"

// dirID is what the checks of a store's directories compare: the entry's FileInfo,
// compared with os.SameFile.
type dirID struct{ fi os.FileInfo }

func (a dirID) same(b dirID) bool { return a.fi != nil && b.fi != nil && os.SameFile(a.fi, b.fi) }

func (a dirID) isDir() bool { return a.fi != nil && a.fi.IsDir() }

func (a dirID) kind() string { return KindOf(a.fi.Mode()) }

func dirIDOf(fi os.FileInfo) dirID { return dirID{fi} }

func lstatDir(p string) (dirID, error) {
	fi, err := os.Lstat(p)
	return dirID{fi}, err
}

func lstatIn(parent *os.Root, name string) (dirID, error) {
	fi, err := parent.Lstat(name)
	return dirID{fi}, err
}
