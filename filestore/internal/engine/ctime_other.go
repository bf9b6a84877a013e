//go:build !linux

package engine

import "os"

// fileCtime is a file's status change time where the platform gives it; 0 here.
func FileCtime(fi os.FileInfo) int64 { return 0 }

// LstatStamp is the identity of the file at p and whether it is a regular file.
func LstatStamp(p string) (Stamp, bool, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return Stamp{}, false, err
	}
	return StampOf(fi), fi.Mode().IsRegular(), nil
}
