package e2e

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// delayImage is a read-only file of zeros served over FUSE whose every read takes at least delay:
// the backing file of a loop device whose requests all last about delay. The I/O a test does on it
// then lasts far longer than what fio adds around it (a syscall, a wake-up: tens of µs), so the
// block layer's latency and fio's fall in one bucket of a scale-3 histogram, which they do not on a
// plain loop device (15 µs requests).
type delayImage struct {
	fs.Inode
	size  int64
	delay time.Duration
}

var (
	_ fs.NodeOpener    = (*delayImage)(nil)
	_ fs.NodeReader    = (*delayImage)(nil)
	_ fs.NodeGetattrer = (*delayImage)(nil)
)

// Open asks for direct I/O: no page cache and no readahead, so that each request of the loop device
// is one read here.
func (d *delayImage) Open(context.Context, uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return nil, fuse.FOPEN_DIRECT_IO, fs.OK
}

func (d *delayImage) Read(_ context.Context, _ fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	// clock_nanosleep itself, not time.Sleep: the Go runtime's timers wake up to a millisecond late,
	// which would spread the reads over two buckets.
	ts := unix.NsecToTimespec(d.delay.Nanoseconds())
	for unix.Nanosleep(&ts, &ts) == unix.EINTR {
	}
	n := max(0, min(int64(len(dest)), d.size-off))
	clear(dest[:n])
	return fuse.ReadResultData(dest[:n]), fs.OK
}

func (d *delayImage) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFREG | 0o444
	out.Size = uint64(d.size)
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

// delayLoop attaches a read-only loop device to a delayImage of size bytes and returns its name
// (loopN). When the test ends the device is detached before the filesystem goes.
func delayLoop(t *testing.T, dir string, size int64, delay time.Duration) string {
	t.Helper()
	mp := filepath.Join(dir, "delay")
	serveFUSE(t, mp, &delayRoot{image: &delayImage{size: size, delay: delay}}, "e2e-delay", "e2edelay", func() {})
	return attachLoop(t, filepath.Join(mp, "disk.img"), "--read-only")
}
