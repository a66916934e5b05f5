package nvme

import (
	"encoding/binary"
	"fmt"
)

// ErrorEntrySize is the size of one Error Information log entry (01h).
const ErrorEntrySize = 64

// ErrorEntry is one Error Information log entry (NVMe Base 2.0).
type ErrorEntry struct {
	// Count is the entry's error count: unique and increasing over the
	// controller's life; 0 marks an empty entry.
	Count uint64
	// SQID is the submission queue of the failed command (0: admin).
	SQID uint16
	// CID is the failed command's identifier (FFFFh: not specific to one
	// command).
	CID uint16
	// Status is the completion status field, bits 15:1 of the word; Phase
	// is its bit 0.
	Status uint16
	Phase  bool
	// ParamLocation says which byte (bits 7:0) and bit (10:8) of the
	// command was in error; FFFFh when not applicable.
	ParamLocation uint16
	LBA           uint64
	NSID          uint32
	// VendorLogPage is the vendor log with more detail (0: none).
	VendorLogPage uint8
	TransportType uint8
	CommandInfo   uint64
	TransportInfo uint16
}

// StatusCode is the status code (SC) of Status.
func (e *ErrorEntry) StatusCode() uint8 { return uint8(e.Status) }

// StatusCodeType is the status code type (SCT) of Status.
func (e *ErrorEntry) StatusCodeType() uint8 { return uint8(e.Status>>8) & 0x7 }

// DoNotRetry is the DNR bit of Status.
func (e *ErrorEntry) DoNotRetry() bool { return e.Status&(1<<14) != 0 }

// StatusString renders Status as "SCT/SC" in hex, the way the NVMe
// specification's tables are indexed ("0/02h" invalid field).
func (e *ErrorEntry) StatusString() string {
	return fmt.Sprintf("%x/%02Xh", e.StatusCodeType(), e.StatusCode())
}

// ParseErrorLog decodes whole entries of an Error Information log page,
// newest first as the controller returns them, dropping empty entries
// (error count 0). A trailing partial entry is an error.
func ParseErrorLog(b []byte) ([]ErrorEntry, error) {
	if len(b)%ErrorEntrySize != 0 {
		return nil, fmt.Errorf("nvme error log: %d bytes is not a whole number of %d-byte entries", len(b), ErrorEntrySize)
	}
	le := binary.LittleEndian
	var out []ErrorEntry
	for off := 0; off < len(b); off += ErrorEntrySize {
		e := b[off : off+ErrorEntrySize]
		n := le.Uint64(e)
		if n == 0 {
			continue
		}
		sf := le.Uint16(e[12:])
		out = append(out, ErrorEntry{
			Count:         n,
			SQID:          le.Uint16(e[8:]),
			CID:           le.Uint16(e[10:]),
			Status:        sf >> 1,
			Phase:         sf&1 != 0,
			ParamLocation: le.Uint16(e[14:]),
			LBA:           le.Uint64(e[16:]),
			NSID:          le.Uint32(e[24:]),
			VendorLogPage: e[28],
			TransportType: e[29],
			CommandInfo:   le.Uint64(e[32:]),
			TransportInfo: le.Uint16(e[40:]),
		})
	}
	return out, nil
}

// NewErrors returns the entries whose count is above seen, oldest first,
// and the new high-water mark. Entries are unique by count, so each one
// is reported once however often the log is read.
func NewErrors(entries []ErrorEntry, seen uint64) ([]ErrorEntry, uint64) {
	var out []ErrorEntry
	high := seen
	for i := len(entries) - 1; i >= 0; i-- {
		if e := entries[i]; e.Count > seen {
			out = append(out, e)
			high = max(high, e.Count)
		}
	}
	// The controller returns newest first; a wrapped ring may not be
	// sorted, so sort what is new by count.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Count < out[j-1].Count; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out, high
}

// TelemetryHeaderSize is what is read of the Telemetry Controller-Initiated
// log (08h): its first block, the header.
const TelemetryHeaderSize = 512

// TelemetryHeader is the header of the Telemetry Controller-Initiated log
// (08h). Only the header is read: the data areas are for the vendor, to be
// pulled with nvme-cli; reading 08h creates nothing (unlike the
// host-initiated log 07h, which captures a snapshot and is never read).
type TelemetryHeader struct {
	// Available is Controller-Initiated Data Available (byte 382 bit 0):
	// the controller saved telemetry it wants collected.
	Available bool
	// Generation is the Controller-Initiated Data Generation Number (byte
	// 383): it changes each time new data is saved.
	Generation uint8
}

// ParseTelemetryHeader decodes the 08h header.
func ParseTelemetryHeader(b []byte) (*TelemetryHeader, error) {
	if len(b) < TelemetryHeaderSize {
		return nil, fmt.Errorf("nvme telemetry log: %d bytes, want %d", len(b), TelemetryHeaderSize)
	}
	if b[0] != LogTelemetryController {
		return nil, fmt.Errorf("nvme telemetry log: log identifier %02Xh in the header, want %02Xh", b[0], LogTelemetryController)
	}
	return &TelemetryHeader{Available: b[382]&1 != 0, Generation: b[383]}, nil
}
