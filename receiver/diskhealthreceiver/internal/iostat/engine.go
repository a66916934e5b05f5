package iostat

import (
	"math"
	"time"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/diskstats"
)

// Key identifies a device series. A device re-created under another
// major:minor, or a number reused by another device name, is another series;
// so is one with another Seq (its diskseq: a disk swapped under the same name
// and major:minor).
type Key struct {
	Major, Minor uint32
	Name         string
	Seq          uint64
}

// Result is what one read of one device yields.
type Result struct {
	// Start is the start time of the cumulative series the counters belong to.
	Start    time.Time
	Counters Counters
	// New is set on the first read of a series: the device was not in the
	// previous scrape (or this is the engine's first scrape). No gauges then.
	New bool
	// Reset is set when this read started a new series because the counters of
	// a known device went back (device re-created, counters collapsed).
	Reset bool
	// HasDiscard and HasFlush tell which fields the kernel printed (4.18+ and
	// 5.5+). The discard and flush counters and gauges are zero without them
	// and should not be emitted.
	HasDiscard, HasFlush bool
	// HasGauges is false on a series' first read and when the interval since
	// the previous read is not positive.
	HasGauges bool
	// PrevTime is the time of the previous read, the start time of the gauge
	// interval. Valid when HasGauges.
	PrevTime time.Time
	Gauges   Gauges
}

// device is the state of one series.
type device struct {
	prev  sample
	kinds uint8           // hasDiscard | hasFlush of the series' reads
	wide  [nWide]uint64   // 64-bit counters within the series, less what was refused as implausible
	ticks [nNarrow]uint64 // 32-bit ms fields extended to 64 bits within the series
	start time.Time
	last  time.Time // time of the previous read
	gen   uint64    // scrape generation of the last update
	// refused is set when the last read's 64-bit counters took a step the
	// clock does not allow: a step back from there is the glitch ending,
	// not a re-created device, and its interval counts nothing.
	refused bool
	glitch  uint8 // the 32-bit fields whose last step was refused
}

// Engine keeps the previous read of every device. It is not safe for
// concurrent use: one scraper owns it.
type Engine struct {
	bootTime   time.Time
	devices    map[Key]*device
	byName     map[string]Key // the key each device name had at its last read
	gen        uint64         // number of EndScrape calls so far
	lastScrape time.Time      // time passed to the last EndScrape
}

// NewEngine returns an engine whose devices seen in the first scrape count
// since bootTime.
func NewEngine(bootTime time.Time) *Engine {
	return &Engine{bootTime: bootTime, devices: make(map[Key]*device), byName: make(map[string]Key)}
}

// Update feeds one read of one device taken at now, a time.Time from
// time.Now(): intervals are now.Sub(prev), so Go's monotonic clock reading
// keeps wall-clock steps out of the rates. It returns the cumulative counters
// to emit and, from the second read of the same device on, the iostat -x
// gauges over the interval since the previous read. If the interval is not
// positive (times out of order, which time.Now() never yields) there are no
// gauges for that read.
func (e *Engine) Update(k Key, s *diskstats.Stat, now time.Time) Result {
	cur := load(s)
	res := Result{HasDiscard: s.HasDiscard(), HasFlush: s.HasFlush()}

	d, ok := e.devices[k]
	switch {
	case !ok && e.renumbered(k):
		// The same name under a new major:minor since the previous scrape:
		// the device was re-created between two reads (NVMe, loop and nbd
		// numbers are handed out dynamically). As sysstat, which goes by name,
		// the interval's activity is everything the new device counted.
		old := e.devices[e.byName[k.Name]]
		delete(e.devices, e.byName[k.Name])
		d = &device{}
		e.devices[k] = d
		d.restart(&cur, notAfter(old.last, now))
		if dt := now.Sub(old.last); dt > 0 {
			res.HasGauges = true
			res.PrevTime = old.last
			res.Gauges = computeGauges(sinceCreation(&cur, dt), dt)
		}
		res.Reset = true
	case !ok:
		// The counters count since boot when the device was there at the
		// first scrape, else since it appeared, which happened after the last
		// scrape that did not see it.
		start := e.bootTime
		if e.gen > 0 {
			start = e.lastScrape
		}
		d = &device{}
		e.devices[k] = d
		d.restart(&cur, notAfter(start, now))
		res.New = true
	default:
		dt := now.Sub(d.last)
		b := boundsOf(dt)
		inc := deltas(&d.prev, &cur, &b, d.glitch)
		if dt > 0 {
			res.HasGauges = true
			res.PrevTime = d.last
			switch {
			case d.refused && wideDecreased(&d.prev, &cur):
				// The end of a glitch: what happened in between is unknown.
			case recreated(&d.prev, &cur):
				// As sysstat: the interval's activity is everything the
				// new device counted.
				res.Gauges = computeGauges(sinceCreation(&cur, dt), dt)
			default:
				res.Gauges = computeGauges(&inc, dt)
			}
		}
		if wideDecreased(&d.prev, &cur) || d.kinds != kinds(s) {
			// The counters restarted from zero after the previous read, or
			// the line lost or gained fields, whose cumulative values can
			// then not continue.
			d.restart(&cur, notAfter(d.last, now))
			res.Reset = true
		} else {
			for i := range d.wide {
				d.wide[i] += inc.wide[i]
			}
			for i := range d.ticks {
				d.ticks[i] += inc.narrow[i]
			}
			d.prev = cur
			d.refused, d.glitch = inc.refused, inc.glitch
		}
	}
	d.last = now
	d.gen = e.gen
	d.kinds = kinds(s)
	e.byName[k.Name] = k
	res.Start = d.start
	res.Counters = d.counters(s)
	return res
}

// sinceCreation is what a device created within the last dt counted: its
// requests all began after the previous read, so none carries older time.
func sinceCreation(cur *sample, dt time.Duration) *increase {
	inc := deltas(&sample{}, cur, new(boundsOf(dt)), 0)
	return &inc
}

// EndScrape drops the state of the devices not updated since the previous
// EndScrape, so a device that disappears and returns starts a new series, and
// records now as the scrape time.
func (e *Engine) EndScrape(now time.Time) {
	for k, d := range e.devices {
		if d.gen != e.gen {
			delete(e.devices, k)
			if e.byName[k.Name] == k {
				delete(e.byName, k.Name)
			}
		}
	}
	e.gen++
	e.lastScrape = now
}

// renumbered reports whether k's name belonged to another key that was read
// in the previous scrape and not yet in this one.
func (e *Engine) renumbered(k Key) bool {
	old, ok := e.byName[k.Name]
	if !ok || old == k {
		return false
	}
	d, ok := e.devices[old]
	return ok && d.gen+1 == e.gen
}

// Len is the number of devices with state.
func (e *Engine) Len() int { return len(e.devices) }

const (
	hasDiscard = 1 << iota
	hasFlush
)

// kinds is the set of optional fields the kernel printed.
func kinds(s *diskstats.Stat) uint8 {
	var k uint8
	if s.HasDiscard() {
		k |= hasDiscard
	}
	if s.HasFlush() {
		k |= hasFlush
	}
	return k
}

// restart begins a series at start whose counters are the raw values.
func (d *device) restart(cur *sample, start time.Time) {
	d.prev = *cur
	d.wide = cur.wide
	for i := range d.ticks {
		d.ticks[i] = uint64(cur.narrow[i])
	}
	d.start = start
	d.refused, d.glitch = false, 0
}

// counters are the series' cumulative values after the read s.
func (d *device) counters(s *diskstats.Stat) Counters {
	w := &d.wide
	return Counters{
		ReadOps:        signed(w[rdIOs]),
		WriteOps:       signed(w[wrIOs]),
		DiscardOps:     signed(w[dcIOs]),
		FlushOps:       signed(w[flIOs]),
		ReadMerged:     signed(w[rdMerges]),
		WriteMerged:    signed(w[wrMerges]),
		DiscardMerged:  signed(w[dcMerges]),
		ReadBytes:      sectorsToBytes(w[rdSectors]),
		WriteBytes:     sectorsToBytes(w[wrSectors]),
		DiscardBytes:   sectorsToBytes(w[dcSectors]),
		ReadTime:       msToSeconds(d.ticks[rdTicks]),
		WriteTime:      msToSeconds(d.ticks[wrTicks]),
		DiscardTime:    msToSeconds(d.ticks[dcTicks]),
		FlushTime:      msToSeconds(d.ticks[flTicks]),
		IOTime:         msToSeconds(d.ticks[ioTicks]),
		WeightedIOTime: msToSeconds(d.ticks[rqTicks]),
		InFlight:       inFlight(s.IOsInProgress),
	}
}

// inFlight reads the kernel's in_flight, an unsigned int that blk-mq
// accounting races occasionally drive "negative" (sysstat's comment on
// ios_pgr): a wrapped value means no request in flight, not four billion.
func inFlight(v uint64) uint64 {
	if int32(uint32(v)) < 0 {
		return 0
	}
	return uint64(uint32(v))
}

func msToSeconds(ms uint64) float64 { return float64(ms) / 1000 }

// signed clamps a cumulative count to the int64 range of the data points it
// becomes: a kernel never gets there, garbage input does, and a clamped
// counter stays flat instead of going out negative.
func signed(v uint64) uint64 { return min(v, math.MaxInt64) }

// sectorsToBytes is sectors × 512, saturating below 2^63 (a product past
// 2^64 would wrap, one past 2^63 would go out negative).
func sectorsToBytes(sectors uint64) uint64 {
	return min(sectors, math.MaxInt64/sectorBytes) * sectorBytes
}

// notAfter keeps a start time from lying after the point it starts, which
// only a caller passing times out of order can cause.
func notAfter(t, now time.Time) time.Time {
	if t.After(now) {
		return now
	}
	return t
}
