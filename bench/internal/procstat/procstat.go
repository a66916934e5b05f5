// Package procstat reads a process's CPU time and resident memory from /proc for the whole-process
// measurements (cmd/footprint, cmd/scrapecost).
package procstat

import (
	"errors"
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

// Resident is a process's resident memory split by what backs it (/proc/<pid>/status).
type Resident struct {
	RSS  int64 // VmRSS: Anon + File + Shmem
	Anon int64 // RssAnon: the Go heap, stacks and the runtime's own mappings
	File int64 // RssFile: pages of mapped files, for a static Go binary its text, rodata and pclntab
}

// Memory reads pid's resident memory and its anonymous and file-backed parts. The split matters for a
// collector: a 128 MB binary keeps tens of MiB of its own text resident (clean pages the kernel can drop
// and that processes running the same binary share), which VmRSS alone cannot tell from the heap.
func Memory(pid int) (Resident, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Resident{}, err
	}
	return parseStatus(string(status))
}

func parseStatus(status string) (Resident, error) {
	var m Resident
	fields := map[string]*int64{"VmRSS:": &m.RSS, "RssAnon:": &m.Anon, "RssFile:": &m.File}
	for line := range strings.Lines(status) {
		for prefix, dst := range fields {
			v, ok := strings.CutPrefix(line, prefix)
			if !ok {
				continue
			}
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return Resident{}, fmt.Errorf("%s %q: %w", prefix, v, err)
			}
			*dst = kb << 10
		}
	}
	if m.RSS == 0 {
		return Resident{}, errors.New("no VmRSS in status")
	}
	return m, nil
}
