package device

import (
	"errors"
	"fmt"
	"slices"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/scsi"
)

// logSenseAlloc is the allocation length of every LOG SENSE: the pages read
// here are far smaller, and some devices reject odd lengths.
const logSenseAlloc = 4096

// scsiHealthPages are the log pages read each time, when supported.
var scsiHealthPages = []uint8{scsi.PageWriteErrors, scsi.PageReadErrors, scsi.PageVerifyErrors,
	scsi.PageTemperature, scsi.PageStartStop, scsi.PageSelfTest, scsi.PageInformationalExceptions}

// readSCSI reads a SAS/SCSI disk: INQUIRY, READ CAPACITY(16) and the list
// of supported log pages once, then the health log pages. All of it works
// without privileges (the kernel lets these reads through).
func readSCSI(c *Conn, st *diskState, res *Result) {
	cache := &st.cache
	name := res.Disk.Name
	if cache.scsi == nil {
		b, err := c.Inquiry(false, 0, 96)
		if err != nil {
			res.Err = fmt.Errorf("%s: %w", name, err)
			return
		}
		inq, err := scsi.ParseInquiry(b)
		if err != nil {
			res.Status, res.Err = StatusError, fmt.Errorf("%s: INQUIRY: %w", name, err)
			return
		}
		data := &SCSIData{Inquiry: inq}
		if b, err := c.ReadCapacity16(); err == nil {
			data.Capacity, _ = scsi.ParseReadCapacity16(b)
		}
		cache.scsi = data
	}
	data := &SCSIData{Inquiry: cache.scsi.Inquiry, Capacity: cache.scsi.Capacity}
	snap := &Snapshot{SCSI: data}
	res.Snapshot = snap
	if data.Inquiry.DeviceType != 0 {
		res.Err = fmt.Errorf("%s: %w: peripheral device type %#02x is not a disk", name, ErrUnsupported, data.Inquiry.DeviceType)
		return
	}
	if !cache.scsiProbed {
		b, err := c.LogSense(scsi.PageSupported, 0, logSenseAlloc)
		if err != nil && !errors.Is(err, ErrUnsupported) {
			res.Err = fmt.Errorf("%s: %w", name, err)
			return
		}
		cache.scsiProbed = true
		if err == nil {
			refs, perr := scsi.ParseSupportedPages(b)
			if perr != nil {
				snap.Problems = append(snap.Problems, fmt.Errorf("%s: supported log pages: %w", name, perr))
			}
			for _, r := range refs {
				if slices.Contains(scsiHealthPages, r.Code) {
					cache.scsiPages = append(cache.scsiPages, r.Code)
				}
			}
		}
	}
	if len(cache.scsiPages) == 0 {
		res.Err = fmt.Errorf("%s: %w: the device keeps none of the health log pages", name, ErrUnsupported)
		return
	}
	problem := func(err error) { snap.Problems = append(snap.Problems, fmt.Errorf("%s: %w", name, err)) }
	for _, p := range cache.scsiPages {
		b, err := c.LogSense(p, 0, logSenseAlloc)
		if err != nil {
			if errors.Is(err, ErrPermission) || errors.Is(err, ErrTimeout) {
				res.Err = fmt.Errorf("%s: %w", name, err)
				return
			}
			problem(err)
			continue
		}
		switch p {
		case scsi.PageWriteErrors, scsi.PageReadErrors, scsi.PageVerifyErrors:
			ec, err := scsi.ParseErrorCounters(b)
			if err != nil {
				problem(fmt.Errorf("log page %02Xh: %w", p, err))
				continue
			}
			data.ErrorCounters = append(data.ErrorCounters, ec)
		case scsi.PageTemperature:
			t, err := scsi.ParseTemperaturePage(b)
			if err != nil {
				problem(fmt.Errorf("log page %02Xh: %w", p, err))
				continue
			}
			data.Temperature = &t
		case scsi.PageStartStop:
			ss, err := scsi.ParseStartStop(b)
			if err != nil {
				problem(fmt.Errorf("log page %02Xh: %w", p, err))
				continue
			}
			data.StartStop = &ss
		case scsi.PageSelfTest:
			r, err := scsi.ParseSelfTestResults(b)
			if err != nil {
				problem(fmt.Errorf("log page %02Xh: %w", p, err))
				continue
			}
			data.SelfTests = r
		case scsi.PageInformationalExceptions:
			ie, err := scsi.ParseInformationalExceptions(b)
			if err != nil {
				problem(fmt.Errorf("log page %02Xh: %w", p, err))
				continue
			}
			data.IE = &ie
		}
	}
}
