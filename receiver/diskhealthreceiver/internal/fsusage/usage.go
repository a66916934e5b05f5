package fsusage // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"

// Usage is one filesystem's capacity in bytes and inodes, as df computes it.
// Used+Free+Reserved == Limit always holds.
type Usage struct {
	// Limit is the filesystem's data capacity (f_blocks).
	Limit uint64
	// Used is Limit minus every free block (f_blocks - f_bfree).
	Used uint64
	// Free is what unprivileged users can still write (f_bavail), df's
	// "Avail"; semconv's state=free.
	Free uint64
	// Reserved is free but kept for root (f_bfree - f_bavail), e.g. ext4's
	// 5 % reserve.
	Reserved uint64

	// Inodes is the inode table size (f_files); 0 for filesystems that
	// allocate inodes dynamically and have no limit (btrfs, some network
	// filesystems), for which the inode numbers mean nothing.
	Inodes     uint64
	InodesUsed uint64
	InodesFree uint64 // f_ffree

	// ReadOnly is the live ST_RDONLY flag of statfs (the mount's or the
	// superblock's), which follows remounts and an ext4 errors=remount-ro
	// without waiting for the mount table to be re-read.
	ReadOnly bool
}

// Utilization is df's Use%: Used / (Used + Free), in 0..1, leaving out the
// root reserve as df does. ok is false for a filesystem with no usable
// space at all (proc-like or empty), which should report nothing rather
// than NaN.
func (u Usage) Utilization() (ratio float64, ok bool) {
	d := u.Used + u.Free
	if d == 0 {
		return 0, false
	}
	return float64(u.Used) / float64(d), true
}
