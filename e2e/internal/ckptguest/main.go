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
	"os/exec"

	"golang.org/x/sys/unix"

	"github.com/diskhealth/diskhealth/e2e/internal/guestrx"
)

func main() {
	if err := prepare(); err != nil {
		fmt.Println("ckptguest:", err)
		os.Exit(2)
	}
	cmd := exec.Command("/test/fs.test", "-test.run=^TestFSScraperCheckpointSeededProjectQuota$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "DISKHEALTH_QEMU_GUEST=1")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
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
	if err := os.MkdirAll("/sys/fs/cgroup", 0o755); err != nil {
		return err
	}
	if err := unix.Mount("cgroup2", "/sys/fs/cgroup", "cgroup2", 0, ""); err != nil {
		return fmt.Errorf("mount cgroup2: %w", err)
	}
	return nil
}
