package iostat

import (
	"math"
	"math/bits"
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

// Plausibility: what the clock allows. A counter cannot gain more between two
// reads than the device could have done in the interval Δt, whether the step
// is forward or a 32-bit wrap; an increase beyond the bound is a glitch (a
// kernel accounting race, a flapping driver, a damaged line), not activity.
// That counter then adds nothing for the interval (its cumulative value
// holds, the gauges it feeds count nothing) and counting resumes from the new
// kernel value in the same series; a later step back from an implausible
// value is a reset as ever. The bounds, per counter, hold whatever was in
// flight and however long the host has been up:
//   - io_ticks (wall time with a request in flight): Δt + slack. The kernel
//     brings io_ticks up to date at every read while requests are in flight
//     (diskstats_show, since 5.14; part_round_stats before 5.0), so no busy
//     time from before the previous read arrives later. (5.0 to 5.13 charge
//     a request's time at its end: an interval in which a request older than
//     the previous read ends then counts no busy time, not more than Δt.)
//     Loosening the bound by the age of what was in flight made it the
//     uptime, 2^31 ms after 25 days: any step back was a wrap.
//   - rd/wr/dc/fl_ticks and time_in_queue (sums of the durations of the
//     requests completed in the interval, charged at completion): at most
//     MaxInFlight requests each for (Δt + slack), which also covers a request
//     that waited long before the interval (a 1 s interval allows 36 h).
//   - ios and merges: (Δt + slack) × MaxOpsPerSecond.
//   - sectors: (Δios + MaxInFlight) × maxRequestSectors: every request or bio
//     the kernel accounts carries at most 4 GiB (its byte count is an unsigned
//     int), and a request-based device accounts a partial completion's
//     sectors before the request's I/O, for at most MaxInFlight requests.
//
// A 32-bit increase is also always below 2^31 (wrapLimit), a modular step of
// 2^31 or more being a step back. A step back of a 64-bit counter is a reset
// (wideDecreased), not a glitch.
const (
	// MaxInFlight bounds the requests a device can have in flight at once
	// (the blk-mq tag space: 65 536 tags, e.g. 64 queues of depth 1 024).
	MaxInFlight = 1 << 16
	// MaxOpsPerSecond bounds the requests (or merges) one device completes
	// per second: 2^32, several hundred times the fastest devices' IOPS
	// (about 10^7) and more than one per CPU nanosecond, where a completion
	// costs hundreds.
	MaxOpsPerSecond = 1 << 32
	// maxRequestSectors is the most a request or a bio carries: 4 GiB.
	maxRequestSectors = 1 << 32 / sectorBytes
	// slack covers the kernel's jiffy-granular accounting and the distance
	// between the kernel's sampling and ours.
	slack = time.Second
	// wrapLimit: a modular step of 2^31 ms (24.8 days of accumulated time in
	// one interval) or more is a step back, never an increase.
	wrapLimit = 1 << 31
)

// bounds are the largest plausible increases over one interval.
type bounds struct {
	narrow [nNarrow]uint64
	ops    uint64 // of every ios and merges counter
}

// boundsOf are the bounds over dt; a negative dt counts as 0.
func boundsOf(dt time.Duration) bounds {
	wall := uint64(max(dt, 0)+slack) / uint64(time.Millisecond)
	var b bounds
	for i := range b.narrow {
		b.narrow[i] = min(satMul(wall, MaxInFlight), wrapLimit-1)
	}
	b.narrow[ioTicks] = min(wall, wrapLimit-1)
	b.ops = satMul(wall, MaxOpsPerSecond/1000)
	return b
}

// sectorsOf names the ios counter each sectors counter is bounded by.
var sectorsOf = [...][2]int{{rdSectors, rdIOs}, {wrSectors, wrIOs}, {dcSectors, dcIOs}}

// increase is what each counter gained over one interval.
type increase struct {
	wide    [nWide]uint64
	narrow  [nNarrow]uint64
	refused bool  // a 64-bit counter's increase was beyond its bound
	glitch  uint8 // the 32-bit fields whose increase was beyond its bound
}

// deltas are the plausible increases from prev to cur under b: a 64-bit
// counter that went down or a counter beyond its bound adds 0; a 32-bit field
// counts its modular increase, so a plausible wrap adds what it passed, but
// not when glitch (the previous interval's) says the field's previous value
// was itself refused: a step back from there is the glitch ending.
func deltas(prev, cur *sample, b *bounds, glitch uint8) increase {
	var inc increase
	w, n := &inc.wide, &inc.narrow
	for i := range w {
		if cur.wide[i] >= prev.wide[i] {
			w[i] = cur.wide[i] - prev.wide[i]
		}
	}
	for i := range w {
		if i != rdSectors && i != wrSectors && i != dcSectors && w[i] > b.ops {
			w[i], inc.refused = 0, true
		}
	}
	for _, p := range sectorsOf { // after their ios, which may have been refused
		if w[p[0]] > satMul(satAdd(w[p[1]], MaxInFlight), maxRequestSectors) {
			w[p[0]], inc.refused = 0, true
		}
	}
	for i := range n {
		n[i] = plausibleDelta(prev.narrow[i], cur.narrow[i], b.narrow[i])
		if cur.narrow[i] < prev.narrow[i] && glitch&(1<<i) != 0 {
			n[i] = 0
		}
		if n[i] == 0 && cur.narrow[i] != prev.narrow[i] {
			inc.glitch |= 1 << i
		}
	}
	return inc
}

// plausibleDelta is the modular increase of a 32-bit field when it is at most
// limit, else 0.
func plausibleDelta(prev, cur uint32, limit uint64) uint64 {
	if d := uint64(cur - prev); d <= limit {
		return d
	}
	return 0
}

func satMul(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi != 0 {
		return math.MaxUint64
	}
	return lo
}

func satAdd(a, b uint64) uint64 {
	s, carry := bits.Add64(a, b, 0)
	if carry != 0 {
		return math.MaxUint64
	}
	return s
}
