//go:build !linux

package watch

func newSource(logf func(string, ...any)) (source, error) { return newFsnotifySource(logf) }
