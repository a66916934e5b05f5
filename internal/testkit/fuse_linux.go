package testkit

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// ServeFUSE mounts the filesystem root at mp (type fuse.<name>, source source) without fusermount and
// serves it from this process. When the test ends, whatever happened, it calls beforeUnmount (nil: none),
// unmounts (lazily if it must) and waits for the server's goroutines to end.
//
// The FUSE device is kept from child processes: go-fuse's direct mount opens /dev/fuse inheritable, and a
// child that outlived a killed test (fio, a collector) kept a mount with no server alive, on which
// losetup and the next test hung.
func ServeFUSE(t testing.TB, mp string, root fs.InodeEmbedder, source, name string, beforeUnmount func()) {
	t.Helper()
	require.NoError(t, os.MkdirAll(mp, 0o755))
	srv, err := fs.Mount(mp, root, &fs.Options{MountOptions: fuse.MountOptions{
		DirectMountStrict: true, FsName: source, Name: name,
	}})
	if err != nil {
		// The mount may exist even though the server failed to start.
		_ = unix.Unmount(mp, unix.MNT_DETACH)
		t.Fatalf("mount a FUSE filesystem at %s: %v", mp, err)
	}
	t.Cleanup(func() {
		if beforeUnmount != nil {
			beforeUnmount()
		}
		if err := srv.Unmount(); err != nil {
			t.Errorf("unmount FUSE %s: %v; detaching it lazily", mp, err)
			if err := unix.Unmount(mp, unix.MNT_DETACH); err != nil {
				t.Errorf("umount -l %s: %v", mp, err)
				return
			}
		}
		done := make(chan struct{})
		go func() {
			srv.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("the FUSE server of %s did not stop within 10s of the unmount", mp)
		}
	})
	require.NoError(t, fuseDevicesCloseOnExec())
}

// fuseDevicesCloseOnExec sets FD_CLOEXEC on every descriptor of this process open on /dev/fuse.
func fuseDevicesCloseOnExec() error {
	fds, err := filepath.Glob("/proc/self/fd/*")
	if err != nil {
		return err
	}
	for _, p := range fds {
		if target, err := os.Readlink(p); err != nil || target != "/dev/fuse" {
			continue // a descriptor closed meanwhile, or another file
		}
		fd, err := strconv.Atoi(filepath.Base(p))
		if err != nil {
			return err
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil {
			return err
		}
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, flags|unix.FD_CLOEXEC); err != nil {
			return err
		}
	}
	return nil
}
