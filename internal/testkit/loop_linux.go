//go:build linux

package testkit

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Ext4OnLoop makes an ext4 of size bytes on a fresh loop device over a sparse file in the test's
// temp directory and mounts it; all of it goes when the test ends (the filelat probe's tests and the
// filelat source's). The loop device does direct I/O on its image, so that a read the page cache
// misses reaches the disk, not the image's own cache.
func Ext4OnLoop(t testing.TB, size int64) string {
	t.Helper()
	RequireRoot(t, "creates loop devices and mounts")
	dir := t.TempDir()
	img := filepath.Join(dir, "disk.img")
	f, err := os.Create(img)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(size))
	require.NoError(t, f.Close())
	return ext4OnLoopOver(t, img, dir)
}

// Ext4OnDelayDisk is Ext4OnLoop on a disk of known speed: d (its Size, Writable and Backing set here)
// served over FUSE, so that a read the page cache misses lasts at least d.Fixed whatever the machine's
// own disk is (a fast host disk behind a plain loop image made "cold" reads as short as cached ones).
func Ext4OnDelayDisk(t testing.TB, d DelayDisk) string {
	t.Helper()
	RequireRoot(t, "creates loop devices and mounts")
	dir := t.TempDir()
	d.Writable, d.Backing = true, filepath.Join(dir, "backing.img")
	return ext4OnLoopOver(t, d.Serve(t, dir), dir)
}

// ext4OnLoopOver attaches img to a loop device with direct I/O, makes an ext4 on it and mounts it
// under dir.
func ext4OnLoopOver(t testing.TB, img, dir string) string {
	t.Helper()
	losetup := Tool(t, "losetup", "mount")
	mkfs := Tool(t, "mkfs.ext4", "e2fsprogs")
	out, err := exec.Command(losetup, "--find", "--show", "--direct-io=on", img).CombinedOutput()
	require.NoError(t, err, "%s", out)
	loop := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command(losetup, "-d", loop).CombinedOutput(); err != nil {
			t.Errorf("losetup -d %s: %v: %s", loop, err, out)
			return
		}
		// A device someone still holds open (udev probing it after the unmount) is detached at its
		// last close, after losetup returned; until then the image is open, and a FUSE image's
		// mount refuses to go. Its loop attributes go with the detach.
		attrs := filepath.Join("/sys/block", filepath.Base(loop), "loop")
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(attrs); errors.Is(err, fs.ErrNotExist) {
				return
			} else if time.Now().After(deadline) {
				t.Errorf("%s still attached 10 s after losetup -d (%v)", loop, err)
				return
			}
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
