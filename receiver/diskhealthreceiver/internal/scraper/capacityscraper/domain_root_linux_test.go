package capacityscraper

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/scraper/scrapertest"
	"golang.org/x/sys/unix"

	dhtest "github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/internal/testkit/quotakit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/blockdev"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/match"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/capacityscraper/internal/metadata"
)

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	require.NoError(t, err, "%s %v: %s", name, args, out)
	return string(out)
}

// loopExt4 makes an ext4 of size bytes on a fresh loop device mounted at dir/mnt; everything is
// unmounted and detached when the test ends. It returns the mount point and the device.
func loopExt4(t *testing.T, dir string, size int64) (mnt, loop string) {
	t.Helper()
	return loopFS(t, dir, size, "ext4", "e2fsprogs", []string{"/usr/sbin/mke2fs", "-q", "-t", "ext4"}, "")
}

// loopFS makes a filesystem of type fstype and size bytes with mkfs (a command and its arguments before
// the device, from Debian's pkg) on a fresh loop device, mounted at dir/mnt with opts; everything is
// unmounted and detached when the test ends. It returns the mount point and the device. The loop device
// and the mount are made by syscalls, not losetup and mount, and ext4 by /usr/sbin/mke2fs, by path: the
// QEMU guest's PATH has busybox's first.
func loopFS(t *testing.T, dir string, size int64, fstype, pkg string, mkfs []string, opts string) (mnt, loop string) {
	t.Helper()
	dhtest.RequireRoot(t, "loop devices, mount")
	mkfsPath := dhtest.Tool(t, mkfs[0], pkg)
	img := filepath.Join(dir, "fs.img")
	require.NoError(t, os.WriteFile(img, nil, 0o600))
	require.NoError(t, os.Truncate(img, size))
	loop, detach, err := quotakit.AttachLoop(img)
	require.NoError(t, err)
	t.Cleanup(detach)
	run(t, mkfsPath, append(mkfs[1:], loop)...)
	mnt = filepath.Join(dir, "mnt")
	require.NoError(t, os.Mkdir(mnt, 0o755))
	require.NoError(t, unix.Mount(loop, mnt, fstype, 0, opts))
	t.Cleanup(func() { _ = unix.Unmount(mnt, unix.MNT_DETACH) })
	return mnt, loop
}

// bindMount binds src at dst (made), undone when the test ends.
func bindMount(t *testing.T, src, dst string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(src, 0o755))
	require.NoError(t, os.MkdirAll(dst, 0o755))
	run(t, "mount", "--bind", src, dst)
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dst).Run() })
}

// hostScraper scrapes the host's mounts below dir, every duplicate kept.
func hostScraper(t *testing.T, dir string) *capScraper {
	t.Helper()
	cfg := testConfig()
	cfg.Duplicates = "keep"
	cfg.MountPoints = match.Config{Include: []string{regexp.QuoteMeta(dir) + "/.*"}}
	s, err := newScraper(scrapertest.NewNopSettings(metadata.Type), cfg, nil, time.Now)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.shutdown(t.Context())) })
	return s
}

// TestFSScraperRealBindsOneDomain: on a loop-mounted ext4, five bind mounts of its directories and a
// kubelet-style hostPath bind are seven mounts in the kernel's table and one domain here, whose
// major:minor is the filesystem's st_dev.
func TestFSScraperRealBindsOneDomain(t *testing.T) {
	dir := t.TempDir()
	mnt, loop := loopExt4(t, dir, 64<<20)
	for i, dst := range []string{"b1", "b2", "b3", "home/alice/ckpt", "srv/train",
		"var/lib/kubelet/pods/6f1c0e52/volumes/kubernetes.io~host-path/ckpt"} {
		bindMount(t, filepath.Join(mnt, "ckpt", []string{"", "", "a", "alice", "train", ""}[i]), filepath.Join(dir, dst))
	}
	var st unix.Stat_t
	require.NoError(t, unix.Stat(mnt, &st))
	dom := blockdev.MajorMinor(unix.Major(st.Dev), unix.Minor(st.Dev))

	hs := hostScraper(t, dir)
	md, err := withFilesystem(t, hs)()
	if err != nil {
		t.Logf("host mounts besides the test's: %v", err)
	}
	limits, uuids := domainPoints(md, "system.filesystem.limit")
	assert.Equal(t, map[string]int{dom: 7}, limits, "seven mounts, each naming the one domain")
	domLimits, _ := domainPoints(md, "disk_health.filesystem.domain.limit")
	assert.Equal(t, map[string]int{dom: 1}, domLimits, "the domain's series once")
	mounts, _ := domainValue(md, "disk_health.filesystem.domain.mounts", dom)
	assert.Equal(t, int64(7), mounts)
	var sfs unix.Statfs_t
	require.NoError(t, unix.Statfs(mnt, &sfs))
	size, _ := domainValue(md, "disk_health.filesystem.domain.limit", dom)
	assert.Equal(t, int64(sfs.Blocks)*sfs.Frsize, size, "df's size")

	// The UUID is udev's: where /dev/disk/by-uuid has the filesystem it is that one, else empty.
	want := ""
	if entries, err := os.ReadDir("/dev/disk/by-uuid"); err == nil {
		for _, e := range entries {
			if target, err := os.Readlink(filepath.Join("/dev/disk/by-uuid", e.Name())); err == nil && filepath.Base(target) == filepath.Base(loop) {
				want = e.Name()
			}
		}
	}
	assert.Equal(t, want, uuids[dom])
	t.Logf("domain %s uuid %q (no udev links here when empty)", dom, uuids[dom])
}
