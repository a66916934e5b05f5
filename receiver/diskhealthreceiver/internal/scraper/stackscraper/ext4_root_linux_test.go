//go:build linux

package stackscraper

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/testpeer"
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

// TestExt4ErrorOnLoopDevice (root, host kernel): an ext4 on a loop device mounted errors=remount-ro; the
// kernel's trigger_fs_error records an error, ext4 stops writes (emergency_ro) — our errors_count equals
// e2fsprogs' and sysfs's before and after, and the read-only-after-errors flag turns 1.
func TestExt4ErrorOnLoopDevice(t *testing.T) {
	testpeer.RequireRoot(t, "loop devices, mount")
	for tool, pkg := range map[string]string{"mkfs.ext4": "e2fsprogs", "dumpe2fs": "e2fsprogs", "losetup": "mount", "mount": "mount"} {
		testpeer.Tool(t, pkg, tool)
	}
	dir := t.TempDir()
	img := filepath.Join(dir, "ext4.img")
	require.NoError(t, os.WriteFile(img, nil, 0o600))
	require.NoError(t, os.Truncate(img, 64<<20))
	loop := strings.TrimSpace(run(t, "losetup", "-f", "--show", img))
	t.Cleanup(func() { _ = exec.Command("losetup", "-d", loop).Run() })
	run(t, "mkfs.ext4", "-q", loop)
	mnt := filepath.Join(dir, "mnt")
	require.NoError(t, os.Mkdir(mnt, 0o755))
	run(t, "mount", "-o", "errors=remount-ro", loop, mnt)
	t.Cleanup(func() { _ = exec.Command("umount", mnt).Run() })
	name := filepath.Base(loop)

	cfg := createDefaultConfig()
	cfg.MD, cfg.DeviceMapper = false, false
	rig := newRig(t, newReaders(cfg), cfg)
	at := map[string]string{"system.device": name, "system.filesystem.mountpoint": mnt}
	// The host's other devices may have problems of their own (a partial error): this test is about the loop.
	scrape := func() pmetric.Metrics {
		md, err := rig.s.scrape(t.Context())
		if err != nil {
			t.Logf("host scrape problems besides the loop device: %v", err)
		}
		return md
	}
	md := scrape()
	count, ok := point(t, md, "system.filesystem.errors", at)
	require.True(t, ok, "the new ext4 on %s is reported with its mount point", name)
	assert.InDelta(t, 0, count, 0)
	ro, _ := point(t, md, "system.filesystem.read_only_after_errors", at)
	assert.InDelta(t, 0, ro, 0)

	require.NoError(t, os.WriteFile(filepath.Join("/sys/fs/ext4", name, "trigger_fs_error"), []byte("1\n"), 0o200))
	md = scrape()
	sysfs, err := os.ReadFile(filepath.Join("/sys/fs/ext4", name, "errors_count"))
	require.NoError(t, err)
	kernel, err := strconv.ParseUint(strings.TrimSpace(string(sysfs)), 10, 64)
	require.NoError(t, err)
	count, _ = point(t, md, "system.filesystem.errors", at)
	assert.InDelta(t, float64(kernel), count, 0)
	assert.InDelta(t, float64(dumpe2fsErrorCount(t, loop)), count, 0, "equals dumpe2fs's FS Error count")
	assert.Positive(t, count)
	ro, _ = point(t, md, "system.filesystem.read_only_after_errors", at)
	assert.InDelta(t, 1, ro, 0, "the kernel stopped writes after the error")
	last, ok := point(t, md, "system.filesystem.errors.time", at)
	assert.True(t, ok)
	assert.Positive(t, last)
	t.Logf("%s: errors_count %d (dumpe2fs agrees), read-only after errors, last error at %.0f", name, kernel, last)
}
