package coordinator

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// groupCPU is the CPU time the processes of the process group pgid have used: each live
// member's own and that of the children it has reaped (a build a shell ran, say). ok is
// false when the system does not tell.
func groupCPU(pgid int) (cpu time.Duration, ok bool) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	var ticks int64
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		group, used, ok := parseStat(string(data))
		if ok && group == pgid {
			ticks += used
		}
	}
	// Clock ticks are hundredths of a second on Linux (USER_HZ).
	return time.Duration(ticks) * 10 * time.Millisecond, true
}

// parseStat reads the process group and the CPU ticks (utime, stime, cutime, cstime)
// from a /proc/<pid>/stat line. The command name, in parentheses, may hold anything: the
// fields are counted after its last ')'.
func parseStat(line string) (pgrp int, ticks int64, ok bool) {
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(line[i+1:])
	// f[0] is the state (field 3): pgrp is field 5, utime..cstime fields 14..17.
	if len(f) < 15 {
		return 0, 0, false
	}
	pgrp, err := strconv.Atoi(f[2])
	if err != nil {
		return 0, 0, false
	}
	for _, s := range f[11:15] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		ticks += n
	}
	return pgrp, ticks, true
}
