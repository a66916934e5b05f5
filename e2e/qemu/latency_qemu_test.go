package qemu

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/diskhealth/diskhealth/e2e/internal/e2ekit"
	"github.com/diskhealth/diskhealth/e2e/internal/vmproto"
	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
)

// bucketOf is the scale-3 bucket index holding v seconds: (2^(i/8), 2^((i+1)/8)].
func bucketOf(v float64) int32 { return int32(math.Ceil(math.Log2(v)*8)) - 1 }

// TestLatencyKnownDelaysQEMU (issue 12, "done when" 2): in the QEMU guest (Debian's 6.1 kernel, so the
// probe's block_rq_complete path), disks of known latency made after the probe attached: null_blk
// completing each request after 1 ms on a timer, scsi_debug delayed to 5 ms, and dm-linear over
// null_blk. Per disk and direction the histogram's count grows by exactly what the guest's
// /proc/diskstats counts (and the guest did), its sum by diskstats' time less the bio completion work
// the 6.1 hook precedes (at most 250 µs per request under TCG), no observation lies in a
// bucket below the one holding the delay, and the median is within twice the delay; the two disks'
// histograms do not mix (each is above its own delay, the 1 ms one's median below 5 ms); the bio-based
// dm device has no series (its I/O is null_blk's requests).
func TestLatencyKnownDelaysQEMU(t *testing.T) {
	_, run := bootGuest(t, "latencyguest", 5*time.Minute, nil)
	var b vmproto.LatencyBundle
	run.bundle(t, vmproto.MarkerLatency, &b)
	require.True(t, strings.HasPrefix(b.Kernel, "6.1."), "the guest runs Debian's 6.1 kernel, not %s", b.Kernel)
	require.Equal(t, "block_rq_complete", b.Hook, "before 6.5 the probe takes the final block_rq_complete")

	before := pmetric.NewMetrics() // no export before the I/O: nothing measured yet
	if len(b.Before) > 0 {
		var err error
		before, err = (&pmetric.JSONUnmarshaler{}).UnmarshalMetrics(b.Before)
		require.NoError(t, err)
	}
	after, err := (&pmetric.JSONUnmarshaler{}).UnmarshalMetrics(b.After)
	require.NoError(t, err)

	null, scsi, dm := b.Devices["null"], b.Devices["scsi"], b.Devices["dm"]
	delays := map[string]float64{null: 1e-3, scsi: 5e-3}
	issued := map[string]map[string]int{
		// The dm device's bios are null_blk's requests.
		null: {"read": b.Issued[null]["read"] + b.Issued[dm]["read"], "write": b.Issued[null]["write"] + b.Issued[dm]["write"]},
		scsi: b.Issued[scsi],
	}
	medians := map[string]float64{}
	for _, dev := range []string{null, scsi} {
		h0, h1 := e2ekit.LatencyPoints(before, dev), e2ekit.LatencyPoints(after, dev)
		d0, d1 := guestDiskstats(t, b.DiskstatsBefore, dev), guestDiskstats(t, b.DiskstatsAfter, dev)
		lowest := bucketOf(delays[dev])
		for _, dir := range []string{"read", "write"} {
			delta := map[int32]uint64{}
			for i, n := range h1[dir].Buckets {
				delta[i] = n - h0[dir].Buckets[i]
			}
			count := h1[dir].Count - h0[dir].Count
			sumMs := (h1[dir].Sum - h0[dir].Sum) * 1e3
			ops, ms := d1[dir][0]-d0[dir][0], d1[dir][1]-d0[dir][1]
			med := e2ekit.LowerBound(delta, count, 0.5)
			var idx []int32
			for i, n := range delta {
				if n > 0 {
					idx = append(idx, i)
				}
			}
			slices.Sort(idx)
			require.NotEmpty(t, idx, "%s %s: no observations", dev, dir)
			t.Logf("%-7s %-5s issued %3d  diskstats %3d ops %5d ms  histogram %3d ops %9.3f ms  buckets %v..%v (delay's %d)  median ≥ %.3f ms",
				dev, dir, issued[dev][dir], ops, ms, count, sumMs, idx[0], idx[len(idx)-1], lowest, med*1e3)
			require.Equal(t, uint64(issued[dev][dir]), ops, "%s %s: diskstats vs what the guest did", dev, dir)
			// Exact, but for the program runs the guest's kernel says it skipped (not_run, on any device).
			require.LessOrEqual(t, count, ops, "%s %s: histogram vs diskstats", dev, dir)
			require.LessOrEqual(t, int64(ops-count), e2ekit.NotRun(after)-e2ekit.NotRun(before), "%s %s: histogram vs diskstats", dev, dir)
			// Both measure from rq->start_time_ns, but before 6.5 the probe reads its clock at
			// block_rq_complete, at the top of blk_update_request, and the kernel its own after it has
			// completed the request's bios (their end_io, waking the waiter): the sum runs below
			// diskstats' time by that work per request (tens of µs under TCG, about 1 µs on hardware),
			// never above it. diskstats' ms is a floor of the cumulative ns (±1 ms on a difference).
			require.LessOrEqual(t, sumMs, float64(ms)+1, "%s %s: sum at most diskstats time", dev, dir)
			require.GreaterOrEqual(t, sumMs, float64(ms)-1-float64(count)*0.25, "%s %s: sum at least diskstats time less 250 µs per request", dev, dir)
			require.Zero(t, delta[math.MinInt32], "%s %s: nothing in the zero bucket", dev, dir)
			require.GreaterOrEqual(t, idx[0], lowest, "%s %s: no observation below the bucket holding %v s", dev, dir, delays[dev])
			require.Less(t, med, 2*delays[dev], "%s %s: the median bucket starts below twice the delay", dev, dir)
			medians[dev+" "+dir] = med
		}
	}
	for _, dir := range []string{"read", "write"} {
		assert.Less(t, medians[null+" "+dir], delays[scsi], "%s: the 1 ms disk's median stays below the 5 ms disk's delay", dir)
	}
	// The bio-based dm device: no histogram and no error series of its own.
	pdatawalk.ForEachHistogramPoint(after, func(_ pcommon.Resource, m pmetric.Metric, dp pmetric.ExponentialHistogramDataPoint) {
		v, _ := dp.Attributes().Get("system.device")
		assert.NotEqual(t, dm, v.Str(), "%s: the bio-based dm device has no series", m.Name())
	})
	pdatawalk.ForEachNumberPoint(after, func(_ pcommon.Resource, m pmetric.Metric, dp pmetric.NumberDataPoint) {
		v, _ := dp.Attributes().Get("system.device")
		assert.False(t, m.Type() == pmetric.MetricTypeSum && v.Str() == dm, "%s: the bio-based dm device has no series", m.Name())
	})
}

// guestDiskstats reads completed operations and milliseconds per direction of dev from a
// /proc/diskstats text.
func guestDiskstats(t *testing.T, data, dev string) map[string][2]uint64 {
	t.Helper()
	for line := range strings.Lines(data) {
		f := strings.Fields(line)
		if len(f) < 11 || f[2] != dev {
			continue
		}
		n := func(i int) uint64 {
			v, err := strconv.ParseUint(f[i], 10, 64)
			require.NoError(t, err)
			return v
		}
		return map[string][2]uint64{"read": {n(3), n(6)}, "write": {n(7), n(10)}}
	}
	t.Fatalf("%s is not in the guest's /proc/diskstats", dev)
	return nil
}
