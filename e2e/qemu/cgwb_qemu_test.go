package qemu

import (
	"strings"
	"testing"
	"time"
)

// TestCgroupWritebackQEMU (issue 22, "done when" 1): the per-cgroup latency probe's
// TestCgroupWritebackChargedToOwner in the QEMU guest, the only cgroup v2 hierarchy with the io
// controller here (Debian's 6.1 kernel, so the probe's block_rq_issue owner path): buffered writes from
// cgroup A, flushed by writeback, are ≥ 99 % A's by the bio's owner, the histograms equal io.stat
// (the issue asks within 1 %), and the PID-based attribution of the same writes, logged beside it, has them on the
// flusher's root cgroup. The guest program cgwbguest prepares the guest and runs the package's test
// binary, built here.
func TestCgroupWritebackQEMU(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED QEMU TEST (cgwbguest): -short")
	}
	prepareVM(t).runGuestPackageTest(t, "../internal/cgwbguest", "../../receiver/diskhealthreceiver/internal/biolat", "biolat",
		"TestCgroupWritebackChargedToOwner", 5*time.Minute, func(line string) bool {
			return strings.Contains(line, "io.stat") || strings.Contains(line, "write completions") || strings.Contains(line, "--- ")
		})
}
