//go:build linux

// Package fsusagetest is the statfs stand-in and the host mount table the filesystem and capacity
// sources' tests share.
package fsusagetest // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage/fsusagetest"

import (
	"path/filepath"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Statfs answers statfs from a table keyed by the path asked for; a missing path is ENOENT and a path
// in Hang blocks until Release is closed. Lock Mu to change it between scrapes.
type Statfs struct {
	Mu      sync.Mutex
	Answers map[string]unix.Statfs_t
	Errs    map[string]error
	Hang    map[string]bool
	Release chan struct{}
}

// Statfs is the stand-in for unix.Statfs (fsusage.ProberConfig.Statfs).
func (f *Statfs) Statfs(path string, st *unix.Statfs_t) error {
	f.Mu.Lock()
	hang, err, a := f.Hang[path], f.Errs[path], f.Answers[path]
	_, ok := f.Answers[path]
	f.Mu.Unlock()
	if hang {
		<-f.Release
	}
	if err != nil {
		return err
	}
	if !ok {
		return syscall.ENOENT
	}
	*st = a
	return nil
}

// Ext4 is an ext4 statfs answer with 4 KiB blocks.
func Ext4(blocks, bfree, bavail, files, ffree uint64) unix.Statfs_t {
	return unix.Statfs_t{Type: 0xef53, Bsize: 4096, Frsize: 4096, Blocks: blocks, Bfree: bfree, Bavail: bavail, Files: files, Ffree: ffree}
}

// HostMountinfo is a host's mount table: ext4 /, xfs /data and a bind of its subtree, a read-only
// /backup, pseudo filesystems, a tmpfs, a squashfs and an ext4 /mnt/old.
const HostMountinfo = `25 1 253:0 / / rw,relatime shared:1 - ext4 /dev/mapper/vg0-root rw,errors=remount-ro
26 25 0:23 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
27 25 0:24 / /proc rw,nosuid,nodev,noexec,relatime shared:13 - proc proc rw
30 25 259:2 / /data rw,relatime shared:30 - xfs /dev/nvme0n1p2 rw,attr2,inode64
31 25 259:2 /exports /srv/exports rw,relatime shared:31 - xfs /dev/nvme0n1p2 rw,attr2,inode64
32 25 8:1 / /backup ro,relatime shared:32 - ext4 /dev/sda1 ro
33 25 0:45 / /run/user/1000 rw,nosuid,nodev,relatime shared:33 - tmpfs tmpfs rw,size=1630000k
34 25 7:0 / /snap/core/1 ro,nodev,relatime shared:34 - squashfs /dev/loop0 ro
35 25 8:17 / /mnt/old ro,relatime shared:35 - ext4 /dev/sdb1 rw
`

// HostStatfs answers statfs for HostMountinfo under root: ext4 /, xfs /data, a full ext4 /backup,
// and /mnt/old refusing with EACCES.
func HostStatfs(root string) *Statfs {
	return &Statfs{Answers: map[string]unix.Statfs_t{
		filepath.Join(root, "/"):       Ext4(2_500_000, 1_000_000, 875_000, 655_360, 500_000),
		filepath.Join(root, "/data"):   {Type: 0x58465342, Bsize: 4096, Frsize: 4096, Blocks: 100_000_000, Bfree: 40_000_000, Bavail: 40_000_000, Files: 200_000_000, Ffree: 199_000_000},
		filepath.Join(root, "/backup"): Ext4(1_000_000, 0, 0, 65_536, 60_000),
	}, Errs: map[string]error{
		filepath.Join(root, "/mnt/old"): syscall.EACCES,
	}}
}
