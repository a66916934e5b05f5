//go:build linux

package guestrx

import (
	"fmt"
	"os"
	"os/exec"
	"time"

	"golang.org/x/sys/unix"
)

// PackageTestEnv is set for a package's test binary run in the guest (RunPackageTest): its tests that
// need the guest's kernel skip without it.
const PackageTestEnv = "DISKHEALTH_QEMU_GUEST"

// MountCgroup2 mounts the cgroup v2 hierarchy at /sys/fs/cgroup; the guest's init mounts no cgroups.
func MountCgroup2() error {
	if err := os.MkdirAll("/sys/fs/cgroup", 0o755); err != nil {
		return err
	}
	if err := unix.Mount("cgroup2", "/sys/fs/cgroup", "cgroup2", 0, ""); err != nil {
		return fmt.Errorf("mount cgroup2: %w", err)
	}
	return nil
}

// RunPackageTest runs the tests named in tests (exact names, separated by "|", in the binary's order) of
// the package test binary bin (built by the host with go test -c) in one run, verbose, with PackageTestEnv set, its output on this program's. A run that
// has not ended after hangAfter (set it before the host's timeout) says where it hangs before the host
// kills the VM: the kernel's blocked tasks on the console, and the goroutines of the test and of any Go
// child of it (SIGQUIT to its process group) in its output.
func RunPackageTest(bin, tests string, hangAfter time.Duration) error {
	cmd := exec.Command(bin, "-test.run=^("+tests+")$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), PackageTestEnv+"=1")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &unix.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	watchdog := time.AfterFunc(hangAfter, func() {
		fmt.Println("guestrx:", tests, "have not ended after", hangAfter, "- blocked tasks on the console, goroutines here")
		_ = os.WriteFile("/proc/sysrq-trigger", []byte("w"), 0)
		_ = unix.Kill(-cmd.Process.Pid, unix.SIGQUIT)
	})
	defer watchdog.Stop()
	return cmd.Wait()
}
