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
	"strconv"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/parseerr"
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

var (
	errDevice  = errors.New("device is not major:minor")
	errField   = errors.New("field is not key=value")
	errColumns = errors.New("want 3 columns: major:minor operation value")
	errTwice   = errors.New("device appears twice")
)

// ParseIOStat parses a cgroup v2 io.stat, one line per device:
//
//	8:0 rbytes=90112 wbytes=4096 rios=22 wios=1 dbytes=0 dios=0
//
// It appends to dst[:0]. Keys other than the six counters (iocost, iolatency) are ignored. A line with
// a bad device or value is skipped and reported in the returned *parseerr.Lines.
func ParseIOStat(data []byte, dst []DeviceStat) ([]DeviceStat, error) {
	const file = "io.stat"
	dst = dst[:0]
	var bad *parseerr.Lines
	var seen deviceIndex
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
			bad = bad.Add(&parseerr.Line{File: file, Line: lineNo, Value: parseerr.Clip(devField), Err: errDevice})
			continue
		}
		st := DeviceStat{Major: maj, Minor: min}
		if le := parseKeyValues(rest, &st); le != nil {
			le.File, le.Line, le.Device = file, lineNo, string(devField)
			bad = bad.Add(le)
			continue
		}
		if seen.find(dst, maj, min) >= 0 {
			bad = bad.Add(&parseerr.Line{File: file, Line: lineNo, Device: string(devField), Err: errTwice})
			continue
		}
		dst = append(dst, st)
	}
	return dst, bad.Err()
}

// parseKeyValues fills st from a line's key=value fields. A bad field is a *parseerr.Line without file,
// line or device.
func parseKeyValues(fields []byte, st *DeviceStat) *parseerr.Line {
	for field := range bytes.FieldsSeq(fields) {
		key, val, ok := bytes.Cut(field, []byte("="))
		if !ok {
			return &parseerr.Line{Value: parseerr.Clip(field), Err: errField}
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
			return &parseerr.Line{Field: string(key), Value: parseerr.Clip(val), Err: errors.Unwrap(err)}
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
// appended after. Bad rows are skipped and reported in the returned *parseerr.Lines (each names its file).
func ParseBlkio(bytesData, ops []byte, dst []DeviceStat) ([]DeviceStat, error) {
	dst = dst[:0]
	var bad *parseerr.Lines
	dst, bad = parseBlkio(BlkioBytesFile, bytesData, dst, false, bad)
	if ops != nil {
		dst, bad = parseBlkio(BlkioOpsFile, ops, dst, true, bad)
	}
	return dst, bad.Err()
}

// parseBlkio adds the rows of one file to dst and its bad rows to bad, returning both.
func parseBlkio(file string, data []byte, dst []DeviceStat, ops bool, bad *parseerr.Lines) ([]DeviceStat, *parseerr.Lines) {
	var seen deviceIndex
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
			bad = bad.Add(&parseerr.Line{File: file, Line: lineNo, Value: parseerr.Clip(line), Err: errColumns})
			continue
		}
		maj, min, ok := parseDevice(devField)
		if !ok {
			bad = bad.Add(&parseerr.Line{File: file, Line: lineNo, Value: parseerr.Clip(devField), Err: errDevice})
			continue
		}
		v, err := strconv.ParseUint(string(val), 10, 64)
		if err != nil {
			bad = bad.Add(&parseerr.Line{File: file, Line: lineNo, Device: string(devField),
				Field: string(opName), Value: parseerr.Clip(val), Err: errors.Unwrap(err)})
			continue
		}
		i := seen.find(dst, maj, min)
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
	return dst, bad
}

func setCounter(bytesField, opsField *uint64, ops bool, v uint64) {
	if ops {
		*opsField = v
	} else {
		*bytesField = v
	}
}

// deviceIndex finds a device in a list that only grows by appending: by scanning while the list is short
// (a cgroup's few disks), through a map once it is long, so a file of n devices costs O(n), not O(n²).
type deviceIndex struct {
	m       map[uint64]int
	indexed int // s[:indexed] are in m
}

// scanLimit is the longest list scanned; beyond it the map is cheaper.
const scanLimit = 32

func (x *deviceIndex) find(s []DeviceStat, maj, min uint32) int {
	if len(s) <= scanLimit && x.m == nil {
		for i := range s {
			if s[i].Major == maj && s[i].Minor == min {
				return i
			}
		}
		return -1
	}
	if x.m == nil {
		x.m = make(map[uint64]int, 2*len(s))
	}
	for ; x.indexed < len(s); x.indexed++ {
		x.m[devKey(s[x.indexed].Major, s[x.indexed].Minor)] = x.indexed
	}
	if i, ok := x.m[devKey(maj, min)]; ok {
		return i
	}
	return -1
}

func devKey(maj, min uint32) uint64 { return uint64(maj)<<32 | uint64(min) }

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
