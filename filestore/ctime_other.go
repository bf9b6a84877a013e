//go:build !linux

package filestore

import "os"

// fileCtime is a file's status change time where the platform gives it; 0 here.
func fileCtime(fi os.FileInfo) int64 { return 0 }

// lstatStamp is the identity of the file at p and whether it is a regular file.
func lstatStamp(p string) (stamp, bool, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return stamp{}, false, err
	}
	return stampOf(fi), fi.Mode().IsRegular(), nil
}
