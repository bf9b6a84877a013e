//go:build !linux

package coordinator

import "time"

// groupCPU is not known here: only tool calls and output are signs of life.
func groupCPU(pgid int) (time.Duration, bool) { return 0, false }
