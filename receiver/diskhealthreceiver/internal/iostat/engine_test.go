package iostat

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/prometheus/procfs/blockdevice"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/diskstats"
)

func TestStartTimes(t *testing.T) {
	e := NewEngine(boot)
	t1 := boot.Add(time.Hour)
	sda, sdaS := line(t, sdaA)
	nvme, nvmeS := line(t, nvmeA)

	// Scrape 1: sda is there from the start, so it counts since boot.
	r := e.Update(sda, sdaS, t1)
	assert.True(t, r.New)
	assert.False(t, r.HasGauges)
	assert.Equal(t, boot, r.Start)
	e.EndScrape(t1)

	// Scrape 2: nvme0n1 appears; it was absent at t1, so its series starts there.
	t2 := t1.Add(30 * time.Second)
	r = e.Update(sda, sdaS, t2)
	assert.False(t, r.New)
	assert.True(t, r.HasGauges)
	assert.Equal(t, boot, r.Start)
	assert.Equal(t, t1, r.PrevTime)
	r = e.Update(nvme, nvmeS, t2)
	assert.True(t, r.New)
	assert.False(t, r.HasGauges)
	assert.Equal(t, t1, r.Start)
	assert.Equal(t, uint64(1000), r.Counters.ReadOps)
	e.EndScrape(t2)

	// Scrape 3: nvme0n1 is gone; its state is dropped.
	t3 := t2.Add(30 * time.Second)
	e.Update(sda, sdaS, t3)
	e.EndScrape(t3)
	assert.Equal(t, 1, e.Len())

	// Scrape 4: it is back (counters restarted, but even with the same counters
	// it is a new series): start = the last scrape that did not see it, no gauges.
	t4 := t3.Add(30 * time.Second)
	_, back := line(t, nvmeRecreated)
	r = e.Update(nvme, back, t4)
	assert.True(t, r.New)
	assert.False(t, r.Reset)
	assert.False(t, r.HasGauges)
	assert.Equal(t, t3, r.Start)
	assert.Equal(t, uint64(50), r.Counters.ReadOps)
	assert.InDelta(t, 0.1, r.Counters.ReadTime, 1e-12)
	e.EndScrape(t4)

	// Scrape 5: the series continues from t3.
	t5 := t4.Add(30 * time.Second)
	r = e.Update(nvme, back, t5)
	assert.False(t, r.New)
	assert.True(t, r.HasGauges)
	assert.Equal(t, t3, r.Start)
	assert.Equal(t, t4, r.PrevTime)
}

func TestKeyIdentity(t *testing.T) {
	// The same name under another major:minor in the next scrape is the device re-created between two
	// reads: a new series that starts at the old read, with gauges against zero as sysstat (which goes by
	// name) computes them.
	e := NewEngine(boot)
	t1 := boot.Add(time.Hour)
	k, s := line(t, nvmeA)
	e.Update(k, s, t1)
	e.EndScrape(t1)
	renumbered := k
	renumbered.Minor = 1
	t2 := t1.Add(10 * time.Second)
	r := e.Update(renumbered, s, t2)
	assert.False(t, r.New)
	assert.True(t, r.Reset)
	assert.Equal(t, t1, r.Start)
	require.True(t, r.HasGauges)
	assert.Equal(t, t1, r.PrevTime)
	assert.InDelta(t, float64(s.ReadIOs)/10, r.Gauges.ReadOpsRate, 1e-9)
	e.EndScrape(t2)
	assert.Equal(t, 1, e.Len(), "the old number's state is gone")

	// A name that comes back under another number after a scrape without it is simply new.
	e.EndScrape(t2.Add(10 * time.Second))
	k.Minor = 2
	r = e.Update(k, s, t2.Add(20*time.Second))
	assert.True(t, r.New)
	assert.False(t, r.HasGauges)
	assert.Equal(t, t2.Add(10*time.Second), r.Start)
}

func TestReset(t *testing.T) {
	tests := []struct {
		name string
		cur  string
		// wantRead is r/s over the 10 s interval: against zero when sysstat's
		// re-creation rule matches, else the clamped delta.
		wantRead float64
	}{
		{name: "removed and re-added", cur: nvmeRecreated, wantRead: 5},
		{name: "some counters dropped", cur: nvmeReadDrop, wantRead: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := NewEngine(boot)
			t1 := boot.Add(time.Hour)
			k, a := line(t, nvmeA)
			e.Update(k, a, t1)
			e.EndScrape(t1)

			t2 := t1.Add(10 * time.Second)
			_, c := line(t, tc.cur)
			r := e.Update(k, c, t2)
			assert.True(t, r.Reset)
			assert.False(t, r.New)
			assert.True(t, r.HasGauges)
			assert.Equal(t, t1, r.Start, "the counters restarted after the previous read")
			assert.Equal(t, t1, r.PrevTime)
			assert.InDelta(t, tc.wantRead, r.Gauges.ReadOpsRate, 1e-12)
			// The new series carries the raw values.
			assert.Equal(t, c.ReadIOs, r.Counters.ReadOps)
			assert.Equal(t, c.WriteSectors*512, r.Counters.WriteBytes)
			assert.InDelta(t, float64(c.WeightedIOTicks)/1000, r.Counters.WeightedIOTime, 1e-12)
			e.EndScrape(t2)

			// The next read continues the new series.
			t3 := t2.Add(10 * time.Second)
			next := *c
			next.ReadIOs += 100
			next.ReadTicks += 250
			r2 := e.Update(k, &next, t3)
			checkResult(t, &r, r2, t3)
			assert.False(t, r2.Reset)
			assert.Equal(t, t1, r2.Start)
			assert.InDelta(t, 10.0, r2.Gauges.ReadOpsRate, 1e-12)
			assert.InDelta(t, 0.0025, r2.Gauges.ReadAwait, 1e-12)
			assert.InDelta(t, r.Counters.ReadTime+0.25, r2.Counters.ReadTime, 1e-12)
		})
	}
}

// tickFields reaches each 32-bit millisecond field of a Stat.
var tickFields = []struct {
	name    string
	field   func(*diskstats.Stat) *uint64
	counter func(Counters) float64
	gauge   func(Gauges) float64 // the gauge the field feeds
}{
	{"rd_ticks", func(s *diskstats.Stat) *uint64 { return &s.ReadTicks }, func(c Counters) float64 { return c.ReadTime }, func(g Gauges) float64 { return g.ReadAwait }},
	{"wr_ticks", func(s *diskstats.Stat) *uint64 { return &s.WriteTicks }, func(c Counters) float64 { return c.WriteTime }, func(g Gauges) float64 { return g.WriteAwait }},
	{"dc_ticks", func(s *diskstats.Stat) *uint64 { return &s.DiscardTicks }, func(c Counters) float64 { return c.DiscardTime }, func(g Gauges) float64 { return g.DiscardAwait }},
	{"fl_ticks", func(s *diskstats.Stat) *uint64 { return &s.TimeSpentFlushing }, func(c Counters) float64 { return c.FlushTime }, func(g Gauges) float64 { return g.FlushAwait }},
	{"io_ticks", func(s *diskstats.Stat) *uint64 { return &s.IOsTotalTicks }, func(c Counters) float64 { return c.IOTime }, func(g Gauges) float64 { return g.Utilization }},
	{"time_in_queue", func(s *diskstats.Stat) *uint64 { return &s.WeightedIOTicks }, func(c Counters) float64 { return c.WeightedIOTime }, func(g Gauges) float64 { return g.QueueLength }},
}

// TestU32Wrap wraps each 32-bit field in turn: the gauge uses the modular
// increase and the cumulative value keeps growing past 2^32 ms.
func TestU32Wrap(t *testing.T) {
	for _, f := range tickFields {
		t.Run(f.name, func(t *testing.T) {
			e := NewEngine(boot)
			now := boot.Add(time.Hour)
			k, s := line(t, nvmeA)
			*f.field(s) = 1<<32 - 3000 // 3 s before the wrap
			prev := e.Update(k, s, now)
			e.EndScrape(now)
			assert.InDelta(t, float64(1<<32-3000)/1000, f.counter(prev.Counters), 1e-9)

			for i := range 3 {
				// Every interval: 10 s, 10 ops of each kind, +5 s on the field.
				now = now.Add(10 * time.Second)
				next := *s
				next.ReadIOs += 10
				next.WriteIOs += 10
				next.DiscardIOs += 10
				next.FlushRequestsCompleted += 10
				*f.field(&next) = uint64(uint32(*f.field(s) + 5000))
				r := e.Update(k, &next, now)
				e.EndScrape(now)
				checkResult(t, &prev, r, now)
				require.False(t, r.Reset, "interval %d", i)
				require.True(t, r.HasGauges)
				assert.InDelta(t, 5.0, f.counter(r.Counters)-f.counter(prev.Counters), 1e-9, "interval %d", i)
				assert.InDelta(t, 0.5, f.gauge(r.Gauges), 1e-12, "interval %d", i)
				prev, s = r, &next
			}
			// 3 s before the wrap + 15 s: the extended value is past 2^32 ms
			// while the kernel's field reads 12000.
			assert.Equal(t, uint64(12000), *f.field(s))
			assert.InDelta(t, float64(1<<32+12000)/1000, f.counter(prev.Counters), 1e-9)
		})
	}
}

// TestU32StepBack: a step back too large for a wrap holds the cumulative
// value (no reset, no decrease) and counts as no time in the gauge.
func TestU32StepBack(t *testing.T) {
	for _, f := range tickFields {
		t.Run(f.name, func(t *testing.T) {
			e := NewEngine(boot)
			now := boot.Add(time.Hour)
			k, s := line(t, nvmeA)
			prev := e.Update(k, s, now)
			e.EndScrape(now)

			now = now.Add(10 * time.Second)
			next := *s
			next.ReadIOs += 10
			next.WriteIOs += 10
			next.DiscardIOs += 10
			next.FlushRequestsCompleted += 10
			*f.field(&next) -= 10
			r := e.Update(k, &next, now)
			e.EndScrape(now)
			checkResult(t, &prev, r, now)
			assert.False(t, r.Reset)
			assert.Equal(t, boot, r.Start)
			assert.Zero(t, f.gauge(r.Gauges))
			assert.Equal(t, f.counter(prev.Counters), f.counter(r.Counters))

			// Counting resumes from the new kernel value.
			now = now.Add(10 * time.Second)
			again := next
			again.ReadIOs += 10
			again.WriteIOs += 10
			again.DiscardIOs += 10
			again.FlushRequestsCompleted += 10
			*f.field(&again) += 5000
			r2 := e.Update(k, &again, now)
			checkResult(t, &r, r2, now)
			assert.InDelta(t, 0.5, f.gauge(r2.Gauges), 1e-12)
			assert.InDelta(t, f.counter(r.Counters)+5, f.counter(r2.Counters), 1e-9)
		})
	}
}

func TestIntervalNotPositive(t *testing.T) {
	for _, dt := range []time.Duration{0, -time.Second} {
		t.Run(dt.String(), func(t *testing.T) {
			e := NewEngine(boot)
			t1 := boot.Add(time.Hour)
			k, a := line(t, nvmeA)
			first := e.Update(k, a, t1)
			e.EndScrape(t1)
			_, b := line(t, nvmeB)
			r := e.Update(k, b, t1.Add(dt))
			checkResult(t, &first, r, t1.Add(dt))
			assert.False(t, r.HasGauges)
			assert.Equal(t, Gauges{}, r.Gauges)
			// The counters still advance.
			assert.Equal(t, uint64(1100), r.Counters.ReadOps)
			assert.InDelta(t, 2.3, r.Counters.ReadTime, 1e-12)
		})
	}
	t.Run("reset with the clock going back", func(t *testing.T) {
		e := NewEngine(boot)
		t1 := boot.Add(time.Hour)
		k, a := line(t, nvmeA)
		e.Update(k, a, t1)
		e.EndScrape(t1)
		_, c := line(t, nvmeRecreated)
		t0 := t1.Add(-time.Second)
		r := e.Update(k, c, t0)
		assert.True(t, r.Reset)
		assert.False(t, r.HasGauges)
		assert.Equal(t, t0, r.Start, "a start time never lies after its point")
	})
}

func TestIdleDevice(t *testing.T) {
	// A never-used loop device (all zero) and a busy-then-idle disk: every
	// gauge is 0, none NaN, whatever the field count.
	for _, l := range []string{
		"7 0 loop0 0 0 0 0 0 0 0 0 0 0 0",
		"7 0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0",
		"7 0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0",
		nvmeA,
	} {
		e := NewEngine(boot)
		now := boot.Add(time.Hour)
		k, s := line(t, l)
		prev := e.Update(k, s, now)
		for range 3 {
			e.EndScrape(now)
			now = now.Add(time.Second)
			r := e.Update(k, s, now)
			checkResult(t, &prev, r, now)
			require.True(t, r.HasGauges)
			assert.Equal(t, Gauges{}, r.Gauges, l)
			assert.Equal(t, prev.Counters, r.Counters, l)
			prev = r
		}
	}
}

func TestMissingFieldsAreZero(t *testing.T) {
	// A 14-field line: whatever the discard/flush fields of the struct hold,
	// they are not kernel data.
	k, s := line(t, sdaA)
	s.DiscardIOs, s.DiscardSectors, s.DiscardTicks = 5, 6, 7
	s.FlushRequestsCompleted, s.TimeSpentFlushing = 8, 9
	e := NewEngine(boot)
	r := e.Update(k, s, boot.Add(time.Hour))
	assert.False(t, r.HasDiscard)
	assert.False(t, r.HasFlush)
	assert.Zero(t, r.Counters.DiscardOps)
	assert.Zero(t, r.Counters.DiscardBytes)
	assert.Zero(t, r.Counters.DiscardTime)
	assert.Zero(t, r.Counters.FlushOps)
	assert.Zero(t, r.Counters.FlushTime)
	checkResult(t, nil, r, boot.Add(time.Hour))
}

func TestCounters(t *testing.T) {
	k, s := line(t, nvmeB)
	r := NewEngine(boot).Update(k, s, boot.Add(time.Hour))
	assert.Equal(t, Counters{
		ReadOps: 1100, WriteOps: 600, DiscardOps: 14, FlushOps: 40,
		ReadMerged: 120, WriteMerged: 70, DiscardMerged: 2,
		ReadBytes: 96000 * 512, WriteBytes: 50000 * 512, DiscardBytes: 1200 * 512,
		ReadTime: 2.3, WriteTime: 3.4, DiscardTime: 0.03, FlushTime: 0.08,
		IOTime: 2.5, WeightedIOTime: 6, InFlight: 2,
	}, r.Counters)
}

func TestInFlight(t *testing.T) {
	for _, tc := range []struct{ raw, want uint64 }{
		{0, 0}, {3, 3}, {1<<31 - 1, 1<<31 - 1},
		{1<<32 - 1, 0}, // "-1": blk-mq accounting race
		{1 << 31, 0},
	} {
		assert.Equal(t, tc.want, inFlight(tc.raw), "%d", tc.raw)
	}
}

// TestPropertyRandom drives the engine with random sequences (wraps, resets,
// step backs, disappearing devices, odd intervals) and checks the invariants
// of every result: no NaN/Inf, no negative gauge, ratios ≤ 1, monotonic
// counters within a series.
func TestPropertyRandom(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 30
	}
	for seed := range seeds {
		data := randomRecords(uint64(seed), 60)
		t.Run(fmt.Sprint(seed), func(t *testing.T) { drive(t, data) })
	}
}

// drive decodes data into a sequence of scrapes of two devices and checks
// every result. Each record is 1 flags byte then 17 little-endian uint32
// value operators (see nextValue); flags bits 0-1 pick the field count,
// bits 2 and 3 hide device 0 and 1 from this scrape, bits 4-7 pick the
// interval (15 means the clock went back).
func drive(t testing.TB, data []byte) {
	e := NewEngine(boot)
	now := boot.Add(time.Hour)
	keys := [2]Key{{Major: 8, Minor: 0, Name: "sda"}, {Major: 259, Minor: 0, Name: "nvme0n1"}}
	var vals [2][17]uint64
	var last [2]*Result
	const recLen = 1 + 17*4
	for len(data) >= recLen {
		flags := data[0]
		rec := data[1:recLen]
		data = data[recLen:]
		step := time.Duration(flags>>4) * 250 * time.Millisecond
		if flags>>4 == 15 {
			step = -time.Second
		}
		now = now.Add(step)
		fieldCount := [4]int{14, 18, 20, 20}[flags&3]
		for d := range keys {
			if flags&(4<<d) != 0 {
				last[d] = nil // EndScrape will drop it
				continue
			}
			for i := range vals[d] {
				op := uint32(rec[4*i]) | uint32(rec[4*i+1])<<8 | uint32(rec[4*i+2])<<16 | uint32(rec[4*i+3])<<24
				vals[d][i] = nextValue(vals[d][i], op+uint32(d))
			}
			s := statOf(keys[d], &vals[d], fieldCount)
			r := e.Update(keys[d], s, now)
			checkResult(t, last[d], r, now)
			if last[d] == nil && !r.New {
				t.Fatalf("device back after an absence without a new series: %+v", r)
			}
			last[d] = &r
		}
		e.EndScrape(now)
	}
}

// nextValue derives a field's next value from its previous one: the top two
// bits of op choose a small increase, a decrease, an absolute value, or a
// value just under 2^32 (so 32-bit fields wrap on the next increase).
func nextValue(prev uint64, op uint32) uint64 {
	x := uint64(op & (1<<30 - 1))
	switch op >> 30 {
	case 0:
		return prev + x%100000
	case 1:
		return prev - min(prev, x%1000)
	case 2:
		if x%8 == 0 {
			return prev + 1<<40 + x // a jump forward no clock allows
		}
		return x
	default:
		return 1<<32 - 1 - x%50000
	}
}

func statOf(k Key, v *[17]uint64, fieldCount int) *diskstats.Stat {
	return &diskstats.Stat{
		Info: blockdevice.Info{MajorNumber: k.Major, MinorNumber: k.Minor, DeviceName: k.Name},
		IOStats: blockdevice.IOStats{
			ReadIOs: v[0], ReadMerges: v[1], ReadSectors: v[2], ReadTicks: v[3],
			WriteIOs: v[4], WriteMerges: v[5], WriteSectors: v[6], WriteTicks: v[7],
			IOsInProgress: v[8], IOsTotalTicks: v[9], WeightedIOTicks: v[10],
			DiscardIOs: v[11], DiscardMerges: v[12], DiscardSectors: v[13], DiscardTicks: v[14],
			FlushRequestsCompleted: v[15], TimeSpentFlushing: v[16],
		},
		Fields: fieldCount,
	}
}

// randomRecords makes n records for drive from a deterministic generator
// biased towards ordinary growth, so series run long enough to wrap.
func randomRecords(seed uint64, n int) []byte {
	state := seed*0x9e3779b97f4a7c15 + 1
	next := func() uint32 { // splitmix64
		state += 0x9e3779b97f4a7c15
		z := state
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		return uint32(z ^ z>>31)
	}
	out := make([]byte, 0, n*(1+17*4))
	for range n {
		flags := byte(next())
		if next()%4 != 0 {
			flags &^= 0x0c // both devices present most of the time
		}
		out = append(out, flags)
		for range 17 {
			op := next()
			if r := next() % 16; r < 13 {
				op &= 1<<30 - 1 // mostly growth
			}
			out = append(out, byte(op), byte(op>>8), byte(op>>16), byte(op>>24))
		}
	}
	return out
}

func TestDriveSeesEveryPath(t *testing.T) {
	// The random driver must actually exercise wraps, resets, re-creations,
	// reappearances and non-positive intervals, or its checks prove little.
	var wraps, resets, news, noGauge int
	e := NewEngine(boot)
	now := boot.Add(time.Hour)
	k := Key{Name: "sda"}
	var v [17]uint64
	data := randomRecords(7, 2000)
	for len(data) >= 69 {
		flags, rec := data[0], data[1:69]
		data = data[69:]
		now = now.Add(time.Duration(flags>>4) * 250 * time.Millisecond)
		if flags&4 != 0 {
			e.EndScrape(now)
			continue
		}
		before := v
		for i := range v {
			v[i] = nextValue(v[i], uint32(rec[4*i])|uint32(rec[4*i+1])<<8|uint32(rec[4*i+2])<<16|uint32(rec[4*i+3])<<24)
		}
		for _, i := range []int{3, 7, 9, 10} {
			if v[i] < before[i] && uint32(v[i])-uint32(before[i]) < 1<<31 && v[i] < 1<<32 && before[i] < 1<<32 {
				wraps++
			}
		}
		r := e.Update(k, statOf(k, &v, 20), now)
		if r.Reset {
			resets++
		}
		if r.New {
			news++
		}
		if !r.New && !r.HasGauges {
			noGauge++
		}
		e.EndScrape(now)
	}
	assert.Positive(t, wraps)
	assert.Positive(t, resets)
	assert.Greater(t, news, 1)
	assert.Positive(t, noGauge)
}

func TestHugeDeltasStayFinite(t *testing.T) {
	// The largest deltas over the shortest interval: finite, not Inf, and
	// counted as no activity (no device can do them).
	e := NewEngine(boot)
	t1 := boot.Add(time.Hour)
	k := Key{Name: "x"}
	var zero, full [17]uint64
	for i := range full {
		full[i] = math.MaxUint64
	}
	e.Update(k, statOf(k, &zero, 20), t1)
	r := e.Update(k, statOf(k, &full, 20), t1.Add(time.Nanosecond))
	checkResult(t, nil, r, t1.Add(time.Nanosecond))
	assert.Equal(t, Gauges{}, r.Gauges)
}

func TestFieldCountChangeRestarts(t *testing.T) {
	// The same device read first with 20 fields, then 18: the flush series
	// cannot continue, so every counter starts a new series.
	e := NewEngine(boot)
	t1 := boot.Add(time.Hour)
	k, a := line(t, nvmeA)
	e.Update(k, a, t1)
	e.EndScrape(t1)
	b := *a
	b.Fields = 18
	b.ReadIOs += 10
	t2 := t1.Add(time.Second)
	r := e.Update(k, &b, t2)
	checkResult(t, nil, r, t2)
	assert.True(t, r.Reset)
	assert.Equal(t, t1, r.Start)
	assert.False(t, r.HasFlush)
	assert.Zero(t, r.Counters.FlushTime)
	assert.InDelta(t, 10.0, r.Gauges.ReadOpsRate, 1e-12)
}

// TestImplausibleWrapIsNoWrap is the reported case: only io_ticks steps back by ~3e9 ms within 1 s. The
// modular difference (~1.3e9 ms) does not fit the interval, so it is no wrap: utilization is 0 for that
// interval (not 1 296 135), io_time holds (not +1.3e6 s) and the series goes on. A step back that fits
// the interval is still a wrap, for every 32-bit field.
func TestImplausibleWrapIsNoWrap(t *testing.T) {
	e := NewEngine(boot)
	now := boot.Add(time.Hour)
	k, s := line(t, nvmeA)
	s.IOsTotalTicks = 3_100_000_000
	prev := e.Update(k, s, now)
	e.EndScrape(now)

	now = now.Add(time.Second)
	next := *s
	next.ReadIOs += 10
	next.IOsTotalTicks -= 3_000_000_000
	r := e.Update(k, &next, now)
	e.EndScrape(now)
	checkResult(t, &prev, r, now)
	require.True(t, r.HasGauges)
	assert.False(t, r.Reset)
	assert.Equal(t, prev.Start, r.Start, "the same series")
	assert.Zero(t, r.Gauges.Utilization)
	assert.Equal(t, prev.Counters.IOTime, r.Counters.IOTime)
	assert.InDelta(t, 10.0, r.Gauges.ReadOpsRate, 1e-9, "the other counters are unaffected")

	// Counting resumes from the kernel's new value.
	now = now.Add(time.Second)
	again := next
	again.IOsTotalTicks += 500
	r2 := e.Update(k, &again, now)
	checkResult(t, &r, r2, now)
	assert.InDelta(t, 0.5, r2.Gauges.Utilization, 1e-12)
	assert.InDelta(t, r.Counters.IOTime+0.5, r2.Counters.IOTime, 1e-9)
}

// TestBounds: what an interval allows per field. io_ticks gains at most the wall clock (+ 1 s of slack),
// the per-request sums at most that × MaxInFlight; never 2^31 or more; ios and merges 2^32 per second.
func TestBounds(t *testing.T) {
	b := boundsOf(time.Second)
	assert.Equal(t, uint64(2000), b.narrow[ioTicks])
	for _, i := range []int{rdTicks, wrTicks, dcTicks, flTicks, rqTicks} {
		assert.Equal(t, uint64(2000*MaxInFlight), b.narrow[i])
	}
	assert.Equal(t, uint64(2000*(MaxOpsPerSecond/1000)), b.ops)
	assert.Equal(t, uint64(1000), boundsOf(-time.Second).narrow[ioTicks], "a negative interval counts as 0")
	long := boundsOf(365 * 24 * time.Hour)
	for i := range long.narrow {
		assert.Equal(t, uint64(wrapLimit-1), long.narrow[i])
	}
	assert.Equal(t, uint64(math.MaxUint64), boundsOf(time.Duration(math.MaxInt64)).ops, "saturates")
	assert.Equal(t, uint64(1500), plausibleDelta(1<<32-1000, 500, 2000), "a wrap that fits")
	assert.Zero(t, plausibleDelta(1<<32-1000, 1500, 2000), "2500 ms in a 1 s interval is no wrap")
	assert.Equal(t, uint64(2000), plausibleDelta(5, 2005, 2000), "a forward step that fits")
	assert.Zero(t, plausibleDelta(5, 2006, 2000), "one that does not")
}

// jump reads nvmeA, then nvmeA one second later with ten more reads (the ordinary interval the forward-jump cases start
// from); modify changes it.
func jump(t *testing.T, modify func(s *diskstats.Stat)) (prev, r Result) {
	t.Helper()
	e := NewEngine(boot)
	now := boot.Add(time.Hour)
	k, s := line(t, nvmeA)
	prev = e.Update(k, s, now)
	e.EndScrape(now)
	next := *s
	next.ReadIOs += 10
	next.ReadSectors += 80
	modify(&next)
	now = now.Add(time.Second)
	r = e.Update(k, &next, now)
	checkResult(t, &prev, r, now)
	require.True(t, r.HasGauges)
	require.False(t, r.Reset)
	require.Equal(t, prev.Start, r.Start, "the same series")
	return prev, r
}

// TestForwardJumpIsNoActivity: a step forward the clock cannot allow counts as no activity for that
// counter in that interval, in the gauges and the cumulative value, like an implausible wrap; the other
// counters are unaffected. (Before, io_ticks +1e9 ms in 1 s gave utilization 999 406.)
func TestForwardJumpIsNoActivity(t *testing.T) {
	t.Run("io_ticks", func(t *testing.T) {
		prev, r := jump(t, func(s *diskstats.Stat) { s.IOsTotalTicks += 1_000_000_000 })
		assert.Zero(t, r.Gauges.Utilization)
		assert.Equal(t, prev.Counters.IOTime, r.Counters.IOTime)
		assert.InDelta(t, 10.0, r.Gauges.ReadOpsRate, 1e-9)
	})
	t.Run("io_ticks just within the clock", func(t *testing.T) {
		_, r := jump(t, func(s *diskstats.Stat) { s.IOsTotalTicks += 2000 })
		assert.InDelta(t, 2.0, r.Gauges.Utilization, 1e-12)
	})
	for _, f := range tickFields {
		if f.name == "io_ticks" {
			continue
		}
		t.Run(f.name, func(t *testing.T) {
			// More than 65 536 requests in flight for the whole 2 s: none was in flight before.
			prev, r := jump(t, func(s *diskstats.Stat) {
				s.DiscardIOs += 10
				s.FlushRequestsCompleted += 10
				s.WriteIOs += 10
				*f.field(s) += 2000*MaxInFlight + 1
			})
			assert.Zero(t, f.gauge(r.Gauges))
			assert.Equal(t, f.counter(prev.Counters), f.counter(r.Counters))
		})
	}
	t.Run("ios", func(t *testing.T) {
		prev, r := jump(t, func(s *diskstats.Stat) { s.WriteIOs += 2000*(MaxOpsPerSecond/1000) + 1 })
		assert.Zero(t, r.Gauges.WriteOpsRate)
		assert.Zero(t, r.Gauges.WriteAvgSize)
		assert.Equal(t, prev.Counters.WriteOps, r.Counters.WriteOps)
		assert.InDelta(t, 10.0, r.Gauges.ReadOpsRate, 1e-9)
	})
	t.Run("sectors beyond 4 GiB per request", func(t *testing.T) {
		prev, r := jump(t, func(s *diskstats.Stat) { s.ReadSectors += (10 + MaxInFlight) << 23 })
		assert.Zero(t, r.Gauges.ReadBytesRate)
		assert.Equal(t, prev.Counters.ReadBytes, r.Counters.ReadBytes)
		assert.InDelta(t, 10.0, r.Gauges.ReadOpsRate, 1e-9)
	})
	t.Run("sectors of 4 GiB per request", func(t *testing.T) {
		_, r := jump(t, func(s *diskstats.Stat) { s.ReadSectors += (10+MaxInFlight)<<23 - 80 })
		assert.InDelta(t, float64((10+MaxInFlight)<<32), r.Gauges.ReadBytesRate, 1)
	})
}

// TestLongRequestEnding: a request in flight at the previous read that waited an hour ends in a 1 s
// interval. Its hour is charged to write_ticks and time_in_queue at its end, on every kernel: its await
// is an hour. io_ticks + 1 h in 1 s is beyond the clock whatever was in flight (a kernel that charges
// io_ticks at a request's end, 5.0 to 5.13, loses that interval's busy time; before, it was
// utilization 3600, and the same allowance took any step back on a host up 25 days for a wrap).
func TestLongRequestEnding(t *testing.T) {
	e := NewEngine(boot)
	now := boot.Add(2 * time.Hour)
	k, s := line(t, nvmeA)
	s.IOsInProgress = 1
	prev := e.Update(k, s, now)
	e.EndScrape(now)
	next := *s
	next.IOsInProgress = 0
	next.WriteIOs++
	next.IOsTotalTicks += 3_600_000
	next.WriteTicks += 3_600_000
	next.WeightedIOTicks += 3_600_000
	now = now.Add(time.Second)
	r := e.Update(k, &next, now)
	checkResult(t, &prev, r, now)
	assert.InDelta(t, 3600.0, r.Gauges.WriteAwait, 1e-9)
	assert.InDelta(t, prev.Counters.WeightedIOTime+3600, r.Counters.WeightedIOTime, 1e-9)
	assert.Zero(t, r.Gauges.Utilization)
	assert.Equal(t, prev.Counters.IOTime, r.Counters.IOTime)
}

// TestFlapToMax is the reported case: every counter of a device flaps to 2^64-1 for one read (utilization
// 4.29e6 and 1.8e19 reads/s before). That interval counts nothing and keeps the series; the read after,
// back at the true values, starts a new series at the true values, with no activity for its interval
// (not everything since boot as for a re-created device).
func TestFlapToMax(t *testing.T) {
	e := NewEngine(boot)
	now := boot.Add(time.Hour)
	k, s := line(t, nvmeA)
	prev := e.Update(k, s, now)
	e.EndScrape(now)
	var full [17]uint64
	for i := range full {
		full[i] = math.MaxUint64
	}
	now = now.Add(time.Second)
	r := e.Update(k, statOf(k, &full, 20), now)
	e.EndScrape(now)
	checkResult(t, &prev, r, now)
	require.True(t, r.HasGauges)
	assert.False(t, r.Reset)
	assert.Equal(t, Gauges{}, r.Gauges)
	assert.Equal(t, prev.Counters, r.Counters)

	now = now.Add(time.Second)
	back := *s
	back.ReadIOs += 10
	r2 := e.Update(k, &back, now)
	checkResult(t, &r, r2, now)
	assert.True(t, r2.Reset)
	assert.Equal(t, Gauges{}, r2.Gauges)
	assert.Equal(t, uint64(1010), r2.Counters.ReadOps)
}

// TestCountersStaySigned: 64-bit counters at and past 2^63, and sectors whose bytes pass 2^64, come out
// within the int64 range of the data points: clamped, never wrapped, and flat (not falling) from there.
func TestCountersStaySigned(t *testing.T) {
	e := NewEngine(boot)
	now := boot.Add(time.Hour)
	k, s := line(t, nvmeA)
	s.ReadIOs = 1 << 63
	s.WriteIOs = math.MaxUint64
	s.ReadSectors = 1<<55 + 1 // × 512 = 2^64 + 512: wraps to 512 in uint64
	s.WriteSectors = 1 << 54  // × 512 = 2^63
	r := e.Update(k, s, now)
	e.EndScrape(now)
	c := r.Counters
	for name, v := range map[string]uint64{"read ops": c.ReadOps, "write ops": c.WriteOps, "read bytes": c.ReadBytes, "write bytes": c.WriteBytes} {
		assert.LessOrEqual(t, v, uint64(math.MaxInt64), name)
		assert.GreaterOrEqual(t, v, uint64(math.MaxInt64-511), name)
	}
	now = now.Add(time.Second)
	next := *s
	next.ReadIOs++
	next.ReadSectors++
	r2 := e.Update(k, &next, now)
	checkResult(t, &r, r2, now)
	assert.False(t, r2.Reset)
	assert.Equal(t, c.ReadOps, r2.Counters.ReadOps, "clamped: flat")
	assert.Equal(t, c.ReadBytes, r2.Counters.ReadBytes)
}
