package dm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// struct dm_ioctl (include/uapi/linux/dm-ioctl.h), in host byte order:
//
//	 0 u32 version[3]   12 u32 data_size   16 u32 data_start
//	20 u32 target_count 24 s32 open_count  28 u32 flags
//	32 u32 event_nr     36 u32 padding     40 u64 dev
//	48 char name[128]  176 char uuid[129]  305 char data[7]
const (
	headerSize = 312
	nameLen    = 128
	uuidLen    = 129
	offName    = 48
	offUUID    = offName + nameLen

	// struct dm_target_spec: u64 sector_start, u64 length, s32 status,
	// u32 next, char target_type[16]; the parameter string follows.
	targetSpecSize = 40
	targetTypeLen  = 16

	// struct dm_name_list: u64 dev, u32 next, then the name string.
	nameListNameOff = 12
)

// The interface version this package speaks; the kernel accepts any
// request whose major matches and whose minor is not newer than its own.
var requestVersion = [3]uint32{4, 0, 0}

var errShort = errors.New("short device-mapper answer")

// header is the decoded fixed part of a dm_ioctl.
type header struct {
	Version     [3]uint32
	DataSize    uint32
	DataStart   uint32
	TargetCount uint32
	OpenCount   int32
	Flags       uint32
	EventNr     uint32
	Dev         uint64
	Name, UUID  string
}

// encodeRequest fills buf (whole buffer, len(buf) >= headerSize) with a
// request header; the rest is zeroed.
func encodeRequest(buf []byte, flags uint32, dev uint64) {
	clear(buf)
	ne := binary.NativeEndian
	for i, v := range requestVersion {
		ne.PutUint32(buf[4*i:], v)
	}
	ne.PutUint32(buf[12:], uint32(len(buf)))
	ne.PutUint32(buf[16:], headerSize)
	ne.PutUint32(buf[28:], flags)
	ne.PutUint64(buf[40:], dev)
}

func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// decodeHeader reads the fixed part of an answer.
func decodeHeader(b []byte) (header, error) {
	if len(b) < headerSize {
		return header{}, errShort
	}
	ne := binary.NativeEndian
	h := header{
		Version:     [3]uint32{ne.Uint32(b[0:]), ne.Uint32(b[4:]), ne.Uint32(b[8:])},
		DataSize:    ne.Uint32(b[12:]),
		DataStart:   ne.Uint32(b[16:]),
		TargetCount: ne.Uint32(b[20:]),
		OpenCount:   int32(ne.Uint32(b[24:])),
		Flags:       ne.Uint32(b[28:]),
		EventNr:     ne.Uint32(b[32:]),
		Dev:         ne.Uint64(b[40:]),
		Name:        cString(b[offName : offName+nameLen]),
		UUID:        cString(b[offUUID : offUUID+uuidLen]),
	}
	return h, nil
}

// data returns the answer's payload: from data_start to data_size,
// bounded by the buffer.
func (h header) data(b []byte) ([]byte, error) {
	if h.DataStart < headerSize || uint64(h.DataStart) > uint64(len(b)) {
		return nil, fmt.Errorf("data_start %d outside a %d-byte answer", h.DataStart, len(b))
	}
	end := min(uint64(h.DataSize), uint64(len(b)))
	if end < uint64(h.DataStart) {
		end = uint64(h.DataStart)
	}
	return b[h.DataStart:end], nil
}

// DevMajorMinor splits the kernel's huge_encode_dev number.
func DevMajorMinor(dev uint64) (major, minor uint32) {
	major = uint32(dev>>8&0xFFF | dev>>32&^0xFFF)
	minor = uint32(dev&0xFF | dev>>12&^0xFF)
	return major, minor
}

// listedDevice is one DM_LIST_DEVICES entry.
type listedDevice struct {
	Dev  uint64
	Name string
}

// decodeNameList parses DM_LIST_DEVICES's payload: dm_name_list records,
// each "next" bytes after the previous (0 ends the list). No devices is an
// empty payload (the kernel needs no bytes for them, and writes its "no
// data" record, dev 0, past data_size) or a first record with dev 0.
func decodeNameList(data []byte) ([]listedDevice, error) {
	if len(data) == 0 {
		return nil, nil
	}
	var out []listedDevice
	ne := binary.NativeEndian
	for off := 0; ; {
		if off+nameListNameOff > len(data) {
			return out, errShort
		}
		rec := data[off:]
		dev, next := ne.Uint64(rec), ne.Uint32(rec[8:])
		if dev == 0 && off == 0 {
			return nil, nil
		}
		nameEnd := bytes.IndexByte(rec[nameListNameOff:], 0)
		if nameEnd < 0 {
			return out, fmt.Errorf("device name at offset %d not terminated", off)
		}
		out = append(out, listedDevice{Dev: dev, Name: string(rec[nameListNameOff : nameListNameOff+nameEnd])})
		if next == 0 {
			return out, nil
		}
		if uint64(next) < nameListNameOff+uint64(nameEnd)+1 || uint64(off)+uint64(next) > uint64(len(data)) {
			return out, fmt.Errorf("name list record at offset %d: next %d out of range", off, next)
		}
		off += int(next)
		if len(out) > 1<<20 {
			return out, errors.New("name list too long")
		}
	}
}

// Target is one line of a device's table: its place in the device, its
// type and the kernel's status or table parameters.
type Target struct {
	Start, Length uint64 // sectors
	Type          string // thin-pool, thin, multipath, linear, crypt, ...
	Status        string // the status line, `dmsetup status` without start/length/type
	Table         string // the table line, `dmsetup table` without start/length/type
}

// decodeTargets parses DM_TABLE_STATUS's payload: count dm_target_spec
// records; each "next" is the offset of the following record from the
// start of the payload; each record's parameter string follows it.
func decodeTargets(data []byte, count uint32) ([]Target, error) {
	if count > 1<<16 {
		return nil, fmt.Errorf("%d targets", count)
	}
	ne := binary.NativeEndian
	out := make([]Target, 0, count)
	off := 0
	for i := uint32(0); i < count; i++ {
		if off+targetSpecSize > len(data) {
			return out, errShort
		}
		rec := data[off:]
		t := Target{
			Start:  ne.Uint64(rec),
			Length: ne.Uint64(rec[8:]),
			Type:   cString(rec[24 : 24+targetTypeLen]),
		}
		params := rec[targetSpecSize:]
		end := bytes.IndexByte(params, 0)
		if end < 0 {
			return out, fmt.Errorf("target %d: parameters not terminated", i)
		}
		t.Status = string(params[:end])
		out = append(out, t)
		next := ne.Uint32(rec[20:])
		if i+1 < count {
			if uint64(next) <= uint64(off) || uint64(next) > uint64(len(data)) {
				return out, fmt.Errorf("target %d: next %d out of range", i, next)
			}
			off = int(next)
		}
	}
	return out, nil
}
