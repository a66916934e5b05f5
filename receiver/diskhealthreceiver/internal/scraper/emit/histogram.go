package emit // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/biolat"
)

// AppendExpHistogram appends a cumulative exponential histogram metric to ms and returns its points:
// mdatagen renders only sums and gauges, so the sources whose probes keep biolat histograms (latency,
// filelat) build theirs by hand, each from one table that its documentation-extra.md documents.
func AppendExpHistogram(ms pmetric.MetricSlice, name, unit, description string) pmetric.ExponentialHistogramDataPointSlice {
	m := ms.AppendEmpty()
	m.SetName(name)
	m.SetUnit(unit)
	m.SetDescription(description)
	eh := m.SetEmptyExponentialHistogram()
	eh.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	return eh.DataPoints()
}

// SetHistogramPoint fills dp from a probe histogram, one to one (biolat's Histogram is the OTLP shape):
// scale 3, zero threshold 2^-20 s, cumulative since start. Min and max are not kept by the probes.
func SetHistogramPoint(dp pmetric.ExponentialHistogramDataPoint, h *biolat.Histogram, start, ts pcommon.Timestamp) {
	dp.SetStartTimestamp(start)
	dp.SetTimestamp(ts)
	dp.SetScale(biolat.Scale)
	dp.SetZeroThreshold(biolat.ZeroThreshold)
	dp.SetZeroCount(h.ZeroCount)
	dp.SetCount(h.Count)
	dp.SetSum(h.Sum)
	if len(h.Buckets) > 0 {
		dp.Positive().SetOffset(h.Offset)
		dp.Positive().BucketCounts().FromRaw(h.Buckets)
	}
}

// ScopeMetrics returns the metrics of md's first scope, where a source adds what it builds by hand
// after its generated builder's Emit; when the builder emitted nothing it adds the resource (with the
// schema URL) and the scope (name, version) first.
func ScopeMetrics(md pmetric.Metrics, schemaURL, scopeName, version string) pmetric.MetricSlice {
	if md.ResourceMetrics().Len() == 0 {
		rm := md.ResourceMetrics().AppendEmpty()
		rm.SetSchemaUrl(schemaURL)
		sm := rm.ScopeMetrics().AppendEmpty()
		sm.Scope().SetName(scopeName)
		sm.Scope().SetVersion(version)
	}
	return md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
}
