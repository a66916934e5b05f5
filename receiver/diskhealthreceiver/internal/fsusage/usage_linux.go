package fsusage // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"

import (
	"math"

	"golang.org/x/sys/unix"
)

// UsageFromStatfs converts a statfs result. Block counts are in units of
// f_frsize, the fragment size, as POSIX and df use them; f_bsize is the
// preferred I/O size. The two are equal on ext4 and xfs but not everywhere
// (some network and FUSE filesystems), which is why hostmetrics and
// node_exporter, which multiply by f_bsize, can disagree with df. An old
// kernel or filesystem leaving f_frsize 0 falls back to f_bsize.
//
// Inconsistent counts (free above total, available above free, as some
// FUSE filesystems report) are clamped so that the states still add up to
// the limit. So are counts whose bytes would pass the signed 64-bit range
// the data points carry (a total of 8 EiB or more, which only a broken
// filesystem reports): the block count is cut to the largest that fits, and
// the inode count to 2^63 - 1, so no value goes out negative.
func UsageFromStatfs(st *unix.Statfs_t) Usage {
	bs := uint64(st.Frsize)
	if st.Frsize <= 0 {
		bs = uint64(max(st.Bsize, 0))
	}
	blocks := st.Blocks
	if bs > 0 {
		blocks = min(blocks, math.MaxInt64/bs)
	}
	bfree := min(st.Bfree, blocks)
	bavail := min(st.Bavail, bfree)
	u := Usage{
		Limit:    blocks * bs,
		Used:     (blocks - bfree) * bs,
		Free:     bavail * bs,
		Reserved: (bfree - bavail) * bs,
		ReadOnly: st.Flags&unix.ST_RDONLY != 0,
	}
	if st.Files > 0 {
		files := min(st.Files, math.MaxInt64)
		ffree := min(st.Ffree, files)
		u.Inodes = files
		u.InodesFree = ffree
		u.InodesUsed = files - ffree
	}
	return u
}
