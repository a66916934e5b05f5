package pdatawalk

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

func TestWalks(t *testing.T) {
	md := pmetric.NewMetrics()
	for _, host := range []string{"a", "b"} {
		rm := md.ResourceMetrics().AppendEmpty()
		rm.Resource().Attributes().PutStr("host.name", host)
		ms := rm.ScopeMetrics().AppendEmpty().Metrics()
		sum := ms.AppendEmpty()
		sum.SetName("system.disk.io")
		dps := sum.SetEmptySum().DataPoints()
		for _, dev := range []string{"sda", "sd" + host} {
			dp := dps.AppendEmpty()
			dp.Attributes().PutStr("system.device", dev)
		}
		g := ms.AppendEmpty()
		g.SetName("disk_health.disk.utilization")
		g.SetEmptyGauge().DataPoints().AppendEmpty().Attributes().PutStr("system.device", "nvme0n1")
		h := ms.AppendEmpty()
		h.SetName("disk_health.latency.duration")
		h.SetEmptyExponentialHistogram().DataPoints().AppendEmpty().SetCount(3)
	}

	var metrics, points []string
	ForEachMetric(md, func(res pcommon.Resource, m pmetric.Metric) {
		host, _ := res.Attributes().Get("host.name")
		metrics = append(metrics, host.Str()+"/"+m.Name())
	})
	assert.Equal(t, []string{"a/system.disk.io", "a/disk_health.disk.utilization", "a/disk_health.latency.duration",
		"b/system.disk.io", "b/disk_health.disk.utilization", "b/disk_health.latency.duration"}, metrics)
	ForEachNumberPoint(md, func(_ pcommon.Resource, m pmetric.Metric, dp pmetric.NumberDataPoint) {
		dev, _ := dp.Attributes().Get("system.device")
		points = append(points, m.Name()+"/"+dev.Str())
	})
	assert.Len(t, points, 6)
	assert.Equal(t, []string{"system.disk.io/sda", "system.disk.io/sda", "disk_health.disk.utilization/nvme0n1",
		"system.disk.io/sda", "system.disk.io/sdb", "disk_health.disk.utilization/nvme0n1"}, points)
	assert.Equal(t, []string{"sda", "nvme0n1", "sdb"}, Devices(md), "each once, in order")
	var counts []uint64
	ForEachHistogramPoint(md, func(_ pcommon.Resource, _ pmetric.Metric, dp pmetric.ExponentialHistogramDataPoint) {
		counts = append(counts, dp.Count())
	})
	assert.Equal(t, []uint64{3, 3}, counts)
	assert.Equal(t, 0, NumberPoints(md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(2)).Len())

	ld := plog.NewLogs()
	for _, host := range []string{"a", "b"} {
		rl := ld.ResourceLogs().AppendEmpty()
		rl.Resource().Attributes().PutStr("host.name", host)
		rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty().Body().SetStr("event " + host)
	}
	var logs []string
	ForEachLogRecord(ld, func(res pcommon.Resource, lr plog.LogRecord) {
		host, _ := res.Attributes().Get("host.name")
		logs = append(logs, host.Str()+": "+lr.Body().Str())
	})
	assert.Equal(t, []string{"a: event a", "b: event b"}, logs)
}
