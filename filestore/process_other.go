//go:build !unix

package filestore

// processAlive cannot check other processes on this platform; the session lease alone
// decides liveness there.
func processAlive(pid int, start string) bool { return pid > 0 }

func processStart(pid int) string { return "" }
