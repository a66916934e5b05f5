package biolat

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/blockdev"
)

// Dev is a whole disk's device number, as /proc/diskstats and /sys/dev/block name it.
type Dev struct {
	Major, Minor uint32
}

func (d Dev) String() string { return blockdev.MajorMinor(d.Major, d.Minor) }

// Direction is how /proc/diskstats groups operations: discards and flushes apart, every other
// operation by its data direction.
type Direction uint8

// The directions, in /proc/diskstats' order.
const (
	Read Direction = iota
	Write
	Discard
	Flush
	numDirections
)

func (d Direction) String() string {
	switch d {
	case Read:
		return "read"
	case Write:
		return "write"
	case Discard:
		return "discard"
	case Flush:
		return "flush"
	}
	return fmt.Sprintf("Direction(%d)", uint8(d))
}

// Kind is the interval a histogram measures.
type Kind uint8

const (
	// Total is request creation to completion (rq->start_time_ns to the accounting), the interval
	// /proc/diskstats sums into its time fields and iostat's await.
	Total Kind = iota
	// DeviceTime is the last issue to the driver to completion (Options.DeviceTime).
	DeviceTime
	numKinds
)

func (k Kind) String() string {
	switch k {
	case Total:
		return "total"
	case DeviceTime:
		return "device"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Histogram is a cumulative exponential histogram at Scale, in seconds, in the OTLP shape:
// Buckets[j] counts (2^((Offset+j)/8), 2^((Offset+j+1)/8)] s, ZeroCount those ≤ ZeroThreshold.
type Histogram struct {
	ZeroCount uint64
	Offset    int32
	Buckets   []uint64
	Count     uint64  // ZeroCount + Σ Buckets
	Sum       float64 // seconds
}

// Series is one device's histogram for one direction and kind.
type Series struct {
	Dev       Dev
	Direction Direction
	Kind      Kind
	Histogram Histogram
}

// ErrorCount is the number of requests to Dev in Direction that the kernel completed with Status.
type ErrorCount struct {
	Dev       Dev
	Direction Direction
	Status    string // see StatusName
	Count     uint64
}

// Drops counts completions that are in no histogram, by reason. NoStartTime is a device with
// queue/iostats off (it has no await in /proc/diskstats either). NoIssueTime, with device time only,
// is a request never issued to the driver as itself (an fsync's data-less PREFLUSH write completes
// through the flush it triggered: one per flush), issued before the probe attached, or evicted from
// the in-flight table; its total time is still recorded. NotRun counts runs of the probe's programs
// that the kernel skipped because the same program was already running on that CPU (a completion
// that interrupted the accounting of another): a completion, or with device time an issue, that no
// count saw (the programs' recursion_misses, Linux 5.12+; 0 before).
type Drops struct {
	NoStartTime    uint64
	HistogramsFull uint64
	ErrorsFull     uint64
	NoIssueTime    uint64
	NotRun         uint64
}

// Snapshot is every counter the probe holds, cumulative since it attached (or since Forget for a
// device). Series and Errors are sorted by device, direction, kind and status.
type Snapshot struct {
	Series []Series
	Errors []ErrorCount
	Drops  Drops
}

// The BPF maps' key and value layouts (struct hist_key, hist_val, err_key in bpf/biolat.bpf.c),
// little-endian like the object; TestMapLayout checks them against the object's BTF.
const (
	keySize     = 8
	histValSize = (slotCount + 2) * 8
)

type rawKey [keySize]byte

type rawHist [histValSize]byte

var errBadKey = errors.New("biolat: malformed map key")

// devOf splits the kernel's internal dev_t (MKDEV: major << 20 | minor).
func devOf(dev uint32) Dev { return Dev{Major: dev >> 20, Minor: dev & (1<<20 - 1)} }

func kernelDev(d Dev) uint32 { return d.Major<<20 | d.Minor }

// decodeHistKey reads a struct hist_key.
func decodeHistKey(b []byte) (Dev, Direction, Kind, error) {
	if len(b) != keySize || b[4] >= byte(numDirections) || b[5] >= byte(numKinds) {
		return Dev{}, 0, 0, errBadKey
	}
	return devOf(binary.LittleEndian.Uint32(b)), Direction(b[4]), Kind(b[5]), nil
}

func histKey(d Dev, dir Direction, k Kind) rawKey {
	var b rawKey
	binary.LittleEndian.PutUint32(b[:], kernelDev(d))
	b[4], b[5] = byte(dir), byte(k)
	return b
}

// decodeErrKey reads a struct err_key; the status byte is named by the caller's table.
func decodeErrKey(b []byte) (Dev, Direction, uint8, error) {
	if len(b) != keySize || b[4] >= byte(numDirections) {
		return Dev{}, 0, 0, errBadKey
	}
	return devOf(binary.LittleEndian.Uint32(b)), Direction(b[4]), b[5], nil
}

// HistSize is the size of the histogram every program keeps with bpf/slots.h: NR_SLOTS slots, the
// zero bucket and the sum in nanoseconds, each a little-endian u64 (struct hist_val in biolat.bpf.c).
// A program may keep more after it (cglat's bytes, filelat's pages).
const HistSize = histValSize

// DecodeHist turns such a histogram (the first HistSize bytes of b) into the OTLP shape, trimming
// empty slots at both ends.
func DecodeHist(b []byte) Histogram {
	slot := func(i int) uint64 { return binary.LittleEndian.Uint64(b[8*i:]) }
	h := Histogram{
		ZeroCount: slot(slotCount),
		Sum:       float64(slot(slotCount+1)) / 1e9,
	}
	h.Count = h.ZeroCount
	first, last := -1, -1
	for i := range slotCount {
		if n := slot(i); n != 0 {
			if first < 0 {
				first = i
			}
			last = i
			h.Count += n
		}
	}
	if first < 0 {
		return h
	}
	h.Offset = int32(first + firstIndex)
	h.Buckets = make([]uint64, last-first+1)
	for i := range h.Buckets {
		h.Buckets[i] = slot(first + i)
	}
	return h
}

func sortSnapshot(s *Snapshot) {
	devCmp := func(a, b Dev) int { return cmp.Or(cmp.Compare(a.Major, b.Major), cmp.Compare(a.Minor, b.Minor)) }
	slices.SortFunc(s.Series, func(a, b Series) int {
		return cmp.Or(devCmp(a.Dev, b.Dev), cmp.Compare(a.Direction, b.Direction), cmp.Compare(a.Kind, b.Kind))
	})
	slices.SortFunc(s.Errors, func(a, b ErrorCount) int {
		return cmp.Or(devCmp(a.Dev, b.Dev), cmp.Compare(a.Direction, b.Direction), cmp.Compare(a.Status, b.Status))
	})
}
