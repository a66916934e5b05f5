// Package pdatawalk walks emitted metrics and logs, so that no test writes the resource → scope →
// metric → point loops by hand. It imports no testing code: the QEMU guest programs use it as well as
// the receiver's tests and e2e.
package pdatawalk // import "github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// ForEachMetric calls fn for every metric in md with its resource.
func ForEachMetric(md pmetric.Metrics, fn func(pcommon.Resource, pmetric.Metric)) {
	for i := range md.ResourceMetrics().Len() {
		rm := md.ResourceMetrics().At(i)
		for j := range rm.ScopeMetrics().Len() {
			ms := rm.ScopeMetrics().At(j).Metrics()
			for k := range ms.Len() {
				fn(rm.Resource(), ms.At(k))
			}
		}
	}
}

// NumberPoints returns the points of a sum or gauge; none for other types.
func NumberPoints(m pmetric.Metric) pmetric.NumberDataPointSlice {
	switch m.Type() {
	case pmetric.MetricTypeSum:
		return m.Sum().DataPoints()
	case pmetric.MetricTypeGauge:
		return m.Gauge().DataPoints()
	default:
		return pmetric.NewNumberDataPointSlice()
	}
}

// ForEachNumberPoint calls fn for every point of every sum and gauge in md.
func ForEachNumberPoint(md pmetric.Metrics, fn func(pcommon.Resource, pmetric.Metric, pmetric.NumberDataPoint)) {
	ForEachMetric(md, func(res pcommon.Resource, m pmetric.Metric) {
		dps := NumberPoints(m)
		for i := range dps.Len() {
			fn(res, m, dps.At(i))
		}
	})
}

// ForEachHistogramPoint calls fn for every point of every exponential histogram in md.
func ForEachHistogramPoint(md pmetric.Metrics, fn func(pcommon.Resource, pmetric.Metric, pmetric.ExponentialHistogramDataPoint)) {
	ForEachMetric(md, func(res pcommon.Resource, m pmetric.Metric) {
		if m.Type() != pmetric.MetricTypeExponentialHistogram {
			return
		}
		dps := m.ExponentialHistogram().DataPoints()
		for i := range dps.Len() {
			fn(res, m, dps.At(i))
		}
	})
}

// ForEachLogRecord calls fn for every log record in ld with its resource.
func ForEachLogRecord(ld plog.Logs, fn func(pcommon.Resource, plog.LogRecord)) {
	for i := range ld.ResourceLogs().Len() {
		rl := ld.ResourceLogs().At(i)
		for j := range rl.ScopeLogs().Len() {
			lrs := rl.ScopeLogs().At(j).LogRecords()
			for k := range lrs.Len() {
				fn(rl.Resource(), lrs.At(k))
			}
		}
	}
}

// Devices lists the system.device values of md's sums and gauges, each once, in the order they first
// appear.
func Devices(md pmetric.Metrics) []string {
	seen := map[string]bool{}
	var out []string
	ForEachNumberPoint(md, func(_ pcommon.Resource, _ pmetric.Metric, dp pmetric.NumberDataPoint) {
		if v, ok := dp.Attributes().Get("system.device"); ok && !seen[v.Str()] {
			seen[v.Str()] = true
			out = append(out, v.Str())
		}
	})
	return out
}

// ByMountPoint returns md's number points of the metric name, by their system.filesystem.mountpoint.
func ByMountPoint(md pmetric.Metrics, name string) map[string][]pmetric.NumberDataPoint {
	out := map[string][]pmetric.NumberDataPoint{}
	ForEachMetric(md, func(_ pcommon.Resource, m pmetric.Metric) {
		if m.Name() != name {
			return
		}
		dps := NumberPoints(m)
		for i := range dps.Len() {
			mp, _ := dps.At(i).Attributes().Get("system.filesystem.mountpoint")
			out[mp.Str()] = append(out[mp.Str()], dps.At(i))
		}
	})
	return out
}
