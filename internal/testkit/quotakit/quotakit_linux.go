package quotakit // import "github.com/diskhealth/diskhealth/internal/testkit/quotakit"

import (
	"fmt"
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// AttachLoop binds img to a free loop device, as losetup -f does, and returns the device and how to
// detach it.
func AttachLoop(img string) (dev string, detach func(), err error) {
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
	if err != nil {
		return "", nil, err
	}
	defer func() { _ = ctl.Close() }() // a control node: nothing to lose
	n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
	if err != nil {
		return "", nil, fmt.Errorf("LOOP_CTL_GET_FREE: %w", err)
	}
	dev = fmt.Sprintf("/dev/loop%d", n)
	var lf *os.File
	for i := 0; ; i++ { // devtmpfs makes the node a moment after the device exists
		if lf, err = os.OpenFile(dev, os.O_RDWR, 0); err == nil || i == 50 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return "", nil, err
	}
	f, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		_ = lf.Close()
		return "", nil, err
	}
	defer func() { _ = f.Close() }() // the loop device holds the image from here
	if err := unix.IoctlSetInt(int(lf.Fd()), unix.LOOP_SET_FD, int(f.Fd())); err != nil {
		_ = lf.Close()
		return "", nil, fmt.Errorf("LOOP_SET_FD %s: %w", dev, err)
	}
	return dev, func() {
		_ = unix.IoctlSetInt(int(lf.Fd()), unix.LOOP_CLR_FD, 0)
		_ = lf.Close()
	}, nil
}

// fsxattr is struct fsxattr (linux/fs.h).
type fsxattr struct {
	XFlags, ExtSize, NExtents, ProjID, CowExtSize uint32
	Pad                                           [8]byte
}

const (
	fsIocFSGetXattr    = 0x801c581f
	fsIocFSSetXattr    = 0x401c5820
	fsXflagProjInherit = 0x200
)

// SetProject gives dir project id, inherited by what is created in it.
func SetProject(dir string, id uint32) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // opened for an ioctl: nothing to lose
	var x fsxattr
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, f.Fd(), fsIocFSGetXattr, uintptr(unsafe.Pointer(&x))); e != 0 {
		return fmt.Errorf("FS_IOC_FSGETXATTR %s: %w", dir, e)
	}
	x.ProjID, x.XFlags = id, x.XFlags|fsXflagProjInherit
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, f.Fd(), fsIocFSSetXattr, uintptr(unsafe.Pointer(&x))); e != 0 {
		return fmt.Errorf("FS_IOC_FSSETXATTR %s: %w", dir, e)
	}
	return nil
}

// ifDqblk is struct if_dqblk (linux/quota.h).
type ifDqblk struct {
	BHardLimit, BSoftLimit, CurSpace, IHardLimit, ISoftLimit, CurInodes, BTime, ITime uint64
	Valid                                                                             uint32
	_                                                                                 uint32
}

// SetProjectLimits sets project id's block limits (bytes; the interface counts 1 KiB units) and inode
// hard limit on the filesystem at mnt, through quotactl_fd(2) Q_SETQUOTA.
func SetProjectLimits(mnt string, id uint32, hard, soft, ihard uint64) error {
	f, err := os.Open(mnt)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // opened for an ioctl: nothing to lose
	const qSetQuota, prjQuota, qifLimits = 0x800008, 2, 1 | 4
	q := ifDqblk{BHardLimit: hard >> 10, BSoftLimit: soft >> 10, IHardLimit: ihard, Valid: qifLimits}
	if _, _, e := unix.Syscall6(unix.SYS_QUOTACTL_FD, f.Fd(), qSetQuota<<8|prjQuota, uintptr(id), uintptr(unsafe.Pointer(&q)), 0, 0); e != 0 {
		return fmt.Errorf("Q_SETQUOTA project %d on %s: %w", id, mnt, e)
	}
	return nil
}
