package fsusage // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"

import "golang.org/x/sys/unix"

// UsageFromStatfs converts a statfs result. Block counts are in units of
// f_frsize, the fragment size, as POSIX and df use them; f_bsize is the
// preferred I/O size. The two are equal on ext4 and xfs but not everywhere
// (some network and FUSE filesystems), which is why hostmetrics and
// node_exporter, which multiply by f_bsize, can disagree with df. An old
// kernel or filesystem leaving f_frsize 0 falls back to f_bsize.
//
// Inconsistent counts (free above total, available above free, as some
// FUSE filesystems report) are clamped so that the states still add up to
// the limit.
func UsageFromStatfs(st *unix.Statfs_t) Usage {
	bs := uint64(st.Frsize)
	if st.Frsize <= 0 {
		bs = uint64(max(st.Bsize, 0))
	}
	bfree := min(st.Bfree, st.Blocks)
	bavail := min(st.Bavail, bfree)
	u := Usage{
		Limit:    st.Blocks * bs,
		Used:     (st.Blocks - bfree) * bs,
		Free:     bavail * bs,
		Reserved: (bfree - bavail) * bs,
		ReadOnly: st.Flags&unix.ST_RDONLY != 0,
	}
	if st.Files > 0 {
		ffree := min(st.Ffree, st.Files)
		u.Inodes = st.Files
		u.InodesFree = ffree
		u.InodesUsed = st.Files - ffree
	}
	return u
}
