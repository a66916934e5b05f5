//go:build linux

// Command cgwbguest runs inside the QEMU guest of e2e's TestCgroupWritebackQEMU: it loads ext4 and
// mounts the cgroup v2 hierarchy, which the per-cgroup latency probe's
// TestCgroupWritebackChargedToOwner needs, and runs that test from the biolat package's test binary,
// /test/biolat.test, its output on this program's and its exit status this program's.
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/diskhealth/diskhealth/e2e/internal/guestrx"
)

// hangAfter is well past the test's 10–15 s and before the host's 5-minute timeout.
const hangAfter = 3 * time.Minute

func main() {
	// ext4 and what it needs; null_blk (its parameters are other guests') and XFS (seconds to insert
	// under TCG) are not needed.
	if err := guestrx.LoadExtraModules("null_blk.ko", "xfs.ko"); err != nil {
		fmt.Println("cgwbguest:", err)
		os.Exit(2)
	}
	if err := guestrx.MountCgroup2(); err != nil {
		fmt.Println("cgwbguest:", err)
		os.Exit(2)
	}
	if err := guestrx.RunPackageTest("/test/biolat.test", "TestCgroupWritebackChargedToOwner", hangAfter); err != nil {
		fmt.Println("cgwbguest:", err)
		os.Exit(1)
	}
}
