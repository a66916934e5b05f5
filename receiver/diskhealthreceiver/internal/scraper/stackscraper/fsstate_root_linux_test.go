//go:build linux

package stackscraper

import (
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"golang.org/x/sys/unix"

	"github.com/diskhealth/diskhealth/internal/testkit"
)

// goingDown is EXT4_IOC_SHUTDOWN and XFS_IOC_GOINGDOWN, the same number: _IOR('X', 125, __u32).
const goingDown = 2<<30 | 4<<16 | 'X'<<8 | 125

// shutDown forces the filesystem mounted at mnt down as a failing disk or an aborted journal would:
// FS_SHUTDOWN_FLAGS_NOLOGFLUSH (EXT4_GOING_FLAGS_NOLOGFLUSH, XFS_FSOP_GOING_FLAGS_NOLOGFLUSH), the log
// not flushed, nothing more written.
func shutDown(t *testing.T, mnt string) {
	t.Helper()
	f, err := os.Open(mnt)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, unix.IoctlSetPointerInt(int(f.Fd()), goingDown, unix.FS_SHUTDOWN_FLAGS_NOLOGFLUSH))
}

// errorState is the current disk_health.filesystem.error_state of the mount at, "" when not reported.
func errorState(t *testing.T, md pmetric.Metrics, at map[string]string) string {
	t.Helper()
	for _, st := range fsErrorStates {
		want := map[string]string{"disk_health.filesystem.error_state": st.String()}
		for k, v := range at {
			want[k] = v
		}
		if v, ok := point(t, md, "disk_health.filesystem.error_status", want); ok && v == 1 {
			return st.String()
		}
	}
	return ""
}

// mountOptions is the superblock options mountinfo shows for mnt.
func mountOptions(t *testing.T, mnt string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && f[4] == mnt {
			return f[len(f)-1]
		}
	}
	t.Fatalf("%s not in mountinfo", mnt)
	return ""
}

// TestExt4ShutdownStateOnLoopDevice (root, host kernel): an ext4 on a loop device is ok and sends
// nothing; EXT4_IOC_SHUTDOWN turns its state to shutdown (mountinfo: "shutdown", mount and superblock
// still rw; errors_count stays 0) and sends exactly one event, however many scrapes follow.
func TestExt4ShutdownStateOnLoopDevice(t *testing.T) {
	e := newExt4Loop(t, nil)
	require.Equal(t, "ok", errorState(t, e.scrape(t), e.at()))
	assert.Empty(t, fsEvents(t, e.rig, e.name), "a healthy mount sends nothing")
	e.scrape(t)
	assert.Empty(t, fsEvents(t, e.rig, e.name))

	shutDown(t, e.mnt)
	t.Logf("%s after EXT4_IOC_SHUTDOWN: %s", e.mnt, mountOptions(t, e.mnt))
	err := os.WriteFile(filepath.Join(e.mnt, "after"), nil, 0o644)
	require.ErrorIs(t, err, unix.EIO, "the kernel shut the filesystem down")
	for range 3 {
		assert.Equal(t, "shutdown", errorState(t, e.scrape(t), e.at()))
	}
	assert.Equal(t, []string{e.name + " shutdown<-ok ERROR"}, fsEvents(t, e.rig, e.name))
}

// TestExt4EmergencyROStateOnLoopDevice (root, host kernel): trigger_fs_error on an ext4 mounted
// errors=remount-ro records an error and stops writes (emergency_ro): its state turns
// read_only_after_errors with exactly one event.
func TestExt4EmergencyROStateOnLoopDevice(t *testing.T) {
	e := newExt4Loop(t, nil)
	require.Equal(t, "ok", errorState(t, e.scrape(t), e.at()))
	require.NoError(t, os.WriteFile(filepath.Join("/sys/fs/ext4", e.name, "trigger_fs_error"), []byte("1\n"), 0o200))
	t.Logf("%s after trigger_fs_error: %s", e.mnt, mountOptions(t, e.mnt))
	for range 2 {
		assert.Equal(t, "read_only_after_errors", errorState(t, e.scrape(t), e.at()))
	}
	assert.Equal(t, []string{e.name + " read_only_after_errors<-ok WARN"}, fsEvents(t, e.rig, e.name))
}

// TestXFSShutdownStateOnLoopDevice (root, host kernel): an xfs on a loop device is ok; after
// XFS_IOC_GOINGDOWN mountinfo and /sys/fs/xfs/<dev> show nothing, but a stat of the mount point fails
// with EIO: the state turns shutdown with exactly one event.
func TestXFSShutdownStateOnLoopDevice(t *testing.T) {
	// xfsprogs' smallest filesystem is 300 MiB.
	e := newLoopFS(t, filepath.Join(t.TempDir(), "xfs.img"), 320<<20, "mkfs.xfs", "xfsprogs", "-q")
	mnt := e.mnt

	require.Equal(t, "ok", errorState(t, e.scrape(t), e.at()))
	assert.Empty(t, fsEvents(t, e.rig, e.name), "a healthy mount sends nothing")

	before := mountOptions(t, mnt)
	shutDown(t, mnt)
	assert.Equal(t, before, mountOptions(t, mnt), "xfs shows no shutdown in mountinfo")
	_, err := os.Lstat(mnt)
	require.ErrorIs(t, err, unix.EIO)
	for range 3 {
		assert.Equal(t, "shutdown", errorState(t, e.scrape(t), e.at()))
	}
	assert.Equal(t, []string{e.name + " shutdown<-ok ERROR"}, fsEvents(t, e.rig, e.name))
}

// TestBtrfsAbortStateOnLoopDevice (root, host kernel): a btrfs on a loop device whose image lives on a
// small tmpfs; filling it makes the loop device fail writes (ENOSPC from the tmpfs), btrfs aborts its
// transaction and forces itself read-only: the superblock turns ro under the rw mount (its error_stats
// may stay 0). The state turns read_only_after_errors with exactly one event.
func TestBtrfsAbortStateOnLoopDevice(t *testing.T) {
	testkit.RequireRoot(t, "loop devices, mount")
	backing := filepath.Join(t.TempDir(), "tmpfs")
	require.NoError(t, os.Mkdir(backing, 0o755))
	run(t, "mount", "-t", "tmpfs", "-o", "size=160m", "tmpfs", backing)
	t.Cleanup(func() { _ = exec.Command("umount", backing).Run() })
	// Larger than the tmpfs: writes past 160 MiB fail.
	e := newLoopFS(t, filepath.Join(backing, "btrfs.img"), 512<<20, "mkfs.btrfs", "btrfs-progs", "-q", "-m", "single")
	mnt := e.mnt

	require.Equal(t, "ok", errorState(t, e.scrape(t), e.at()))
	assert.Empty(t, fsEvents(t, e.rig, e.name), "a healthy mount sends nothing")

	// Incompressible data until a write fails, then commit: the transaction that cannot be written aborts.
	buf := make([]byte, 1<<20)
	for i := range 400 {
		_, _ = rand.Read(buf)
		if os.WriteFile(filepath.Join(mnt, fmt.Sprintf("f%d", i)), buf, 0o644) != nil {
			break
		}
	}
	if f, err := os.Open(mnt); err == nil {
		_ = unix.Syncfs(int(f.Fd()))
		f.Close()
	}
	require.Eventually(t, func() bool { return strings.HasPrefix(mountOptions(t, mnt), "ro,") }, 60*time.Second, 200*time.Millisecond,
		"btrfs forces itself read-only after the abort")
	t.Logf("%s after the abort: %s", mnt, mountOptions(t, mnt))
	for range 2 {
		assert.Equal(t, "read_only_after_errors", errorState(t, e.scrape(t), e.at()))
	}
	assert.Equal(t, []string{e.name + " read_only_after_errors<-ok WARN"}, fsEvents(t, e.rig, e.name))
}

// newLoopFS makes a filesystem with mkfs (from package pkg) on a fresh loop device backed by img, size
// bytes, mounts it, and returns it with a stack scraper that reads the host. Detached when the test ends.
func newLoopFS(t *testing.T, img string, size int64, mkfs, pkg string, args ...string) *ext4Loop {
	t.Helper()
	testkit.RequireRoot(t, "loop devices, mount")
	for tool, pkg := range map[string]string{mkfs: pkg, "losetup": "mount", "mount": "mount"} {
		testkit.Tool(t, tool, pkg)
	}
	require.NoError(t, os.WriteFile(img, nil, 0o600))
	require.NoError(t, os.Truncate(img, size))
	e := &ext4Loop{loop: strings.TrimSpace(run(t, "losetup", "-f", "--show", img)), mnt: filepath.Join(t.TempDir(), "mnt")}
	t.Cleanup(func() { _ = exec.Command("losetup", "-d", e.loop).Run() })
	e.name = filepath.Base(e.loop)
	run(t, mkfs, append(args, e.loop)...)
	require.NoError(t, os.Mkdir(e.mnt, 0o755))
	run(t, "mount", e.loop, e.mnt)
	t.Cleanup(func() { _ = exec.Command("umount", e.mnt).Run() })
	cfg := createDefaultConfig()
	cfg.MD, cfg.DeviceMapper = false, false
	e.rig = newRig(t, newReaders(cfg), cfg)
	return e
}
