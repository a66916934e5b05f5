package nvme

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A 3000 IOPS, 125 MB/s volume read over 5 minutes: 600 000 reads and 255 000 writes are 2850 IOPS,
// 95 % of the limit; 18.75 GB read and 3.75 GB written are 75 MB/s, 60 % of the throughput limit.
func TestForecastBetweenUtilization(t *testing.T) {
	prev := &AmazonStats{Kind: AmazonEBS, ReadOps: 1_000, WriteOps: 2_000, ReadBytes: 1 << 20, WriteBytes: 1 << 21}
	cur := &AmazonStats{Kind: AmazonEBS, ReadOps: 601_000, WriteOps: 257_000,
		ReadBytes: 1<<20 + 18_750_000_000, WriteBytes: 1<<21 + 3_750_000_000}
	f, ok := ForecastBetween(prev, cur, 5*time.Minute, VolumeLimits{IOPS: 3000, Throughput: 125_000_000}, DefaultNearUtilization)
	require.True(t, ok)
	assert.Equal(t, LimitForecast{Observed: 2850, Utilization: 0.95, Configured: true, State: ForecastNear}, f.IOPS)
	assert.Equal(t, LimitForecast{Observed: 75_000_000, Utilization: 0.6, Configured: true, State: ForecastOK}, f.Throughput)
}

// The near share is inclusive: exactly at the threshold is near, one operation below it is not.
func TestForecastBetweenThresholdEdges(t *testing.T) {
	prev := &AmazonStats{Kind: AmazonEBS}
	limits := VolumeLimits{IOPS: 1000}
	for _, tc := range []struct {
		ops  uint64 // over 100 s against 1000 IOPS
		near float64
		want ForecastState
	}{
		{90_000, 0.9, ForecastNear},
		{89_999, 0.9, ForecastOK},
		{100_000, 1, ForecastNear},
		{150_000, 0.9, ForecastNear}, // above the configured limit, yet the log counted no throttling
		{0, 0.9, ForecastOK},
	} {
		f, ok := ForecastBetween(prev, &AmazonStats{Kind: AmazonEBS, WriteOps: tc.ops}, 100*time.Second, limits, tc.near)
		require.True(t, ok)
		assert.Equal(t, tc.want, f.IOPS.State, "%d ops, near %v", tc.ops, tc.near)
		assert.InDelta(t, float64(tc.ops)/100_000, f.IOPS.Utilization, 1e-12)
	}
}

// Throttling comes from the exceeded-time counters alone, configured limit or not; with no limit there
// is nothing to be near, only an observed rate.
func TestForecastBetweenThrottled(t *testing.T) {
	prev := &AmazonStats{Kind: AmazonEBS, VolumeThroughputExceeded: time.Second}
	cur := &AmazonStats{Kind: AmazonEBS, ReadOps: 60_000, VolumeThroughputExceeded: 2 * time.Second, VolumeIOPSExceeded: 0}
	f, ok := ForecastBetween(prev, cur, time.Minute, VolumeLimits{}, DefaultNearUtilization)
	require.True(t, ok)
	assert.Equal(t, LimitForecast{Observed: 1000}, f.IOPS, "no limit: ok, whatever the rate")
	assert.Equal(t, LimitForecast{State: ForecastThrottled}, f.Throughput)

	f, ok = ForecastBetween(prev, cur, time.Minute, VolumeLimits{IOPS: 10_000, Throughput: 1}, DefaultNearUtilization)
	require.True(t, ok)
	assert.Equal(t, ForecastOK, f.IOPS.State)
	assert.InDelta(t, 0.1, f.IOPS.Utilization, 1e-12)
	assert.Equal(t, ForecastThrottled, f.Throughput.State, "throttled outranks the share")
	assert.Equal(t, "throttled", f.Throughput.State.String())
}

// A counter that went back (the volume detached and attached again) is not a rate, and the forecast
// never sees a negative one; a counter near the top of its range still gives the exact difference.
func TestForecastBetweenResets(t *testing.T) {
	prev := &AmazonStats{Kind: AmazonEBS, ReadOps: 5_000, WriteOps: 5_000, ReadBytes: 1 << 30, WriteBytes: 1 << 30}
	limits := VolumeLimits{IOPS: 100, Throughput: 1 << 20}
	for name, cur := range map[string]AmazonStats{
		"read ops":    {Kind: AmazonEBS, ReadOps: 10, WriteOps: 6_000, ReadBytes: 1 << 31, WriteBytes: 1 << 31},
		"write ops":   {Kind: AmazonEBS, ReadOps: 6_000, WriteOps: 10, ReadBytes: 1 << 31, WriteBytes: 1 << 31},
		"read bytes":  {Kind: AmazonEBS, ReadOps: 6_000, WriteOps: 6_000, ReadBytes: 1, WriteBytes: 1 << 31},
		"write bytes": {Kind: AmazonEBS, ReadOps: 6_000, WriteOps: 6_000, ReadBytes: 1 << 31, WriteBytes: 1},
		"exceeded":    {Kind: AmazonEBS, ReadOps: 6_000, WriteOps: 6_000, ReadBytes: 1 << 31, WriteBytes: 1 << 31, VolumeIOPSExceeded: 0},
		"layout":      {Kind: AmazonInstanceStore, ReadOps: 6_000, WriteOps: 6_000, ReadBytes: 1 << 31, WriteBytes: 1 << 31},
	} {
		p := *prev
		if name == "exceeded" {
			p.VolumeIOPSExceeded = time.Second
		}
		_, ok := ForecastBetween(&p, &cur, time.Minute, limits, DefaultNearUtilization)
		assert.False(t, ok, name)
	}
	_, ok := ForecastBetween(prev, prev, 0, limits, DefaultNearUtilization)
	assert.False(t, ok, "no interval")
	_, ok = ForecastBetween(nil, prev, time.Minute, limits, DefaultNearUtilization)
	assert.False(t, ok, "no previous read")

	top := &AmazonStats{Kind: AmazonEBS, ReadOps: math.MaxUint64 - 1000, WriteOps: math.MaxUint64 - 1000}
	f, ok := ForecastBetween(top, &AmazonStats{Kind: AmazonEBS, ReadOps: math.MaxUint64, WriteOps: math.MaxUint64}, 10*time.Second, limits, DefaultNearUtilization)
	require.True(t, ok)
	assert.InDelta(t, 200.0, f.IOPS.Observed, 1e-12, "2000 ops in 10 s, exact at the top of the range")
	assert.InDelta(t, 2.0, f.IOPS.Utilization, 1e-12)
}
