package fsusage // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"

import "strings"

// FSClass groups filesystem types by what watching their usage means and
// how risky a statfs on them is.
type FSClass uint8

const (
	// ClassLocal holds filesystems backed by a local block device or pool (ext4, xfs, btrfs,
	// zfs, vfat, fuseblk, ...). Kept by default. Unknown types are local:
	// a real filesystem we have not heard of is worth reporting, and a
	// zero-size one costs only a status line.
	ClassLocal FSClass = iota
	// ClassMemory holds tmpfs and ramfs. Real usage, but of RAM; opt-in.
	ClassMemory
	// ClassRemote holds network and FUSE filesystems, whose statfs can block
	// for as long as a server or daemon is gone. Opt-in, with their own
	// timeout.
	ClassRemote
	// ClassVirtual holds kernel interfaces (proc, sysfs, cgroup, ...), views
	// over other filesystems (overlay: its statfs repeats the upper
	// layer's), and read-only images that are always full (squashfs,
	// erofs, iso9660). Reported only when named in fs_types.include.
	ClassVirtual
)

func (c FSClass) String() string {
	switch c {
	case ClassLocal:
		return "local"
	case ClassMemory:
		return "memory"
	case ClassRemote:
		return "remote"
	case ClassVirtual:
		return "virtual"
	}
	return "unknown"
}

var fsClasses = map[string]FSClass{
	"tmpfs": ClassMemory,
	"ramfs": ClassMemory,

	"nfs": ClassRemote, "nfs4": ClassRemote, "cifs": ClassRemote, "smb3": ClassRemote,
	"smbfs": ClassRemote, "ncpfs": ClassRemote, "ceph": ClassRemote, "glusterfs": ClassRemote,
	"9p": ClassRemote, "virtiofs": ClassRemote, "afs": ClassRemote, "lustre": ClassRemote,
	"gpfs": ClassRemote, "beegfs": ClassRemote, "ocfs2": ClassRemote, "gfs2": ClassRemote,
	"orangefs": ClassRemote, "pvfs2": ClassRemote, "coda": ClassRemote, "davfs": ClassRemote,
	"vboxsf": ClassRemote, "vmhgfs": ClassRemote, "drvfs": ClassRemote, "fuse": ClassRemote,

	"autofs": ClassVirtual, "binfmt_misc": ClassVirtual, "bpf": ClassVirtual,
	"cgroup": ClassVirtual, "cgroup2": ClassVirtual, "configfs": ClassVirtual,
	"debugfs": ClassVirtual, "devpts": ClassVirtual, "devtmpfs": ClassVirtual,
	"efivarfs": ClassVirtual, "fusectl": ClassVirtual, "hugetlbfs": ClassVirtual,
	"mqueue": ClassVirtual, "nsfs": ClassVirtual, "proc": ClassVirtual,
	"pstore": ClassVirtual, "rpc_pipefs": ClassVirtual, "securityfs": ClassVirtual,
	"selinuxfs": ClassVirtual, "sysfs": ClassVirtual, "tracefs": ClassVirtual,
	"nfsd": ClassVirtual, "rootfs": ClassVirtual, "overlay": ClassVirtual,
	"aufs": ClassVirtual, "squashfs": ClassVirtual, "erofs": ClassVirtual,
	"iso9660": ClassVirtual, "cramfs": ClassVirtual, "romfs": ClassVirtual,
	"ramdiskfs": ClassVirtual, "sockfs": ClassVirtual, "pipefs": ClassVirtual,
	"anon_inodefs": ClassVirtual, "dax": ClassVirtual, "bdev": ClassVirtual,
}

// Classify returns the class of a mountinfo filesystem type. Every FUSE
// filesystem ("fuse", "fuse.sshfs", ...) is remote because its answers
// depend on a user-space daemon, except fuseblk, which is FUSE on a local
// block device (ntfs-3g, exfat-fuse).
func Classify(fsType string) FSClass {
	if c, ok := fsClasses[fsType]; ok {
		return c
	}
	if strings.HasPrefix(fsType, "fuse.") {
		return ClassRemote
	}
	return ClassLocal
}
