//go:build !linux

package engine

import "os"

// renameAt is not available here: the caller renames through the store's root.
func renameAt(from *os.File, fromName string, to *os.File, toName string) (ok bool, err error) {
	return false, nil
}
