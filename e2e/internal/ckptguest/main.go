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
	"time"

	"golang.org/x/sys/unix"

	"github.com/diskhealth/diskhealth/e2e/internal/guestrx"
)

// hangAfter is well past a run's few minutes (three in TCG on a loaded two-core host) and before the
// host's timeout.
const hangAfter = 10 * time.Minute

func main() {
	if err := prepare(); err != nil {
		fmt.Println("ckptguest:", err)
		os.Exit(2)
	}
	cmd := exec.Command("/test/fs.test", "-test.run=^TestFSScraperCheckpointSeededProjectQuota$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "DISKHEALTH_QEMU_GUEST=1")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &unix.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		fmt.Println("ckptguest:", err)
		os.Exit(1)
	}
	// A run that hangs says where before the host's timeout kills the VM: the kernel's blocked tasks on
	// the console, and the goroutines of the test and its writer child (SIGQUIT) in the test log.
	watchdog := time.AfterFunc(hangAfter, func() {
		fmt.Println("ckptguest: no end after", hangAfter, "- blocked tasks on the console, goroutines here")
		_ = os.WriteFile("/proc/sysrq-trigger", []byte("w"), 0)
		_ = unix.Kill(-cmd.Process.Pid, unix.SIGQUIT)
	})
	err := cmd.Wait()
	watchdog.Stop()
	if err != nil {
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
