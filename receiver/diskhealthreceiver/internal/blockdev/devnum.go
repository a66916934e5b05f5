package blockdev

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/bounded"
)

// MajorMinor formats a device number as "major:minor", the form /proc, sysfs (dev, /sys/dev/block)
// and the disk_health.disk.major_minor attribute use: the one formatter of the project, so every source names a
// device number the same way.
func MajorMinor(major, minor uint32) string {
	var b [21]byte // two uint32 (10 digits each) and the colon
	out := strconv.AppendUint(b[:0], uint64(major), 10)
	out = append(out, ':')
	out = strconv.AppendUint(out, uint64(minor), 10)
	return string(out)
}

// ParseMajorMinor parses what MajorMinor formats (a sysfs dev attribute, its newline trimmed).
func ParseMajorMinor(b []byte) (major, minor uint32, ok bool) {
	maj, mn, found := bytes.Cut(bytes.TrimSpace(b), []byte(":"))
	if !found {
		return 0, 0, false
	}
	a, err1 := strconv.ParseUint(string(maj), 10, 32)
	c, err2 := strconv.ParseUint(string(mn), 10, 32)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return uint32(a), uint32(c), true
}

// WholeDisk returns the device number of the disk that holds block device major:minor: a partition's
// disk, the device itself otherwise (a disk, loop, dm or md device). Per-cgroup I/O statistics (v2
// io.stat, v1 blkio) count per whole disk, while a filesystem's st_dev may be a partition. sysRoot is
// "/sys" or "<root_path>/sys"; /sys/dev/block/<major:minor> links to the device's directory, whose
// parent is its disk's when it has a partition attribute.
func WholeDisk(sysRoot string, major, minor uint32) (uint32, uint32, error) {
	link := filepath.Join(sysRoot, "dev", "block", MajorMinor(major, minor))
	if _, err := os.Stat(filepath.Join(link, "partition")); errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(link); err != nil {
			return 0, 0, err
		}
		return major, minor, nil
	} else if err != nil {
		return 0, 0, err
	}
	target, err := os.Readlink(link)
	if err != nil {
		return 0, 0, err
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(link), target)
	} else {
		target = filepath.Join(sysRoot, "..", target) // an absolute link names a host path: below the root
	}
	file := filepath.Join(filepath.Dir(target), "dev")
	data, err := bounded.ReadFile(file, bounded.Attr, nil)
	if err != nil {
		return 0, 0, err
	}
	dmaj, dmin, ok := ParseMajorMinor(data)
	if !ok {
		return 0, 0, fmt.Errorf("%s: %q is not major:minor", file, clip(string(data)))
	}
	return dmaj, dmin, nil
}
