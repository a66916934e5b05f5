package iostat

import "time"

// Counters are the cumulative values of one device's series (OTel cumulative
// sums starting at Result.Start). Counts and bytes are the kernel's 64-bit
// counters as read; the times come from 32-bit millisecond fields extended
// across wraps, so they keep growing where the kernel's value wraps at 2^32.
type Counters struct {
	// Counts and bytes are at most 2^63 - 1, the int64 range of the data
	// points they become: a count past it (only garbage input gets there) is
	// clamped and then stays flat, never negative; bytes are sectors × 512,
	// saturating the same way (past 2^54 sectors, 8 EiB) instead of wrapping.
	ReadOps, WriteOps, DiscardOps, FlushOps uint64 // completed requests
	ReadMerged, WriteMerged, DiscardMerged  uint64 // requests merged into adjacent ones
	ReadBytes, WriteBytes, DiscardBytes     uint64
	// Seconds spent by all requests of the kind (rd/wr/dc/fl_ticks).
	ReadTime, WriteTime, DiscardTime, FlushTime float64
	IOTime                                      float64 // seconds with at least one request in flight (io_ticks)
	WeightedIOTime                              float64 // time_in_queue in seconds: the sum of all request durations
	InFlight                                    uint64  // requests in flight now: instantaneous, not cumulative
}

// Gauges are the `iostat -x` columns over the interval since the previous read
// of the device, with sysstat 12.6 formulas converted to base units (seconds,
// bytes, ratios 0–1). Δx is the increase of counter x in the interval, Δt the
// interval. A 64-bit counter that went down contributes Δ = 0; a 32-bit
// millisecond field that wrapped contributes its modular increase; any
// increase beyond what the clock allows (see bounds) contributes Δ = 0.
type Gauges struct {
	ReadOpsRate    float64 // r/s = Δrd_ios / Δt
	WriteOpsRate   float64 // w/s
	DiscardOpsRate float64 // d/s (kernel 4.18+)
	FlushOpsRate   float64 // f/s (kernel 5.5+)

	ReadBytesRate    float64 // rkB/s × 1024 = Δrd_sectors × 512 / Δt
	WriteBytesRate   float64 // wkB/s × 1024
	DiscardBytesRate float64 // dkB/s × 1024

	ReadMergedRate    float64 // rrqm/s = Δrd_merges / Δt
	WriteMergedRate   float64 // wrqm/s
	DiscardMergedRate float64 // drqm/s

	ReadMergedRatio    float64 // %rrqm / 100 = Δrd_merges / (Δrd_merges + Δrd_ios); 0 when both are 0
	WriteMergedRatio   float64 // %wrqm / 100
	DiscardMergedRatio float64 // %drqm / 100

	ReadAwait    float64 // r_await / 1000 = Δrd_ticks / Δrd_ios in seconds; 0 when Δrd_ios = 0
	WriteAwait   float64 // w_await / 1000
	DiscardAwait float64 // d_await / 1000
	FlushAwait   float64 // f_await / 1000

	ReadAvgSize    float64 // rareq-sz × 1024 = Δrd_sectors × 512 / Δrd_ios in bytes; 0 when Δrd_ios = 0
	WriteAvgSize   float64 // wareq-sz × 1024
	DiscardAvgSize float64 // dareq-sz × 1024

	QueueLength float64 // aqu-sz = Δtime_in_queue_ms / Δt_ms
	// Utilization is %util / 100 = Δio_ticks_ms / Δt_ms. It is not clamped to
	// 1, as sysstat does not clamp %util either: values slightly above 1 come
	// from the kernel's jiffy-granular io_ticks accounting, and a device
	// serving requests in parallel (NVMe, RAID) can be at 1 without being
	// saturated. A kernel that charges time lazily (at a long request's end)
	// can also make one interval's value exceed 1, up to the age of what was
	// in flight at the previous read; beyond that the step is refused (see
	// bounds).
	Utilization float64
}

// computeGauges applies the iostat -x formulas to the increases inc over dt
// (> 0).
func computeGauges(inc *increase, dt time.Duration) Gauges {
	var d [nWide]float64
	for i := range d {
		d[i] = float64(inc.wide[i])
	}
	var t [nNarrow]float64
	for i := range t {
		t[i] = float64(inc.narrow[i])
	}
	sec := dt.Seconds()
	ms := sec * 1000
	return Gauges{
		ReadOpsRate:    d[rdIOs] / sec,
		WriteOpsRate:   d[wrIOs] / sec,
		DiscardOpsRate: d[dcIOs] / sec,
		FlushOpsRate:   d[flIOs] / sec,

		ReadBytesRate:    d[rdSectors] * sectorBytes / sec,
		WriteBytesRate:   d[wrSectors] * sectorBytes / sec,
		DiscardBytesRate: d[dcSectors] * sectorBytes / sec,

		ReadMergedRate:    d[rdMerges] / sec,
		WriteMergedRate:   d[wrMerges] / sec,
		DiscardMergedRate: d[dcMerges] / sec,

		ReadMergedRatio:    ratio(d[rdMerges], d[rdMerges]+d[rdIOs]),
		WriteMergedRatio:   ratio(d[wrMerges], d[wrMerges]+d[wrIOs]),
		DiscardMergedRatio: ratio(d[dcMerges], d[dcMerges]+d[dcIOs]),

		ReadAwait:    ratio(t[rdTicks], d[rdIOs]) / 1000,
		WriteAwait:   ratio(t[wrTicks], d[wrIOs]) / 1000,
		DiscardAwait: ratio(t[dcTicks], d[dcIOs]) / 1000,
		FlushAwait:   ratio(t[flTicks], d[flIOs]) / 1000,

		ReadAvgSize:    ratio(d[rdSectors]*sectorBytes, d[rdIOs]),
		WriteAvgSize:   ratio(d[wrSectors]*sectorBytes, d[wrIOs]),
		DiscardAvgSize: ratio(d[dcSectors]*sectorBytes, d[dcIOs]),

		QueueLength: t[rqTicks] / ms,
		Utilization: t[ioTicks] / ms,
	}
}

// ratio is n/d, or 0 when nothing happened (d = 0), like sysstat's
// "(Δios) ? … : 0.0" guards. Both operands are non-negative.
func ratio(n, d float64) float64 {
	if d == 0 {
		return 0
	}
	return n / d
}
