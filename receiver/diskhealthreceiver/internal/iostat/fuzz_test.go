package iostat

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/diskstats"
)

// record encodes one drive record whose values are set absolutely (values
// must be below 2^30) or, with nearWrap, just under 2^32 by that much.
func record(flags byte, nearWrap bool, vals [17]uint32) []byte {
	out := []byte{flags}
	for _, v := range vals {
		op := 2<<30 | v&(1<<30-1)
		if nearWrap {
			op = 3<<30 | v&(1<<30-1)
		}
		out = append(out, byte(op), byte(op>>8), byte(op>>16), byte(op>>24))
	}
	return out
}

// FuzzEngine feeds random sequences of reads of two devices (pairs and
// longer) and checks every result: no NaN/Inf, no negative gauge, ratios ≤ 1,
// start times not after their first point, cumulative counters that never
// go down within a series, no discard/flush values the kernel did not print.
func FuzzEngine(f *testing.F) {
	f.Add([]byte{})
	f.Add(randomRecords(1, 2))
	f.Add(randomRecords(2, 8))
	f.Add(randomRecords(3, 30))
	// Busy device then idle then a 32-bit wrap of every field, 20 fields, 2.5 s apart.
	busy := [17]uint32{1000, 100, 80000, 2000, 500, 50, 40000, 3000, 1, 1500, 5000, 10, 1, 800, 20, 30, 60}
	seed := record(0xa2, false, busy)
	seed = append(seed, record(0xa2, false, busy)...)
	seed = append(seed, record(0xa2, true, [17]uint32{5, 5, 5, 5, 5, 5, 5, 5, 0, 5, 5, 5, 5, 5, 5, 5, 5})...)
	f.Add(seed)
	// A device that goes away (flags bit 2) and comes back re-created, 14 fields.
	seed = record(0x40, false, busy)
	seed = append(seed, record(0x44, false, busy)...)
	seed = append(seed, record(0x40, false, [17]uint32{3, 0, 24, 1, 0, 0, 0, 0, 0, 1, 1})...)
	f.Add(seed)
	// The clock standing still and going back.
	seed = record(0x12, false, busy)
	seed = append(seed, record(0x02, false, busy)...)
	seed = append(seed, record(0xf2, false, busy)...)
	f.Add(seed)

	f.Fuzz(func(t *testing.T, data []byte) { drive(t, data) })
}

// benchDevices builds n distinct 20-field devices.
func benchDevices(n int) ([]Key, []diskstats.Stat) {
	keys := make([]Key, n)
	stats := make([]diskstats.Stat, n)
	for i := range n {
		keys[i] = Key{Major: 259, Minor: uint32(i), Name: fmt.Sprintf("nvme%dn1", i)}
		v := [17]uint64{1000, 100, 80000, 2000, 500, 50, 40000, 3000, 1, 1500, 5000, 10, 1, 800, 20, 30, 60}
		stats[i] = *statOf(keys[i], &v, 20)
	}
	return keys, stats
}

// scrape advances every device's counters and runs one scrape.
func scrape(e *Engine, keys []Key, stats []diskstats.Stat, now time.Time) {
	for i := range stats {
		s := &stats[i]
		s.ReadIOs += 10
		s.ReadSectors += 80
		s.ReadTicks += 7
		s.WriteIOs += 5
		s.WriteSectors += 40
		s.WriteTicks += 9
		s.IOsTotalTicks += 11
		s.WeightedIOTicks += 16
		e.Update(keys[i], s, now)
	}
	e.EndScrape(now)
}

func TestUpdateDoesNotAllocate(t *testing.T) {
	keys, stats := benchDevices(100)
	e := NewEngine(boot)
	now := boot.Add(time.Hour)
	scrape(e, keys, stats, now)
	allocs := testing.AllocsPerRun(20, func() {
		now = now.Add(time.Second)
		scrape(e, keys, stats, now)
	})
	require.Zero(t, allocs)
}

// BenchmarkUpdate is one scrape of 1000 devices in steady state: 1000
// Update calls and one EndScrape.
func BenchmarkUpdate(b *testing.B) {
	keys, stats := benchDevices(1000)
	e := NewEngine(boot)
	now := boot.Add(time.Hour)
	scrape(e, keys, stats, now)
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Second)
		scrape(e, keys, stats, now)
	}
}
