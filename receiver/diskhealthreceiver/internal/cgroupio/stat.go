// Package cgroupio reads per-cgroup block I/O accounting — cgroup v2 io.stat and io.pressure, cgroup v1
// blkio.throttle.io_service_bytes_recursive and io_serviced_recursive — attributes each cgroup to a
// container, pod or systemd unit from its path, and selects the few cgroups that did the most I/O since
// the last collection while reading as little of a large hierarchy as it can.
//
// Parsers take []byte and never open files; the Collector reads through the FS interface.
package cgroupio // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/cgroupio"

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// Counters are one cgroup's cumulative I/O on one device, as the kernel accounts it at bio submission.
type Counters struct {
	ReadBytes, WriteBytes, DiscardBytes uint64
	ReadOps, WriteOps, DiscardOps       uint64
}

// Bytes is every byte moved: read, written and discarded.
func (c *Counters) Bytes() uint64 { return c.ReadBytes + c.WriteBytes + c.DiscardBytes }

// DeviceStat is one device's line (v2) or group of lines (v1) in a cgroup's I/O statistics.
type DeviceStat struct {
	Major, Minor uint32
	Counters
	// HasDiscard is set when the kernel reported discards (v2 dbytes/dios since 5.0; the v1 "Discard" row
	// since 4.19), so a kernel that does not count them is not reported as "no discards".
	HasDiscard bool
}

// LineError describes a line a parser skipped; the other lines are still returned.
type LineError struct {
	File   string // "io.stat", "blkio.throttle.io_service_bytes_recursive" …
	Line   int    // 1-based
	Device string // "8:0", or "" when the line has none
	Err    error
}

func (e *LineError) Error() string {
	dev := ""
	if e.Device != "" {
		dev = " (" + e.Device + ")"
	}
	return fmt.Sprintf("%s line %d%s: %v", e.File, e.Line, dev, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

var (
	errDevice  = errors.New("device is not major:minor")
	errField   = errors.New("field is not key=value")
	errColumns = errors.New("want 3 columns: major:minor operation value")
	errTwice   = errors.New("device appears twice")
)

// maxQuote bounds how much of a bad field an error quotes.
const maxQuote = 40

func quote(b []byte) string {
	if len(b) > maxQuote {
		b = b[:maxQuote]
	}
	return strconv.Quote(string(b))
}

// ParseIOStat parses a cgroup v2 io.stat, one line per device:
//
//	8:0 rbytes=90112 wbytes=4096 rios=22 wios=1 dbytes=0 dios=0
//
// It appends to dst[:0]. Keys other than the six counters (iocost, iolatency) are ignored. A line with
// a bad device or value is skipped and reported in the returned errors.Join of *LineError.
func ParseIOStat(data []byte, dst []DeviceStat) ([]DeviceStat, error) {
	dst = dst[:0]
	var errs []error
	lineNo := 0
	for line := range bytes.Lines(data) {
		lineNo++
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		devField, rest, _ := bytes.Cut(line, []byte(" "))
		maj, min, ok := parseDevice(devField)
		if !ok {
			errs = append(errs, &LineError{File: "io.stat", Line: lineNo, Err: fmt.Errorf("%w: %s", errDevice, quote(devField))})
			continue
		}
		st := DeviceStat{Major: maj, Minor: min}
		if err := parseKeyValues(rest, &st); err != nil {
			errs = append(errs, &LineError{File: "io.stat", Line: lineNo, Device: string(devField), Err: err})
			continue
		}
		if indexOf(dst, maj, min) >= 0 {
			errs = append(errs, &LineError{File: "io.stat", Line: lineNo, Device: string(devField), Err: errTwice})
			continue
		}
		dst = append(dst, st)
	}
	return dst, errors.Join(errs...)
}

func parseKeyValues(fields []byte, st *DeviceStat) error {
	for field := range bytes.FieldsSeq(fields) {
		key, val, ok := bytes.Cut(field, []byte("="))
		if !ok {
			return fmt.Errorf("%w: %s", errField, quote(field))
		}
		var dst *uint64
		switch string(key) {
		case "rbytes":
			dst = &st.ReadBytes
		case "wbytes":
			dst = &st.WriteBytes
		case "rios":
			dst = &st.ReadOps
		case "wios":
			dst = &st.WriteOps
		case "dbytes":
			dst, st.HasDiscard = &st.DiscardBytes, true
		case "dios":
			dst, st.HasDiscard = &st.DiscardOps, true
		default:
			continue
		}
		v, err := strconv.ParseUint(string(val), 10, 64)
		if err != nil {
			return fmt.Errorf("%s=%s: %w", key, quote(val), errors.Unwrap(err))
		}
		*dst = v
	}
	return nil
}

// Blkio file names (cgroup v1). The _recursive files include descendants, which lets the Collector skip
// a subtree whose total did not move.
const (
	BlkioBytesFile = "blkio.throttle.io_service_bytes_recursive"
	BlkioOpsFile   = "blkio.throttle.io_serviced_recursive"
)

// ParseBlkio parses cgroup v1 blkio throttle statistics: the bytes file and, when ops is not nil, the
// operations file, whose rows look alike:
//
//	8:0 Read 90112
//	8:0 Write 4096
//	8:0 Sync 4096
//	8:0 Async 90112
//	8:0 Discard 0
//	8:0 Total 94208
//	Total 94208
//
// Read, Write and Discard are kept (Sync/Async split the same I/O another way; Total is their sum). It
// appends one DeviceStat per device to dst[:0] in the bytes file's order; a device only in the ops file is
// appended after. Bad rows are skipped and reported as *LineError.
func ParseBlkio(bytesData, ops []byte, dst []DeviceStat) ([]DeviceStat, error) {
	dst = dst[:0]
	var errs []error
	dst = parseBlkio(BlkioBytesFile, bytesData, dst, false, &errs)
	if ops != nil {
		dst = parseBlkio(BlkioOpsFile, ops, dst, true, &errs)
	}
	return dst, errors.Join(errs...)
}

func parseBlkio(file string, data []byte, dst []DeviceStat, ops bool, errs *[]error) []DeviceStat {
	lineNo := 0
	for line := range bytes.Lines(data) {
		lineNo++
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		devField, rest, _ := bytes.Cut(line, []byte(" "))
		if string(devField) == "Total" {
			continue // the sum over devices
		}
		opName, val, ok := bytes.Cut(rest, []byte(" "))
		if !ok || bytes.IndexByte(val, ' ') >= 0 {
			*errs = append(*errs, &LineError{File: file, Line: lineNo, Err: fmt.Errorf("%w: %s", errColumns, quote(line))})
			continue
		}
		maj, min, ok := parseDevice(devField)
		if !ok {
			*errs = append(*errs, &LineError{File: file, Line: lineNo, Err: fmt.Errorf("%w: %s", errDevice, quote(devField))})
			continue
		}
		v, err := strconv.ParseUint(string(val), 10, 64)
		if err != nil {
			*errs = append(*errs, &LineError{File: file, Line: lineNo, Device: string(devField),
				Err: fmt.Errorf("%s %s: %w", opName, quote(val), errors.Unwrap(err))})
			continue
		}
		i := indexOf(dst, maj, min)
		if i < 0 {
			dst = append(dst, DeviceStat{Major: maj, Minor: min})
			i = len(dst) - 1
		}
		st := &dst[i]
		switch string(opName) {
		case "Read":
			setCounter(&st.ReadBytes, &st.ReadOps, ops, v)
		case "Write":
			setCounter(&st.WriteBytes, &st.WriteOps, ops, v)
		case "Discard":
			setCounter(&st.DiscardBytes, &st.DiscardOps, ops, v)
			st.HasDiscard = true
		}
	}
	return dst
}

func setCounter(bytesField, opsField *uint64, ops bool, v uint64) {
	if ops {
		*opsField = v
	} else {
		*bytesField = v
	}
}

func indexOf(s []DeviceStat, maj, min uint32) int {
	for i := range s {
		if s[i].Major == maj && s[i].Minor == min {
			return i
		}
	}
	return -1
}

// parseDevice reads "major:minor"; the kernel's dev_t has 12-bit majors and 20-bit minors, but both are
// accepted as 32-bit so a future wider dev_t is not rejected.
func parseDevice(b []byte) (maj, min uint32, ok bool) {
	a, c, found := bytes.Cut(b, []byte(":"))
	if !found {
		return 0, 0, false
	}
	m, err1 := strconv.ParseUint(string(a), 10, 32)
	n, err2 := strconv.ParseUint(string(c), 10, 32)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return uint32(m), uint32(n), true
}
