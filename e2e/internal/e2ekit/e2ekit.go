// Package e2ekit holds what the end-to-end test packages share: e2e (the collector on this host against
// real peers) and e2e/qemu (the guest tests), which go test runs side by side.
package e2ekit // import "github.com/diskhealth/diskhealth/e2e/internal/e2ekit"

import (
	"bytes"
	"math"
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
)

// SyncBuffer collects a child's output while the test may read it.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// ExpHist is one exported exponential histogram point: bucket index → count (math.MinInt32 for
// the zero bucket), count and sum.
type ExpHist struct {
	Buckets map[int32]uint64
	Count   uint64
	Sum     float64
	Start   pcommon.Timestamp
	TS      pcommon.Timestamp
	HwID    string
}

// LatencyPoints returns a device's latency histograms in an export, by direction.
func LatencyPoints(md pmetric.Metrics, dev string) map[string]ExpHist {
	out := map[string]ExpHist{}
	pdatawalk.ForEachHistogramPoint(md, func(_ pcommon.Resource, m pmetric.Metric, dp pmetric.ExponentialHistogramDataPoint) {
		if d, _ := dp.Attributes().Get("system.device"); d.Str() != dev {
			return
		}
		dir := map[string]string{"disk_health.disk.discard.operation.duration": "discard", "disk_health.disk.flush.operation.duration": "flush"}[m.Name()]
		if m.Name() == "disk_health.disk.operation.duration" {
			v, _ := dp.Attributes().Get("disk.io.direction")
			dir = v.Str()
		}
		if dir == "" {
			return
		}
		out[dir] = ExpHistOf(dp)
	})
	return out
}

// ExpHistOf is dp as an ExpHist.
func ExpHistOf(dp pmetric.ExponentialHistogramDataPoint) ExpHist {
	h := ExpHist{Buckets: map[int32]uint64{math.MinInt32: dp.ZeroCount()}, Count: dp.Count(), Sum: dp.Sum(),
		Start: dp.StartTimestamp(), TS: dp.Timestamp()}
	if v, ok := dp.Attributes().Get("hw.id"); ok {
		h.HwID = v.Str()
	}
	for b, n := range dp.Positive().BucketCounts().AsRaw() {
		h.Buckets[dp.Positive().Offset()+int32(b)] = n
	}
	return h
}

// Sub is what h counted since o, an earlier point of its series.
func (h ExpHist) Sub(o ExpHist) ExpHist {
	d := ExpHist{Buckets: map[int32]uint64{}, Count: h.Count - o.Count, Sum: h.Sum - o.Sum, Start: o.TS, TS: h.TS, HwID: h.HwID}
	for i, n := range h.Buckets {
		d.Buckets[i] = n - o.Buckets[i]
	}
	return d
}

// NotRun is disk_health.latency.dropped{latency.drop.reason=not_run} in an export: the probe's
// program runs the kernel skipped, on any device.
func NotRun(md pmetric.Metrics) int64 {
	var n int64
	pdatawalk.ForEachNumberPoint(md, func(_ pcommon.Resource, m pmetric.Metric, dp pmetric.NumberDataPoint) {
		if r, _ := dp.Attributes().Get("latency.drop.reason"); m.Name() == "disk_health.latency.dropped" && r.Str() == "not_run" {
			n = dp.IntValue()
		}
	})
	return n
}

// LowerBound is the lower bound in seconds of the bucket that holds the q-quantile of b (scale 3, the
// collector's histograms).
func LowerBound(b map[int32]uint64, count uint64, q float64) float64 {
	return testkit.QuantileLowerBound(b, count, q, 3)
}
