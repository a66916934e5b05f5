//go:build linux

package guestrx

import (
	"fmt"
	"os"
	"os/exec"

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

// RunPackageTest runs the one test named test (an exact name) of the package test binary bin (built by
// the host with go test -c), verbose, with PackageTestEnv set, its output on this program's.
func RunPackageTest(bin, test string) error {
	cmd := exec.Command(bin, "-test.run=^"+test+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), PackageTestEnv+"=1")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}
