package blockdev

import "strconv"

// MajorMinor formats a device number as "major:minor", the form /proc, sysfs (dev, /sys/dev/block)
// and the disk.major_minor attribute use: the one formatter of the project, so every source names a
// device number the same way.
func MajorMinor(major, minor uint32) string {
	var b [21]byte // two uint32 (10 digits each) and the colon
	out := strconv.AppendUint(b[:0], uint64(major), 10)
	out = append(out, ':')
	out = strconv.AppendUint(out, uint64(minor), 10)
	return string(out)
}
