//go:build !unix

package engine

import "io/fs"

// ownerOf returns the user id owning a file, ok false where the platform has none.
func OwnerOf(fi fs.FileInfo) (uid int, ok bool) { return 0, false }

// linkCount returns how many names (hard links) a file has.
func LinkCount(fs.FileInfo) (uint64, bool) { return 0, false }
