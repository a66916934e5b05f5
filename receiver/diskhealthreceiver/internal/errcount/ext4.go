package errcount

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/blockdev"
)

// Ext4Errors is what ext4 recorded about errors (fs/ext4/sysfs.c; the
// values live in the superblock and survive remounts until fsck clears
// them).
type Ext4Errors struct {
	Device string // kernel name: /sys/fs/ext4/<Device>
	Count  uint64 // errors_count, when HasCount
	// HasCount is false when errors_count could not be read or parsed: Count is no count then.
	HasCount bool
	// FirstErrorTime and LastErrorTime are zero when none was recorded.
	FirstErrorTime, LastErrorTime time.Time
	// FirstErrorCode and LastErrorCode are the errno-like codes ext4
	// stores (EXT4_ERR_*), 0 when none or not exposed.
	FirstErrorCode, LastErrorCode uint64
}

func readDecimal(sys fs.FS, p string, optional bool) (uint64, error) {
	b, err := fs.ReadFile(sys, p)
	if err != nil {
		if optional && errors.Is(err, fs.ErrNotExist) {
			return 0, nil
		}
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a number", p, s)
	}
	return v, nil
}

func unixTime(sec uint64) time.Time {
	if sec == 0 || sec > 1<<40 {
		return time.Time{}
	}
	return time.Unix(int64(sec), 0).UTC()
}

// ReadExt4Device reads fs/ext4/<dev>.
func ReadExt4Device(sys fs.FS, dev string) (Ext4Errors, error) {
	if !validName(dev) {
		return Ext4Errors{}, fmt.Errorf("%q: not a device name", dev)
	}
	dir := "fs/ext4/" + dev + "/"
	e := Ext4Errors{Device: dev}
	var errs []error
	var first, last uint64
	for _, a := range []struct {
		file     string
		dst      *uint64
		optional bool
	}{
		{"errors_count", &e.Count, false}, {"first_error_time", &first, false}, {"last_error_time", &last, false},
		{"first_error_errcode", &e.FirstErrorCode, true}, {"last_error_errcode", &e.LastErrorCode, true},
	} {
		v, err := readDecimal(sys, dir+a.file, a.optional)
		if err != nil {
			errs = append(errs, err)
		}
		*a.dst = v
		if a.dst == &e.Count {
			e.HasCount = err == nil
		}
	}
	e.FirstErrorTime, e.LastErrorTime = unixTime(first), unixTime(last)
	return e, errors.Join(errs...)
}

// ReadExt4 reads every mounted ext4 under sys/fs/ext4, sorted by device.
// A missing fs/ext4 (no ext4 mounted, or the module not loaded) is no
// error.
func ReadExt4(sys fs.FS) ([]Ext4Errors, error) {
	des, err := fs.ReadDir(sys, "fs/ext4")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var out []Ext4Errors
	var errs []error
	for _, de := range des {
		if de.Name() == "features" {
			continue
		}
		e, err := ReadExt4Device(sys, de.Name())
		if err != nil {
			errs = append(errs, err)
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Ext4Errors) int { return strings.Compare(a.Device, b.Device) })
	return out, errors.Join(errs...)
}

// DeviceName resolves major:minor to the kernel name through
// sys/dev/block/<major>:<minor>, a symlink to the device's directory.
func DeviceName(sys fs.FS, major, minor uint32) (string, error) {
	target, err := fs.ReadLink(sys, "dev/block/"+blockdev.MajorMinor(major, minor))
	if err != nil {
		return "", err
	}
	name := path.Base(target)
	if !validName(name) || name == ".." {
		return "", fmt.Errorf("dev/block/%s -> %q", blockdev.MajorMinor(major, minor), target)
	}
	return name, nil
}
