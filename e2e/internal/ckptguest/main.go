//go:build linux

// Command ckptguest runs inside the QEMU guest of e2e's TestCheckpointProjectQuotaQEMU: it prepares what
// the filesystem source's TestFSScraperCheckpointSeededProjectQuota needs (the XFS, ext4, quota format and
// loop modules, a tmpfs for its images, the cgroup v2 hierarchy for its writer) and runs that test from
// the package's test binary, /test/fs.test, its output on this program's and its exit status this
// program's.
package main

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/diskhealth/diskhealth/e2e/internal/guestrx"
)

// hangAfter is well past a run's 4–6 minutes of VM time (TCG, a loaded two-core host) and before the
// host's timeout.
const hangAfter = 10 * time.Minute

func main() {
	if err := prepare(); err != nil {
		fmt.Println("ckptguest:", err)
		os.Exit(2)
	}
	if err := guestrx.RunPackageTest("/test/fs.test", "TestFSScraperCheckpointSeededProjectQuota", hangAfter); err != nil {
		fmt.Println("ckptguest:", err)
		os.Exit(1)
	}
}

func prepare() error {
	if err := guestrx.LoadExtraModules("null_blk.ko"); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", "/tmp", "tmpfs", 0, "size=900m"); err != nil {
		return fmt.Errorf("mount tmpfs /tmp: %w", err)
	}
	return guestrx.MountCgroup2()
}
