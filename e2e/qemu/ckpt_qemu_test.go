package qemu

import (
	"strings"
	"testing"
	"time"
)

// TestCheckpointProjectQuotaQEMU (issue 21, "done when" 1, project quotas, and the writing pod on cgroup
// v2): in one boot of the QEMU guest, the capacity source's TestFSScraperCheckpointSeededProjectQuota,
// whose Debian kernel has the XFS and ext4 project quotas the CI host's kernel lacks: seeded checkpoint
// jobs saving into a directory under a project quota, on a loop-mounted XFS (-o prjquota) and ext4
// (-O quota,project), the writer in its own cgroup v2; the project directory's will_fail comes at least
// one cadence before the quota refuses a write (XFS: ENOSPC, ext4: EDQUOT) in at least 19 of 20 runs. And
// its TestFSScraperCheckpointWriterSeeded on cgroup v2 (the host has v1 blkio only): every fsync'd save
// learned is named by the checkpoint writer's cgroup or by none, at least 90 % by it, and every job's
// writer gauge and will_fail event name it; a few buffered jobs are logged beside. And
// TestCheckpointWriterNeverHasSysResource, which needs the guest's root (this host's has no
// CAP_SYS_RESOURCE): no thread of the writer writes past a quota. The guest program
// ckptguest prepares the guest and runs the package's test binary, built here.
func TestCheckpointProjectQuotaQEMU(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED QEMU TEST (ckptguest): -short")
	}
	prepareVM(t).runGuestPackageTest(t, "../internal/ckptguest", "../../receiver/diskhealthreceiver/internal/scraper/capacityscraper", "fs",
		"TestFSScraperCheckpointSeededProjectQuota|TestFSScraperCheckpointWriterSeeded|TestCheckpointWriterNeverHasSysResource", 30*time.Minute, func(line string) bool {
			return strings.Contains(line, "seed") || strings.Contains(line, "in time") || strings.Contains(line, "saves:") ||
				strings.Contains(line, "--- ")
		})
}
