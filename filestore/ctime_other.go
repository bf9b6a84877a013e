//go:build !linux

package filestore

import "os"

// fileCtime is a file's status change time where the platform gives it; 0 here.
func fileCtime(fi os.FileInfo) int64 { return 0 }
