package iostat

import (
	"time"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/diskstats"
)

// Indexes of the counters the kernel prints as unsigned long (%lu, 64-bit on
// 64-bit kernels). A decrease of any of them means the counters restarted.
const (
	rdIOs = iota
	rdMerges
	rdSectors
	wrIOs
	wrMerges
	wrSectors
	dcIOs
	dcMerges
	dcSectors
	flIOs
	nWide
)

// Indexes of the millisecond fields the kernel prints as unsigned int (%u):
// they wrap at 2^32 ms of accumulated time.
const (
	rdTicks = iota
	wrTicks
	dcTicks
	flTicks
	ioTicks // io_ticks: wall time with at least one I/O in flight
	rqTicks // time_in_queue: sum of all requests' times (weighted)
	nNarrow
)

// sectorBytes is the kernel's fixed unit for the sector fields, whatever the
// device's logical block size.
const sectorBytes = 512

// sample is one read of one device, reduced to the widths the kernel prints.
type sample struct {
	wide   [nWide]uint64
	narrow [nNarrow]uint32
}

// load copies the counters of s. Fields the kernel did not print (discard
// before 4.18, flush before 5.5) are forced to zero, like sysstat does, so
// they can neither trigger nor mask a reset.
func load(s *diskstats.Stat) sample {
	var x sample
	x.wide[rdIOs] = s.ReadIOs
	x.wide[rdMerges] = s.ReadMerges
	x.wide[rdSectors] = s.ReadSectors
	x.wide[wrIOs] = s.WriteIOs
	x.wide[wrMerges] = s.WriteMerges
	x.wide[wrSectors] = s.WriteSectors
	// The kernel prints the tick fields with %u, so only the low 32 bits carry
	// information; truncating keeps the modular arithmetic exact.
	x.narrow[rdTicks] = uint32(s.ReadTicks)
	x.narrow[wrTicks] = uint32(s.WriteTicks)
	x.narrow[ioTicks] = uint32(s.IOsTotalTicks)
	x.narrow[rqTicks] = uint32(s.WeightedIOTicks)
	if s.HasDiscard() {
		x.wide[dcIOs] = s.DiscardIOs
		x.wide[dcMerges] = s.DiscardMerges
		x.wide[dcSectors] = s.DiscardSectors
		x.narrow[dcTicks] = uint32(s.DiscardTicks)
	}
	if s.HasFlush() {
		x.wide[flIOs] = s.FlushRequestsCompleted
		x.narrow[flTicks] = uint32(s.TimeSpentFlushing)
	}
	return x
}

// wideDecreased reports whether any 64-bit counter went down: the device's
// counters restarted (re-created device, driver reload), so the cumulative
// series must restart too.
func wideDecreased(prev, cur *sample) bool {
	for i := range cur.wide {
		if cur.wide[i] < prev.wide[i] {
			return true
		}
	}
	return false
}

// recreated is sysstat's "device removed then inserted again" test
// (iostat.c write_stats): the sum of all I/O counts decreased and every sector
// counter either decreased or was zero before. sysstat then computes the
// interval against an all-zero previous sample (ioj = &iozero). The sums wrap
// like sysstat's unsigned long additions.
func recreated(prev, cur *sample) bool {
	sumCur := cur.wide[rdIOs] + cur.wide[wrIOs] + cur.wide[dcIOs] + cur.wide[flIOs]
	sumPrev := prev.wide[rdIOs] + prev.wide[wrIOs] + prev.wide[dcIOs] + prev.wide[flIOs]
	if sumCur >= sumPrev {
		return false
	}
	for _, i := range [...]int{rdSectors, wrSectors, dcSectors} {
		if prev.wide[i] != 0 && cur.wide[i] >= prev.wide[i] {
			return false
		}
	}
	return true
}

// wideDelta is the increase of a 64-bit counter; a decrease counts as no
// activity. (sysstat 12.6.1 subtracts in unsigned long and prints the modular
// difference, about 1.8e19 / interval, which no backend should ever receive.)
func wideDelta(prev, cur uint64) uint64 {
	if cur < prev {
		return 0
	}
	return cur - prev
}

// wrapLimit bounds a plausible wrap of a 32-bit millisecond field: a step back
// whose modular difference is below 2^31 ms (24.8 days of accumulated time in
// one interval) is the counter passing 2^32; a larger one is a genuine step
// back (a kernel accounting glitch) and counts as no activity.
const wrapLimit = 1 << 31

// narrowDelta is the increase of a 32-bit millisecond field, modulo 2^32 when
// it wrapped, whatever the interval (the engine uses plausibleDelta).
func narrowDelta(prev, cur uint32) uint64 { return plausibleDelta(prev, cur, wrapLimit-1) }

// Plausibility of a wrap. A millisecond counter cannot gain more than the wall
// clock allows between two reads, so a step back is a wrap only when its
// modular increase fits the interval Δt:
//   - io_ticks (wall time with a request in flight): at most Δt + wrapSlack;
//   - rd/wr/dc/fl_ticks and time_in_queue (sums over requests): at most
//     (Δt + wrapSlack) × MaxInFlight;
//
// and always below 2^31 (wrapLimit). A larger step back is no wrap: that
// counter adds nothing for the interval (its cumulative value holds, the
// gauges it feeds count no time) and counting resumes from the new kernel
// value; the series goes on. Forward steps are taken as read (see Gauges).
const (
	// MaxInFlight bounds the requests a device can have in flight at once
	// (the blk-mq tag space: 65 536 tags, e.g. 64 queues of depth 1 024).
	MaxInFlight = 1 << 16
	// wrapSlack covers the kernel's lazy io_ticks accounting (updated at a
	// request's start and end, in jiffies) and the distance between the
	// kernel's sampling and ours.
	wrapSlack = time.Second
)

// wrapLimits are the largest plausible wrap increases of each 32-bit field
// over dt; all 0 (no wrap believed) when dt is not positive.
func wrapLimits(dt time.Duration) [nNarrow]uint64 {
	var l [nNarrow]uint64
	if dt <= 0 {
		return l
	}
	wall := uint64((dt + wrapSlack).Milliseconds())
	for i := range l {
		l[i] = min(wall*MaxInFlight, wrapLimit-1)
	}
	l[ioTicks] = min(wall, wrapLimit-1)
	return l
}

// plausibleDelta is narrowDelta where a wrap counts only up to limit.
func plausibleDelta(prev, cur uint32, limit uint64) uint64 {
	if cur >= prev {
		return uint64(cur - prev)
	}
	if d := uint64(cur - prev); d <= limit {
		return d
	}
	return 0
}
