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
// with an error, and timed out.
type SCSICounters struct {
	Requests uint64 // iorequest_cnt
	Done     uint64 // iodone_cnt
	Errors   uint64 // ioerr_cnt
	Timeouts uint64 // iotmo_cnt
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
		dst  *uint64
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
		if *a.dst, err = ParseHexCounter(b); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
		}
	}
	return c, errors.Join(errs...)
}
