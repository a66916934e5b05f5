//go:build linux

package stackscraper

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"golang.org/x/sys/unix"

	"github.com/diskhealth/diskhealth/internal/testkit"
)

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	require.NoError(t, err, "%s %v: %s", name, args, out)
	return string(out)
}

// dumpe2fsErrorCount is the "FS Error count" the superblock holds, as e2fsprogs reads it (0 when the
// line is absent: no error recorded).
func dumpe2fsErrorCount(t *testing.T, dev string) uint64 {
	t.Helper()
	out := run(t, "dumpe2fs", "-h", dev)
	m := regexp.MustCompile(`(?m)^FS Error count:\s+(\d+)`).FindStringSubmatch(out)
	if m == nil {
		return 0
	}
	n, err := strconv.ParseUint(m[1], 10, 64)
	require.NoError(t, err)
	return n
}

// ext4Loop is an ext4 on a fresh loop device, and a stack scraper that reads it.
type ext4Loop struct {
	loop, name, mnt string
	rig             *testRig
}

// newExt4Loop makes an ext4 on a 64 MiB loop device and mounts it errors=remount-ro; prepare, if
// not nil, runs on the mounted filesystem, which is then unmounted and mounted again. Detached when
// the test ends.
func newExt4Loop(t *testing.T, prepare func(e *ext4Loop)) *ext4Loop {
	t.Helper()
	testkit.RequireRoot(t, "loop devices, mount")
	for tool, pkg := range map[string]string{"mkfs.ext4": "e2fsprogs", "dumpe2fs": "e2fsprogs", "debugfs": "e2fsprogs", "losetup": "mount", "mount": "mount"} {
		testkit.Tool(t, tool, pkg)
	}
	dir := t.TempDir()
	img := filepath.Join(dir, "ext4.img")
	require.NoError(t, os.WriteFile(img, nil, 0o600))
	require.NoError(t, os.Truncate(img, 64<<20))
	e := &ext4Loop{loop: strings.TrimSpace(run(t, "losetup", "-f", "--show", img)), mnt: filepath.Join(dir, "mnt")}
	t.Cleanup(func() { _ = exec.Command("losetup", "-d", e.loop).Run() })
	e.name = filepath.Base(e.loop)
	run(t, "mkfs.ext4", "-q", e.loop)
	require.NoError(t, os.Mkdir(e.mnt, 0o755))
	run(t, "mount", "-o", "errors=remount-ro", e.loop, e.mnt)
	t.Cleanup(func() { _ = exec.Command("umount", e.mnt).Run() })
	if prepare != nil {
		prepare(e)
		run(t, "mount", "-o", "errors=remount-ro", e.loop, e.mnt)
	}
	cfg := createDefaultConfig()
	cfg.MD, cfg.DeviceMapper = false, false
	// Off by default (error_status says it); enabled to check it against the kernel.
	cfg.MetricsBuilderConfig.Metrics.DiskHealthFilesystemReadOnlyAfterErrors.Enabled = true
	e.rig = newRig(t, newReaders(cfg), cfg)
	return e
}

// scrape scrapes the host; the host's other devices may have problems of their own (a partial
// error): the test is about the loop device.
func (e *ext4Loop) scrape(t *testing.T) pmetric.Metrics {
	t.Helper()
	md, err := e.rig.s.scrape(t.Context())
	if err != nil {
		t.Logf("host scrape problems besides the loop device: %v", err)
	}
	return md
}

// at selects the loop device's filesystem points.
func (e *ext4Loop) at() map[string]string {
	return map[string]string{"system.device": e.name, "system.filesystem.mountpoint": e.mnt}
}

// checkErrors checks that disk_health.filesystem.errors equals the kernel's errors_count and e2fsprogs'
// FS Error count, is above zero, and that the read-only-after-errors flag and the last error's time
// are reported; it returns the count.
func (e *ext4Loop) checkErrors(t *testing.T) uint64 {
	t.Helper()
	md := e.scrape(t)
	sysfs, err := os.ReadFile(filepath.Join("/sys/fs/ext4", e.name, "errors_count"))
	require.NoError(t, err)
	kernel, err := strconv.ParseUint(strings.TrimSpace(string(sysfs)), 10, 64)
	require.NoError(t, err)
	count, _ := point(t, md, "disk_health.filesystem.errors", e.at())
	assert.InDelta(t, float64(kernel), count, 0)
	assert.Positive(t, count)
	// ext4 writes the error into the superblock from a work item: e2fsprogs sees it a moment later.
	assert.Eventually(t, func() bool { return dumpe2fsErrorCount(t, e.loop) == kernel }, 10*time.Second, 100*time.Millisecond,
		"dumpe2fs's FS Error count becomes the kernel's %d", kernel)
	ro, _ := point(t, md, "disk_health.filesystem.read_only_after_errors", e.at())
	assert.InDelta(t, 1, ro, 0, "the kernel stopped writes after the error")
	last, ok := point(t, md, "disk_health.filesystem.last_error.time", e.at())
	assert.True(t, ok)
	assert.Positive(t, last)
	return kernel
}

// TestExt4ErrorOnLoopDevice (root, host kernel): an ext4 on a loop device mounted errors=remount-ro; the
// kernel's trigger_fs_error records an error, ext4 stops writes (emergency_ro) — our errors_count equals
// e2fsprogs' and sysfs's before and after, and the read-only-after-errors flag turns 1.
func TestExt4ErrorOnLoopDevice(t *testing.T) {
	e := newExt4Loop(t, nil)
	md := e.scrape(t)
	count, ok := point(t, md, "disk_health.filesystem.errors", e.at())
	require.True(t, ok, "the new ext4 on %s is reported with its mount point", e.name)
	assert.InDelta(t, 0, count, 0)
	ro, _ := point(t, md, "disk_health.filesystem.read_only_after_errors", e.at())
	assert.InDelta(t, 0, ro, 0)

	require.NoError(t, os.WriteFile(filepath.Join("/sys/fs/ext4", e.name, "trigger_fs_error"), []byte("1\n"), 0o200))
	t.Logf("%s: errors_count %d (dumpe2fs agrees), read-only after errors", e.name, e.checkErrors(t))
}

// TestExt4CorruptInodeTableOnLoopDevice (root, host kernel): a file's inode in the inode table of an
// ext4 on a loop device is overwritten while unmounted (through the loop device, as a failing disk
// would return it); after the mount, looking the file up fails its checksum: the kernel records an
// error and stops writes (errors=remount-ro). Our errors_count equals sysfs's and dumpe2fs's, the
// read-only-after-errors flag turns 1, and a write fails with EROFS.
func TestExt4CorruptInodeTableOnLoopDevice(t *testing.T) {
	e := newExt4Loop(t, func(e *ext4Loop) {
		victim := filepath.Join(e.mnt, "victim")
		require.NoError(t, os.WriteFile(victim, []byte("data"), 0o644))
		var st unix.Stat_t
		require.NoError(t, unix.Stat(victim, &st))
		run(t, "umount", e.mnt)
		corruptInode(t, e.loop, st.Ino)
	})
	count, _ := point(t, e.scrape(t), "disk_health.filesystem.errors", e.at())
	assert.InDelta(t, 0, count, 0, "mounting did not read the corrupted inode")

	_, err := os.Stat(filepath.Join(e.mnt, "victim"))
	require.ErrorIs(t, err, unix.EBADMSG, "the lookup fails the inode's checksum (EFSBADCRC)")
	n := e.checkErrors(t)
	// Since 6.3 ext4 stops writes without remounting (emergency_ro): mountinfo may still say rw, a
	// write says what happened.
	err = os.WriteFile(filepath.Join(e.mnt, "after"), nil, 0o644)
	require.ErrorIs(t, err, unix.EROFS, "ext4 is read-only after the error")
	t.Logf("%s: a corrupted inode: errors_count %d (dumpe2fs agrees), read-only after errors", e.name, n)
}

// corruptInode overwrites inode ino of the unmounted ext4 on dev, where debugfs says it lies, with
// 0xa5 bytes.
func corruptInode(t *testing.T, dev string, ino uint64) {
	t.Helper()
	out := run(t, "debugfs", "-R", fmt.Sprintf("imap <%d>", ino), dev)
	m := regexp.MustCompile(`located at block (\d+), offset 0x([0-9a-f]+)`).FindStringSubmatch(out)
	require.NotNil(t, m, "debugfs imap: %s", out)
	block, err := strconv.ParseInt(m[1], 10, 64)
	require.NoError(t, err)
	off, err := strconv.ParseInt(m[2], 16, 64)
	require.NoError(t, err)
	bs := regexp.MustCompile(`(?m)^Block size:\s+(\d+)`).FindStringSubmatch(run(t, "dumpe2fs", "-h", dev))
	require.NotNil(t, bs)
	size, err := strconv.ParseInt(bs[1], 10, 64)
	require.NoError(t, err)
	f, err := os.OpenFile(dev, os.O_WRONLY, 0)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.WriteAt(bytes.Repeat([]byte{0xa5}, 128), block*size+off)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
}
