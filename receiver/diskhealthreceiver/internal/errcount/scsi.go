package errcount

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
)

// SCSICounters are a SCSI device's command counters (drivers/scsi
// scsi_sysfs.c): every command the midlayer queued, completed, completed
// with a non-zero status, and timed out. Pass-through commands (SG_IO) are
// commands like any other: an ATA command sent with CK_COND completes with
// CHECK CONDITION so that its registers come back, and counts in Errors.
// Each is a 32-bit atomic_t in the kernel that wraps at 2^32.
type SCSICounters struct {
	Requests uint32 // iorequest_cnt
	Done     uint32 // iodone_cnt
	Errors   uint32 // ioerr_cnt
	Timeouts uint32 // iotmo_cnt
}

// ParseHexCounter parses "0x1f\n".
func ParseHexCounter(b []byte) (uint64, error) {
	s := strings.TrimSpace(string(b))
	h, ok := strings.CutPrefix(s, "0x")
	if !ok || h == "" {
		return 0, fmt.Errorf("%q: want 0x<hex>", s)
	}
	return strconv.ParseUint(h, 16, 64)
}

// ParseSCSICounter parses a SCSI *_cnt file. The kernel prints the 32-bit
// atomic_t through a cast to unsigned long long of the int it reads
// (show_sdev_iostat, "0x%llx"), so from 2^31 on the value comes
// sign-extended (0xffffffff80000000); its low 32 bits are the counter. A
// value that is neither a 32-bit one nor a sign-extended one is an error.
func ParseSCSICounter(b []byte) (uint32, error) {
	v, err := ParseHexCounter(b)
	if err != nil {
		return 0, err
	}
	if hi := v >> 32; hi != 0 && (hi != 0xffffffff || int32(uint32(v)) >= 0) {
		return 0, fmt.Errorf("%q: not a 32-bit counter", strings.TrimSpace(string(b))) // quoted: an example, not the problem's identity
	}
	return uint32(v), nil
}

func validName(name string) bool {
	return name != "" && fs.ValidPath(name) && !strings.Contains(name, "/")
}

// ReadSCSI reads block/<name>/device/*_cnt. A device without them (not
// SCSI-driven) returns an error matching fs.ErrNotExist.
func ReadSCSI(sys fs.FS, name string) (SCSICounters, error) {
	if !validName(name) {
		return SCSICounters{}, fmt.Errorf("%q: not a device name", name)
	}
	var c SCSICounters
	var errs []error
	for _, a := range []struct {
		file string
		dst  *uint32
	}{{"iorequest_cnt", &c.Requests}, {"iodone_cnt", &c.Done}, {"ioerr_cnt", &c.Errors}, {"iotmo_cnt", &c.Timeouts}} {
		p := "block/" + name + "/device/" + a.file
		b, err := fs.ReadFile(sys, p)
		if err != nil {
			if a.file == "iorequest_cnt" && errors.Is(err, fs.ErrNotExist) {
				return SCSICounters{}, err
			}
			errs = append(errs, err)
			continue
		}
		if *a.dst, err = ParseSCSICounter(b); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
		}
	}
	return c, errors.Join(errs...)
}
