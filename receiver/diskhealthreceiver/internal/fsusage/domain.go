package fsusage // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"

import (
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/blockdev"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/sanitize"
)

// Domain is the filesystem a mount lands on: every mount of one superblock (bind mounts, hostPath
// volumes, overlay upper dirs, PVC mounts on one filesystem) has the same Domain, so space is counted
// and alerted on once per Domain, not once per mount.
type Domain struct {
	// Major and Minor are the superblock's st_dev as mountinfo prints it: unique among the filesystems
	// mounted now (a block device's numbers, or an anonymous 0:N for tmpfs, overlay, btrfs, NFS).
	Major, Minor uint32
	// UUID is the filesystem's UUID where udev knows one (/dev/disk/by-uuid), "" otherwise. Unlike
	// major:minor it survives a reboot and a move to another device.
	UUID string
}

// ID returns "major:minor", the domain's key.
func (d Domain) ID() string { return blockdev.MajorMinor(d.Major, d.Minor) }

// MaxUUIDLinks bounds the /dev/disk/by-uuid entries read per refresh; a host has a few dozen.
const MaxUUIDLinks = 4096

// LinkFS is what a UUIDIndex reads: directory listings, links and stats, never file contents.
type LinkFS interface {
	fs.ReadDirFS
	fs.ReadLinkFS
	fs.StatFS
}

// UUIDIndex finds the UUID of the filesystem on a block device from the links udev keeps in
// /dev/disk/by-uuid (UUID → ../../<kernel name>) and the device's kernel name from
// /sys/dev/block/<major:minor> (a link ending in the name). It reads links only, re-lists the
// directory only when its modification time changes, and caches each device's name.
type UUIDIndex struct {
	fsys   LinkFS
	mtime  time.Time
	listed bool
	// byName is kernel name → UUID.
	byName map[string]string
	// names caches /sys/dev/block lookups ("" when there is none).
	names map[[2]uint32]string
}

// NewUUIDIndex reads below fsys, the root_path.
func NewUUIDIndex(fsys LinkFS) *UUIDIndex {
	return &UUIDIndex{fsys: fsys, names: map[[2]uint32]string{}}
}

// Refresh re-lists /dev/disk/by-uuid when it changed since the last listing. Without the directory
// (no udev, a container without /dev) every UUID is "".
func (x *UUIDIndex) Refresh() {
	st, err := x.fsys.Stat("dev/disk/by-uuid")
	if err != nil {
		x.byName, x.listed = nil, false
		return
	}
	if x.listed && st.ModTime().Equal(x.mtime) {
		return
	}
	x.mtime, x.listed = st.ModTime(), true
	entries, err := x.fsys.ReadDir("dev/disk/by-uuid")
	if err != nil {
		x.byName = nil
		return
	}
	links := make(map[string]string, min(len(entries), MaxUUIDLinks))
	for i, e := range entries {
		if i == MaxUUIDLinks {
			break
		}
		if target, err := x.fsys.ReadLink("dev/disk/by-uuid/" + e.Name()); err == nil {
			links[e.Name()] = target
		}
	}
	x.byName = UUIDsByName(links)
	// Device numbers are reused after a device goes; names are looked up again after a change.
	clear(x.names)
}

// UUIDsByName turns by-uuid links (UUID → link target) into kernel name → UUID. A UUID is sanitised
// (it is a file name, any bytes); a name two UUIDs point at keeps the smaller, so the result does not
// depend on listing order.
func UUIDsByName(links map[string]string) map[string]string {
	out := make(map[string]string, len(links))
	for uuid, target := range links {
		name := path.Base(target)
		if name == "." || name == "/" || name == "" {
			continue
		}
		uuid = sanitize.String(sanitize.FSUUID, uuid)
		if prev, ok := out[name]; ok && prev <= uuid {
			continue
		}
		out[name] = uuid
	}
	return out
}

// Domain returns m's domain. The device is found by its numbers; a filesystem on an anonymous device
// (btrfs) is found by its mount source when that is a /dev path.
func (x *UUIDIndex) Domain(m *Mount) Domain {
	d := Domain{Major: m.Major, Minor: m.Minor}
	if len(x.byName) == 0 {
		return d
	}
	if m.Major != 0 {
		d.UUID = x.byName[x.name(m.Major, m.Minor)]
	}
	if d.UUID == "" && strings.HasPrefix(m.Source, "/dev/") {
		d.UUID = x.byName[path.Base(m.Source)]
	}
	return d
}

// name is the kernel name of block device major:minor, "" when sysfs does not show it.
func (x *UUIDIndex) name(major, minor uint32) string {
	k := [2]uint32{major, minor}
	if n, ok := x.names[k]; ok {
		return n
	}
	n := ""
	if target, err := x.fsys.ReadLink("sys/dev/block/" + blockdev.MajorMinor(major, minor)); err == nil {
		n = path.Base(target)
	}
	x.names[k] = n
	return n
}
