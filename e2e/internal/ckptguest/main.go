//go:build linux

// Command ckptguest runs inside the QEMU guest of e2e's TestCheckpointProjectQuotaQEMU: it prepares what
// the filesystem source's TestFSScraperCheckpointSeededProjectQuota and TestFSScraperCheckpointWriterSeeded
// need (the XFS, ext4, quota format and loop modules, a tmpfs for their images, the cgroup v2 hierarchy
// for their writers; each test enables the controllers its writers' cgroups need) and runs both, in one
// run of the package's test binary, /test/fs.test, its output on this program's and its exit status this
// program's.
package main

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/diskhealth/diskhealth/e2e/internal/guestrx"
)

// tests are the package's tests run here (guestrx.RunPackageTest's form; e2e requires each one's PASS).
const tests = "TestFSScraperCheckpointSeededProjectQuota|TestFSScraperCheckpointWriterSeeded|TestCheckpointWriterNeverHasSysResource"

// hangAfter is well past a run's minutes of VM time (TCG, a loaded two-core host) and before the host's
// timeout.
const hangAfter = 25 * time.Minute

func main() {
	if err := prepare(); err != nil {
		fmt.Println("ckptguest:", err)
		os.Exit(2)
	}
	if err := guestrx.RunPackageTest("/test/fs.test", tests, hangAfter); err != nil {
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
