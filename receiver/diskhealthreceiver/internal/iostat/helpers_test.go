package iostat

import (
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/procfs/blockdevice"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/diskstats"
)

var boot = time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)

// line builds a Stat from a /proc/diskstats line (14, 18 or 20 fields) so the
// cases read like the kernel file and can be fed to sysstat unchanged.
func line(t testing.TB, l string) (Key, *diskstats.Stat) {
	t.Helper()
	f := strings.Fields(l)
	require.Contains(t, []int{14, 18, 20}, len(f), "line %q", l)
	n := make([]uint64, len(f))
	for i, x := range f {
		if i == 2 {
			continue
		}
		v, err := strconv.ParseUint(x, 10, 64)
		require.NoError(t, err, "field %d of %q", i+1, l)
		n[i] = v
	}
	s := &diskstats.Stat{
		Info: blockdevice.Info{MajorNumber: uint32(n[0]), MinorNumber: uint32(n[1]), DeviceName: f[2]},
		IOStats: blockdevice.IOStats{
			ReadIOs: n[3], ReadMerges: n[4], ReadSectors: n[5], ReadTicks: n[6],
			WriteIOs: n[7], WriteMerges: n[8], WriteSectors: n[9], WriteTicks: n[10],
			IOsInProgress: n[11], IOsTotalTicks: n[12], WeightedIOTicks: n[13],
		},
		Fields: len(f),
	}
	if len(f) >= 18 {
		s.DiscardIOs, s.DiscardMerges, s.DiscardSectors, s.DiscardTicks = n[14], n[15], n[16], n[17]
	}
	if len(f) == 20 {
		s.FlushRequestsCompleted, s.TimeSpentFlushing = n[18], n[19]
	}
	return Key{Major: s.MajorNumber, Minor: s.MinorNumber, Name: s.DeviceName}, s
}

// pair runs two reads of the same device dt apart through a fresh engine and
// returns the second result.
func pair(t testing.TB, prev, cur string, dt time.Duration) Result {
	t.Helper()
	e := NewEngine(boot)
	t0 := boot.Add(time.Hour)
	k, s := line(t, prev)
	first := e.Update(k, s, t0)
	require.True(t, first.New)
	require.False(t, first.HasGauges)
	e.EndScrape(t0)
	k2, s2 := line(t, cur)
	require.Equal(t, k, k2)
	return e.Update(k2, s2, t0.Add(dt))
}

// fields maps every float64 field of a struct to its value.
func fields(v any) map[string]float64 {
	rv := reflect.ValueOf(v)
	m := make(map[string]float64, rv.NumField())
	for i := range rv.NumField() {
		if f := rv.Field(i); f.Kind() == reflect.Float64 {
			m[rv.Type().Field(i).Name] = f.Float()
		}
	}
	return m
}

// assertGauges compares every gauge with a relative tolerance that only
// absorbs floating-point rounding.
func assertGauges(t *testing.T, want, got Gauges) {
	t.Helper()
	g := fields(got)
	for name, w := range fields(want) {
		assert.InDelta(t, w, g[name], 1e-12+1e-12*math.Abs(w), name)
	}
}

// checkResult asserts the invariants every result must satisfy. prev is the
// previous result of the same key, or nil.
func checkResult(t testing.TB, prev *Result, r Result, now time.Time) {
	t.Helper()
	for name, v := range fields(r.Gauges) {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			t.Fatalf("gauge %s = %v", name, v)
		}
	}
	for name, v := range fields(r.Counters) {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			t.Fatalf("counter %s = %v", name, v)
		}
	}
	g := r.Gauges
	for _, v := range []float64{g.ReadMergedRatio, g.WriteMergedRatio, g.DiscardMergedRatio} {
		if v > 1 {
			t.Fatalf("merged ratio %v > 1", v)
		}
	}
	// Where a series starts, its start never lies after its first point. (A
	// caller whose clock goes back later in a series gets no gauges, but the
	// series keeps its start.)
	if (r.New || r.Reset) && r.Start.After(now) {
		t.Fatalf("start %v after point %v", r.Start, now)
	}
	if r.HasGauges && !r.PrevTime.Before(now) {
		t.Fatalf("gauge interval %v..%v is empty", r.PrevTime, now)
	}
	if r.HasGauges {
		// No rate beyond what a device can do in the interval.
		dt := now.Sub(r.PrevTime)
		most := MaxOpsPerSecond * (dt + slack).Seconds() / dt.Seconds()
		for _, v := range []float64{g.ReadOpsRate, g.WriteOpsRate, g.DiscardOpsRate, g.FlushOpsRate, g.ReadMergedRate, g.WriteMergedRate, g.DiscardMergedRate} {
			if v > most {
				t.Fatalf("%v operations per second in %v", v, dt)
			}
		}
		for _, v := range []float64{g.ReadAvgSize, g.WriteAvgSize, g.DiscardAvgSize} {
			if v > float64(1<<32)*(1+MaxInFlight) {
				t.Fatalf("%v bytes per request", v)
			}
		}
	}
	if !r.HasGauges && r.Gauges != (Gauges{}) {
		t.Fatalf("gauges without HasGauges: %+v", r.Gauges)
	}
	if r.New && (r.HasGauges || r.Reset) {
		t.Fatalf("first read of a series with gauges or reset: %+v", r)
	}
	c := r.Counters
	if !r.HasDiscard && (c.DiscardOps|c.DiscardMerged|c.DiscardBytes != 0 || c.DiscardTime != 0 ||
		g.DiscardOpsRate != 0 || g.DiscardBytesRate != 0 || g.DiscardMergedRate != 0 || g.DiscardAwait != 0) {
		t.Fatalf("discard values without discard fields: %+v", r)
	}
	if !r.HasFlush && (c.FlushOps != 0 || c.FlushTime != 0 || g.FlushOpsRate != 0 || g.FlushAwait != 0) {
		t.Fatalf("flush values without flush fields: %+v", r)
	}
	if prev == nil || r.New || r.Reset {
		return
	}
	// Same series: same start, nothing cumulative goes down.
	if !r.Start.Equal(prev.Start) {
		t.Fatalf("series start moved from %v to %v", prev.Start, r.Start)
	}
	p := prev.Counters
	wide := [][2]uint64{
		{p.ReadOps, c.ReadOps}, {p.WriteOps, c.WriteOps}, {p.DiscardOps, c.DiscardOps}, {p.FlushOps, c.FlushOps},
		{p.ReadMerged, c.ReadMerged}, {p.WriteMerged, c.WriteMerged}, {p.DiscardMerged, c.DiscardMerged},
		{p.ReadBytes, c.ReadBytes}, {p.WriteBytes, c.WriteBytes}, {p.DiscardBytes, c.DiscardBytes},
	}
	for i, w := range wide {
		if w[1] < w[0] {
			t.Fatalf("counter %d went down within a series: %d -> %d", i, w[0], w[1])
		}
	}
	pf, cf := fields(p), fields(c)
	for name, v := range pf {
		if cf[name] < v {
			t.Fatalf("%s went down within a series: %v -> %v", name, v, cf[name])
		}
	}
}
