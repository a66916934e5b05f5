package testkit

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// DelayDisk is a disk image served over FUSE whose every request takes Fixed plus PerMiB for each MiB
// it moves: the backing file of a loop device whose requests last as long as a test needs, whatever
// the machine's own disk is doing. Without Backing it is an image of zeros: writes are taken and
// dropped, reads return zeros.
type DelayDisk struct {
	Size          int64
	Fixed, PerMiB time.Duration
	// Serial serves one request at a time, in arrival order, as a single-queue disk does: a request
	// waits behind the ones before it, as a victim's reads wait behind a neighbour's writes.
	Serial bool
	// Writable accepts writes (dropped unless Backing); without it the image is read-only.
	Writable bool
	// FastWrites serves writes at once: only reads take the disk's time, so a test fills a filesystem on
	// the image at the machine's speed before it reads.
	FastWrites bool
	// Backing, when set, is a file of the test's (created at Size) that holds the image's bytes: reads
	// return what was written, so a filesystem can live on the image and a test reads its own data back
	// at the disk's speed.
	Backing string
}

// Serve mounts d under dir (the mount goes when the test ends) and returns the image's path.
func (d DelayDisk) Serve(t testing.TB, dir string) string {
	t.Helper()
	mp := filepath.Join(dir, "delay")
	img := &delayImage{disk: d}
	if d.Backing != "" {
		f, err := os.OpenFile(d.Backing, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
		require.NoError(t, err)
		t.Cleanup(func() { _ = f.Close() })
		require.NoError(t, f.Truncate(d.Size))
		img.backing = f
	}
	// Registered after the backing file's cleanup, so it runs before it: the server stops first.
	ServeFUSE(t, mp, &delayRoot{image: img}, "testkit-delay", "testkitdelay", nil)
	return filepath.Join(mp, "disk.img")
}

type delayImage struct {
	fs.Inode
	disk    DelayDisk
	backing *os.File   // the image's bytes; nil: zeros
	mu      sync.Mutex // held through a request's service when disk.Serial
}

var (
	_ fs.NodeOpener    = (*delayImage)(nil)
	_ fs.NodeReader    = (*delayImage)(nil)
	_ fs.NodeWriter    = (*delayImage)(nil)
	_ fs.NodeGetattrer = (*delayImage)(nil)
	_ fs.NodeSetattrer = (*delayImage)(nil)
	_ fs.NodeFsyncer   = (*delayImage)(nil)
)

// Open asks for direct I/O: no page cache and no readahead, so that each request of the loop device
// is one request here (or a few, split at the FUSE request size).
func (d *delayImage) Open(_ context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if !d.disk.Writable && flags&syscall.O_ACCMODE != syscall.O_RDONLY {
		return nil, 0, syscall.EROFS
	}
	return nil, fuse.FOPEN_DIRECT_IO, fs.OK
}

// serve takes the time a request of n bytes lasts.
func (d *delayImage) serve(n int) {
	if d.disk.Serial {
		d.mu.Lock()
		defer d.mu.Unlock()
	}
	// clock_nanosleep itself, not time.Sleep: the Go runtime's timers wake up to a millisecond late.
	ts := unix.NsecToTimespec((d.disk.Fixed + time.Duration(float64(d.disk.PerMiB)*float64(n)/(1<<20))).Nanoseconds())
	for unix.Nanosleep(&ts, &ts) == unix.EINTR {
	}
}

func (d *delayImage) Read(_ context.Context, _ fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n := max(0, min(int64(len(dest)), d.disk.Size-off))
	d.serve(int(n))
	if d.backing == nil {
		clear(dest[:n])
	} else if _, err := d.backing.ReadAt(dest[:n], off); err != nil {
		return nil, fs.ToErrno(err)
	}
	return fuse.ReadResultData(dest[:n]), fs.OK
}

func (d *delayImage) Write(_ context.Context, _ fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	if !d.disk.Writable {
		return 0, syscall.EROFS
	}
	if off >= d.disk.Size {
		return 0, syscall.ENOSPC
	}
	n := min(int64(len(data)), d.disk.Size-off)
	if !d.disk.FastWrites {
		d.serve(int(n))
	}
	if d.backing != nil {
		if _, err := d.backing.WriteAt(data[:n], off); err != nil {
			return 0, fs.ToErrno(err)
		}
	}
	return uint32(n), fs.OK
}

func (d *delayImage) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFREG | 0o444
	if d.disk.Writable {
		out.Mode |= 0o200
	}
	out.Size = uint64(d.disk.Size)
	return fs.OK
}

// Setattr keeps the size: an open for writing may ask to truncate, a disk does not change size.
func (d *delayImage) Setattr(ctx context.Context, fh fs.FileHandle, _ *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return d.Getattr(ctx, fh, out)
}

// Fsync succeeds at once: a loop device passes a filesystem's cache flushes on (mkfs.ext4 fails on a
// refused one), and an image that goes with the test needs no durability.
func (d *delayImage) Fsync(context.Context, fs.FileHandle, uint32) syscall.Errno {
	return fs.OK
}

type delayRoot struct {
	fs.Inode
	image *delayImage
}

var _ fs.NodeOnAdder = (*delayRoot)(nil)

func (r *delayRoot) OnAdd(ctx context.Context) {
	r.AddChild("disk.img", r.NewPersistentInode(ctx, r.image, fs.StableAttr{Mode: syscall.S_IFREG}), false)
}
