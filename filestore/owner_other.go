//go:build !unix

package filestore

import "io/fs"

// ownerOf returns the user id owning a file, ok false where the platform has none.
func ownerOf(fi fs.FileInfo) (uid int, ok bool) { return 0, false }

// linkCount returns how many names (hard links) a file has.
func linkCount(fs.FileInfo) (uint64, bool) { return 0, false }
