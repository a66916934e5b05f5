// Package procstat reads a process's CPU time from /proc for the whole-process measurements
// (cmd/footprint, cmd/scrapecost).
package procstat

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// SchedCPU sums the time on CPU of every thread of pid (/proc/<pid>/task/*/schedstat, first field, in
// nanoseconds: /proc/<pid>/stat's 10 ms ticks cannot see a 1 ms scrape).
func SchedCPU(pid int) (time.Duration, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		return 0, fmt.Errorf("no schedstat for %d", pid)
	}
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // a thread that just exited
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return 0, fmt.Errorf("%s: empty", t)
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", t, err)
		}
		sum += time.Duration(ns)
	}
	return sum, nil
}
