package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestCheckpointProjectQuotaQEMU (issue 21, "done when" 1, project quotas): the filesystem source's
// TestFSScraperCheckpointSeededProjectQuota in the QEMU guest, whose Debian kernel has the XFS and ext4
// project quotas the CI host's kernel lacks: seeded checkpoint jobs saving into a directory under a
// project quota, on a loop-mounted XFS (-o prjquota) and ext4 (-O quota,project), the writer in its own
// cgroup v2; the project directory's will_fail comes at least one cadence before the quota refuses a
// write (XFS: ENOSPC, ext4: EDQUOT) in at least 19 of 20 runs. The guest program ckptguest prepares the
// guest and runs the package's test binary, built here.
func TestCheckpointProjectQuotaQEMU(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED QEMU TEST (ckptguest): -short")
	}
	prepareVM(t).runGuestPackageTest(t, "./internal/ckptguest", "../receiver/diskhealthreceiver/internal/scraper/filesystemscraper", "fs",
		"TestFSScraperCheckpointSeededProjectQuota", 20*time.Minute, func(line string) bool {
			return strings.Contains(line, "seed") || strings.Contains(line, "in time")
		})
}
