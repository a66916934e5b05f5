package fsusage

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/match"
	"golang.org/x/sys/unix"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/parseerr"
)

// fakeRoot builds <root>/proc/<pid>/mountinfo files from fixtures.
func fakeRoot(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for pid, fixture := range files {
		dir := filepath.Join(root, "proc", pid)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "mountinfo"), readFixture(t, fixture), 0o644))
	}
	return root
}

func mountPoints(ms []Mount) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.MountPoint
	}
	return out
}

func TestMountTableViews(t *testing.T) {
	want := []string{"/", "/boot", "/boot/efi", "/home", "/tank", "/tank/data", "/media/usb"}

	root := fakeRoot(t, map[string]string{"1": "docker_host_init.txt", "self": "docker_host_self.txt"})
	tbl, err := OpenMountTable(TableConfig{RootPath: root})
	require.NoError(t, err)
	defer tbl.Close()
	file, view := tbl.File()
	assert.Equal(t, filepath.Join(root, "proc/1/mountinfo"), file)
	assert.Equal(t, ViewInit, view)
	ms, err := tbl.Mounts()
	require.NoError(t, err)
	assert.Equal(t, want, mountPoints(ms))
	assert.Equal(t, filepath.Join(root, "boot"), ms[1].Path)

	// Init's file hidden (hidepid): the collector's own view, same answer.
	// The fixture's paths are under /hostfs, so that is the root here.
	root = fakeRoot(t, map[string]string{"self": "docker_host_self.txt"})
	tbl2, err := openTable(TableConfig{RootPath: "/hostfs"}, []tableFile{
		{filepath.Join(root, "proc/1/mountinfo"), ViewInit},
		{filepath.Join(root, "proc/self/mountinfo"), ViewSelf},
	})
	require.NoError(t, err)
	defer tbl2.Close()
	_, view = tbl2.File()
	assert.Equal(t, ViewSelf, view)
	ms, err = tbl2.Mounts()
	require.NoError(t, err)
	assert.Equal(t, want, mountPoints(ms))
	assert.Equal(t, "/hostfs/boot", ms[1].Path)
}

func TestMountTableUnreadable(t *testing.T) {
	root := t.TempDir()
	_, err := OpenMountTable(TableConfig{RootPath: root})
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Join(root, "proc/1/mountinfo"))
	assert.Contains(t, err.Error(), filepath.Join(root, "proc/self/mountinfo"))
}

func TestMountTableRereadEvery(t *testing.T) {
	root := fakeRoot(t, map[string]string{"1": "btrfs.txt"})
	path := filepath.Join(root, "proc/1/mountinfo")
	var reloads []TableReload
	tbl, err := OpenMountTable(TableConfig{RootPath: root, RereadEvery: 3, OnReload: func(r TableReload) { reloads = append(reloads, r) }})
	require.NoError(t, err)
	defer tbl.Close()
	require.Len(t, reloads, 1)
	assert.Equal(t, TableReload{File: path, View: ViewInit, Mounts: 9}, reloads[0])
	assert.Equal(t, 1, tbl.reads)

	// A regular file never signals a change, so only the forced read
	// (every third call) sees the new content.
	data := append(readFixture(t, "btrfs.txt"), "99 29 8:64 / /new rw - xfs /dev/sde rw\nbad line\n"...)
	require.NoError(t, os.WriteFile(path, data, 0o644))
	for call := 1; call <= 2; call++ {
		ms, err := tbl.Mounts()
		require.NoError(t, err)
		assert.Len(t, ms, 9, "call %d", call)
	}
	assert.Equal(t, 1, tbl.reads, "no read without a change")
	ms, err := tbl.Mounts()
	require.NoError(t, err)
	assert.Len(t, ms, 10)
	assert.Equal(t, "/new", ms[9].MountPoint)
	require.Len(t, reloads, 2)
	assert.Equal(t, 10, reloads[1].Mounts)
	var perr *parseerr.Lines
	require.ErrorAs(t, reloads[1].Err, &perr, "bad lines are reported once, on reload")
	assert.Equal(t, 2, tbl.reads)

	// Forced reads of unchanged bytes do not parse or report again.
	for range 6 {
		_, err := tbl.Mounts()
		require.NoError(t, err)
	}
	assert.Equal(t, 4, tbl.reads)
	assert.Len(t, reloads, 2)
}

func TestMountTableRecoversFromErrors(t *testing.T) {
	root := fakeRoot(t, map[string]string{"1": "btrfs.txt"})
	tbl, err := OpenMountTable(TableConfig{RootPath: root})
	require.NoError(t, err)
	defer tbl.Close()
	good, err := tbl.Mounts()
	require.NoError(t, err)

	// The descriptor goes bad under us: the last good table comes back
	// with the error, and the next call opens the file again.
	require.NoError(t, unix.Close(tbl.fd))
	ms, err := tbl.Mounts()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "mount table "+filepath.Join(root, "proc/1/mountinfo"))
	assert.Equal(t, good, ms)

	require.NoError(t, os.Remove(filepath.Join(root, "proc/1/mountinfo")))
	ms, err = tbl.Mounts()
	require.Error(t, err)
	assert.Equal(t, good, ms)

	require.NoError(t, os.WriteFile(filepath.Join(root, "proc/1/mountinfo"), readFixture(t, "escaped.txt"), 0o644))
	ms, err = tbl.Mounts()
	require.NoError(t, err)
	assert.Equal(t, "/media/alice/My Passport", ms[1].MountPoint)
}

// TestMountTableNoticesMountAndUnmount mounts a tmpfs for real, in a
// private mount namespace of one locked OS thread, so nothing outside the
// test ever sees it: the thread, and the namespace with it, ends with the
// goroutine.
func TestMountTableNoticesMountAndUnmount(t *testing.T) {
	dir := t.TempDir()
	type observation struct {
		skip                         string
		err                          error
		before, mounted, unmounted   []Mount
		readsIdle, readsAfterMount   int
		readsAfterUnmount, readsInit int
	}
	obs := make(chan observation, 1)
	go func() {
		var o observation
		defer func() { obs <- o }()
		runtime.LockOSThread() // never unlocked: the thread exits with us
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			o.skip = "unshare(CLONE_NEWNS) not permitted here: " + err.Error()
			return
		}
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			o.skip = "cannot make the private namespace's mounts private: " + err.Error()
			return
		}
		filter, err := NewFilter("filesystem", FilterConfig{MountPoints: match.Config{Include: []string{dir}}, IncludeMemory: true})
		if err != nil {
			o.err = err
			return
		}
		// thread-self: this thread's namespace, not the process's.
		tbl, err := openTable(TableConfig{Filter: filter, RereadEvery: -1},
			[]tableFile{{"/proc/thread-self/mountinfo", ViewInit}})
		if err != nil {
			o.err = err
			return
		}
		defer tbl.Close()
		o.readsInit = tbl.reads
		if o.before, o.err = tbl.Mounts(); o.err != nil {
			return
		}
		for range 3 {
			if _, o.err = tbl.Mounts(); o.err != nil {
				return
			}
		}
		o.readsIdle = tbl.reads
		if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
			o.skip = "mounting a tmpfs is not permitted here: " + err.Error()
			return
		}
		o.mounted, o.err = tbl.Mounts()
		o.readsAfterMount = tbl.reads
		if err := unix.Unmount(dir, 0); err != nil && o.err == nil {
			o.err = err
		}
		if o.err == nil {
			o.unmounted, o.err = tbl.Mounts()
			o.readsAfterUnmount = tbl.reads
		}
	}()
	o := <-obs
	if o.skip != "" {
		t.Skip(o.skip)
	}
	require.NoError(t, o.err)
	assert.Empty(t, o.before)
	assert.Equal(t, o.readsInit, o.readsIdle, "no re-read while nothing changes")
	require.Len(t, o.mounted, 1, "the mount is noticed on the next call")
	assert.Equal(t, dir, o.mounted[0].MountPoint)
	assert.Equal(t, "tmpfs", o.mounted[0].FSType)
	assert.Equal(t, o.readsIdle+1, o.readsAfterMount)
	assert.Empty(t, o.unmounted, "and so is the unmount")
	assert.Equal(t, o.readsAfterMount+1, o.readsAfterUnmount)
}
