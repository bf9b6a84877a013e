//go:build !linux

package watch

import "io/fs"

// leafDir is false where the link count of a directory says nothing of its
// subdirectories: every directory is listed.
func leafDir(fs.FileInfo) bool { return false }
