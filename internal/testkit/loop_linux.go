//go:build linux

package testkit

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Ext4OnLoop makes an ext4 of size bytes on a fresh loop device over a sparse file in the test's
// temp directory and mounts it; all of it goes when the test ends (the filelat probe's tests and the filelat source's). The loop device does direct I/O
// on its image, so that a read the page cache misses reaches the disk, not the image's own cache.
func Ext4OnLoop(t *testing.T, size int64) string {
	t.Helper()
	RequireRoot(t, "creates loop devices and mounts")
	losetup := Tool(t, "losetup", "mount")
	mkfs := Tool(t, "mkfs.ext4", "e2fsprogs")
	dir := t.TempDir()
	img := filepath.Join(dir, "disk.img")
	f, err := os.Create(img)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(size))
	require.NoError(t, f.Close())
	out, err := exec.Command(losetup, "--find", "--show", "--direct-io=on", img).CombinedOutput()
	require.NoError(t, err, "%s", out)
	loop := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command(losetup, "-d", loop).CombinedOutput(); err != nil {
			t.Errorf("losetup -d %s: %v: %s", loop, err, out)
		}
	})
	out, err = exec.Command(mkfs, "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", loop).CombinedOutput()
	require.NoError(t, err, "%s", out)
	mnt := filepath.Join(dir, "mnt")
	require.NoError(t, os.Mkdir(mnt, 0o755))
	require.NoError(t, unix.Mount(loop, mnt, "ext4", 0, ""))
	t.Cleanup(func() { require.NoError(t, unix.Unmount(mnt, 0)) })
	return mnt
}
