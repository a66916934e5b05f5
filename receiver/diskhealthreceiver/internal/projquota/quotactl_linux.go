package projquota // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/projquota"

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"unsafe"

	"golang.org/x/sys/unix"
)

// From linux/quota.h: the generic interface, which XFS and ext4 both implement.
const (
	qGetNextQuota = 0x800009
	prjQuota      = 2
	subCmdShift   = 8
	// dqBlkSize is the unit of the block limits in struct if_dqblk (QIF_DQBLKSIZE).
	dqBlkSize = 1024
)

// ifNextDqblk is struct if_nextdqblk.
type ifNextDqblk struct {
	BHardLimit, BSoftLimit, CurSpace  uint64
	IHardLimit, ISoftLimit, CurInodes uint64
	BTime, ITime                      uint64
	Valid, ID                         uint32
}

// Read appends to dst the project quota records of the filesystem holding dir (a directory on it, seen
// from this process), project 0 (everything not in a project) left out. It asks quotactl_fd(2) on dir
// (Linux 5.14+) and, where the kernel lacks it, quotactl(2) on device (the filesystem's block device,
// seen from this process). Both need CAP_SYS_ADMIN.
func Read(dir, device string, dst []Project) ([]Project, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return dst, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	defer func() { _ = unix.Close(fd) }() // read-only: a failed close loses nothing
	get := func(id uint32, q *ifNextDqblk) error { return quotactlFD(fd, id, q) }
	var q ifNextDqblk
	if err := get(0, &q); errors.Is(err, unix.ENOSYS) {
		if device == "" {
			return dst, fmt.Errorf("quotactl_fd: %w, and no device for quotactl", err)
		}
		dev, err := unix.BytePtrFromString(device)
		if err != nil {
			return dst, err
		}
		get = func(id uint32, q *ifNextDqblk) error { return quotactl(dev, id, q) }
	}
	return scan(get, dst)
}

// scan walks the records from ID 0 upwards: Q_GETNEXTQUOTA answers the first ID at or above the one asked
// that has a record (usage or limits), ENOENT past the last.
func scan(get func(uint32, *ifNextDqblk) error, dst []Project) ([]Project, error) {
	var q ifNextDqblk
	for id, n := uint32(0), 0; ; n++ {
		if n == MaxScan {
			return dst, ErrTruncated
		}
		err := get(id, &q)
		switch {
		case errors.Is(err, unix.ENOENT):
			return dst, nil
		case errors.Is(err, unix.ESRCH):
			return dst, ErrOff
		case err != nil:
			return dst, fmt.Errorf("quotactl Q_GETNEXTQUOTA (project %d): %w", id, err)
		}
		if q.ID != 0 {
			dst = append(dst, Project{
				ID: q.ID, Used: q.CurSpace, Inodes: q.CurInodes,
				BlockHard: q.BHardLimit * dqBlkSize, BlockSoft: q.BSoftLimit * dqBlkSize,
				InodeHard: q.IHardLimit, InodeSoft: q.ISoftLimit,
			})
		}
		if q.ID == math.MaxUint32 || q.ID < id {
			return dst, nil
		}
		id = q.ID + 1
	}
}

func quotactlFD(fd int, id uint32, q *ifNextDqblk) error {
	_, _, e := unix.Syscall6(unix.SYS_QUOTACTL_FD, uintptr(fd), qGetNextQuota<<subCmdShift|prjQuota, uintptr(id),
		uintptr(unsafe.Pointer(q)), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

func quotactl(dev *byte, id uint32, q *ifNextDqblk) error {
	_, _, e := unix.Syscall6(unix.SYS_QUOTACTL, qGetNextQuota<<subCmdShift|prjQuota, uintptr(unsafe.Pointer(dev)), uintptr(id),
		uintptr(unsafe.Pointer(q)), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}
