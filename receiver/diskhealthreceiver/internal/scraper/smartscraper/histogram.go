package smartscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper"

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper/internal/metadata"
	conventions "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/semconv/v1.44.0"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/nvme"
)

// histogramMetric is one device-side latency histogram. mdatagen renders only sums and gauges, so these
// are built here by hand; this table is their one definition, and documentation-extra.md documents each
// row (TestHistogramsDocumented keeps the two equal).
type histogramMetric struct {
	name        string
	description string
	// withDirection: each point carries disk.io.direction (read/write), else the metric is one operation.
	withDirection bool
}

// Rows of histograms, by what fills them.
const (
	histCloud = iota
	histMonitor
	histMonitorDiscard
	histRows
)

var histograms = [histRows]histogramMetric{
	histCloud: {
		name: "disk_health.physical_disk.cloud.operation.duration", withDirection: true,
		description: "Latency of each read / write operation as the cloud volume measured it (Amazon D0h device-side histogram), " +
			"as a cumulative explicit-bucket histogram in seconds. SMART, Amazon EBS and instance store. Not in semantic conventions.",
	},
	histMonitor: {
		name: "disk_health.physical_disk.latency_monitor.operation.duration", withDirection: true,
		description: "Read / write commands at least as slow as the drive's latency monitor threshold A, by the thresholds A-D the drive " +
			"reports (OCP C3h active window), as an explicit-bucket histogram in seconds, cumulative since the window began. SMART, " +
			"OCP 2.0+ NVMe with the monitor enabled. Not in semantic conventions.",
	},
	histMonitorDiscard: {
		name: "disk_health.physical_disk.latency_monitor.discard.operation.duration",
		description: "Deallocate (TRIM) commands at least as slow as the drive's latency monitor threshold A, as " +
			"disk_health.physical_disk.latency_monitor.operation.duration. Not in semantic conventions.",
	},
}

// latencySourceDevice is the value of the attribute that marks a latency histogram measured by the
// device, as opposed to the host's (the latency source's disk_health.disk.*operation.duration, which carry none).
const (
	latencySourceAttr   = "disk_health.latency.source"
	latencySourceDevice = "device"
)

// histogramBuilder appends one disk's device-side histograms to one resource, created with the first.
type histogramBuilder struct {
	md      pmetric.Metrics
	res     pcommon.Resource
	version string
	disk    *device.Disk
	ts      pcommon.Timestamp

	metrics pmetric.MetricSlice
	started bool
	points  [histRows]pmetric.HistogramDataPointSlice
	have    [histRows]bool
}

// point adds a point to row's metric with the disk's identity on it: hw.id, hw.name, hw.type as on every
// SMART point, plus system.device (the controller's first namespace, whose host histograms carry the
// same hw.id) and the device source, so the point matches the host's histogram of the same disk.
func (b *histogramBuilder) point(row int, start time.Time, dir string) pmetric.HistogramDataPoint {
	if !b.started {
		rm := b.md.ResourceMetrics().AppendEmpty()
		rm.SetSchemaUrl(conventions.SchemaURL)
		b.res.CopyTo(rm.Resource())
		sm := rm.ScopeMetrics().AppendEmpty()
		sm.Scope().SetName(metadata.ScopeName)
		sm.Scope().SetVersion(b.version)
		b.metrics, b.started = sm.Metrics(), true
	}
	if !b.have[row] {
		hm := histograms[row]
		m := b.metrics.AppendEmpty()
		m.SetName(hm.name)
		m.SetDescription(hm.description)
		m.SetUnit("s")
		h := m.SetEmptyHistogram()
		h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		b.points[row], b.have[row] = h.DataPoints(), true
	}
	dp := b.points[row].AppendEmpty()
	dp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	dp.SetTimestamp(b.ts)
	attrs := dp.Attributes()
	attrs.PutStr("hw.id", b.disk.ID)
	attrs.PutStr("hw.name", b.disk.Name)
	attrs.PutStr("hw.type", physicalDisk.String())
	if len(b.disk.Namespaces) > 0 {
		attrs.PutStr("system.device", b.disk.Namespaces[0].Name)
	}
	if histograms[row].withDirection {
		attrs.PutStr("disk.io.direction", dir)
	}
	attrs.PutStr(latencySourceAttr, latencySourceDevice)
	return dp
}

// appendDeviceHistograms adds the device-side latency histograms of one NVMe drive's read (res) to md,
// under the disk's resource: an Amazon volume's bins (cumulative since the collector started: the log
// counts since the volume was attached, before that) and an OCP drive's latency monitor (cumulative
// since its active window began). t is what the scraper remembers of the drive.
func (s *smartScraper) appendDeviceHistograms(md pmetric.Metrics, resource pcommon.Resource, res *device.Result, t *nvmeTrack) {
	n := res.Snapshot.NVMe
	b := &histogramBuilder{md: md, res: resource, version: s.version, disk: &res.Disk, ts: pcommon.NewTimestampFromTime(res.Time)}
	if a := n.Amazon; a != nil {
		for _, d := range []struct {
			dir  metadata.AttributeDiskIoDirection
			bins []nvme.LatencyBin
		}{{metadata.AttributeDiskIoDirectionRead, a.ReadLatency}, {metadata.AttributeDiskIoDirectionWrite, a.WriteLatency}} {
			if len(d.bins) > 0 {
				setCloudBins(b.point(histCloud, s.started, d.dir.String()), d.bins)
			}
		}
	}
	l := n.Latency
	if l == nil {
		// Not read this time (not advertised, or the read failed): the window seen last is kept, so a
		// passing failure does not move its start.
		return
	}
	if !l.Enabled() {
		t.monitor = nil
		return
	}
	// The counters start from zero with each window: the start time is the window's, so a backend sees
	// a new window as a counter reset. The drive's timer says how long the window ran when first seen.
	if !nvme.SameActiveWindow(t.monitor, l, res.Time.Sub(t.monitorAt)) {
		t.monitorStart = res.Time.Add(-l.ActiveElapsed())
	}
	t.monitor, t.monitorAt = l, res.Time
	for _, op := range []struct {
		op  nvme.LatencyOp
		row int
		dir metadata.AttributeDiskIoDirection
	}{
		{nvme.LatencyRead, histMonitor, metadata.AttributeDiskIoDirectionRead},
		{nvme.LatencyWrite, histMonitor, metadata.AttributeDiskIoDirectionWrite},
		{nvme.LatencyDeallocate, histMonitorDiscard, 0},
	} {
		h, ok := l.ActiveHistogram(op.op)
		if !ok {
			return
		}
		dp := b.point(op.row, t.monitorStart, op.dir.String())
		dp.ExplicitBounds().FromRaw(h.Bounds)
		dp.BucketCounts().FromRaw(h.Counts)
		dp.SetCount(h.Total)
	}
}

// setCloudBins fills dp from the volume's bins. A bin [lower, upper) µs becomes the bucket with upper bound
// upper: the volume's bins are powers of two, so the buckets are the volume's own, unchanged; the last bin
// is the overflow bucket. The log keeps no sum per histogram, so none is set.
func setCloudBins(dp pmetric.HistogramDataPoint, bins []nvme.LatencyBin) {
	var total uint64
	for i, bin := range bins {
		if i < len(bins)-1 {
			dp.ExplicitBounds().Append(float64(bin.Upper) / 1e6)
		}
		dp.BucketCounts().Append(bin.Count)
		total = satAdd(total, bin.Count)
	}
	dp.SetCount(total)
}

func satAdd(a, b uint64) uint64 {
	if a+b < a {
		return 1<<64 - 1
	}
	return a + b
}
