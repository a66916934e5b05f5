package latencyscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/latencyscraper"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/biolat"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
)

// histogramMetric is one exponential histogram this source emits. mdatagen renders only sums and
// gauges, so these are built here by hand; this table is their one definition, and
// documentation-extra.md documents each row (TestHistogramsDocumented keeps the two equal).
type histogramMetric struct {
	name        string
	unit        string
	description string
	kind        biolat.Kind
	// directions are the probe's directions this metric carries; withDirection puts each as
	// disk.io.direction on the point (the read/write metrics), else the metric is one direction.
	directions    []biolat.Direction
	withDirection bool
	// deviceTime: emitted only with device_time: true.
	deviceTime bool
	// perCgroup: per owning cgroup, emitted only with per_cgroup.enabled (appendCgroupHistograms).
	perCgroup bool
}

var histograms = []histogramMetric{
	{
		name: "disk_health.disk.operation.duration", unit: "s", kind: biolat.Total,
		directions: []biolat.Direction{biolat.Read, biolat.Write}, withDirection: true,
		description: "Time each read / write request took, from its creation in the block layer to its completion " +
			"(queueing included), as a cumulative exponential histogram. Not in semantic conventions.",
	},
	{
		name: "disk_health.disk.discard.operation.duration", unit: "s", kind: biolat.Total,
		directions:  []biolat.Direction{biolat.Discard},
		description: "Time each discard (TRIM/UNMAP) request took, creation to completion, as a cumulative exponential histogram. Not in semantic conventions.",
	},
	{
		name: "disk_health.disk.flush.operation.duration", unit: "s", kind: biolat.Total,
		directions:  []biolat.Direction{biolat.Flush},
		description: "Time each flush request took, creation to completion, as a cumulative exponential histogram. Not in semantic conventions.",
	},
	{
		name: "disk_health.disk.operation.device.duration", unit: "s", kind: biolat.DeviceTime, deviceTime: true,
		directions: []biolat.Direction{biolat.Read, biolat.Write}, withDirection: true,
		description: "Time each read / write request spent in the device: its last issue to the driver to its completion " +
			"(no queueing in the block layer), as a cumulative exponential histogram. Opt-in (device_time: true). Not in semantic conventions.",
	},
	{
		name: "disk_health.container.disk.operation.duration", unit: "s", kind: biolat.Total, perCgroup: true,
		directions: []biolat.Direction{biolat.Read, biolat.Write}, withDirection: true,
		description: "Time each read / write request of a cgroup (pod, container) took on a device, creation to completion, as a " +
			"cumulative exponential histogram with the buckets of disk_health.disk.operation.duration; the top N cgroups per device, " +
			"the rest as cgroup.path \"other\". Opt-in (per_cgroup.enabled). Not in semantic conventions.",
	},
}

// cgroupHistogram is the per-cgroup row of histograms.
var cgroupHistogram = histograms[len(histograms)-1]

// histogramFor returns the index in histograms of the metric a series belongs to, or -1.
func histogramFor(kind biolat.Kind, dir biolat.Direction) int {
	for i, h := range histograms {
		if h.kind != kind {
			continue
		}
		for _, d := range h.directions {
			if d == dir {
				return i
			}
		}
	}
	return -1
}

// pointIdentity is what every point of a device carries.
type pointIdentity struct {
	device string // system.device
	hwID   string // hw.id, "" for a device that is not a whole physical disk
}

// appendHistograms adds one exponential histogram metric per table row that has points, in table
// order, to ms. start gives each device's start time.
func appendHistograms(ms pmetric.MetricSlice, series []biolat.Series, ids map[biolat.Dev]pointIdentity,
	start func(biolat.Dev) pcommon.Timestamp, ts pcommon.Timestamp, deviceTime bool,
) {
	points := make([]pmetric.ExponentialHistogramDataPointSlice, len(histograms))
	have := make([]bool, len(histograms))
	// Points are added in table order, then in the probe's order (device, direction).
	for i, hm := range histograms {
		if hm.deviceTime && !deviceTime || hm.perCgroup {
			continue
		}
		for j := range series {
			x := &series[j]
			if histogramFor(x.Kind, x.Direction) != i {
				continue
			}
			id, ok := ids[x.Dev]
			if !ok {
				continue
			}
			if !have[i] {
				points[i], have[i] = emit.AppendExpHistogram(ms, hm.name, hm.unit, hm.description), true
			}
			dp := points[i].AppendEmpty()
			emit.SetHistogramPoint(dp, &x.Histogram, start(x.Dev), ts)
			attrs := dp.Attributes()
			attrs.PutStr("system.device", id.device)
			if hm.withDirection {
				attrs.PutStr("disk.io.direction", x.Direction.String())
			}
			if id.hwID != "" {
				attrs.PutStr("hw.id", id.hwID)
			}
		}
	}
}

// appendCgroupHistograms adds the per-cgroup histogram's read and write points to ms, one per
// cgroup (or other), device and direction, each with its own start.
func appendCgroupHistograms(ms pmetric.MetricSlice, points []cgPoint, ids map[biolat.Dev]pointIdentity, ts pcommon.Timestamp) {
	var dps pmetric.ExponentialHistogramDataPointSlice
	for i := range points {
		p := &points[i]
		id, ok := ids[p.dev]
		if !ok || (p.direction != biolat.Read && p.direction != biolat.Write) {
			continue
		}
		if dps == (pmetric.ExponentialHistogramDataPointSlice{}) {
			dps = emit.AppendExpHistogram(ms, cgroupHistogram.name, cgroupHistogram.unit, cgroupHistogram.description)
		}
		dp := dps.AppendEmpty()
		emit.SetHistogramPoint(dp, &p.hist, p.start, ts)
		attrs := dp.Attributes()
		putCgroupIdentity(attrs, p.path, id)
		attrs.PutStr("disk.io.direction", p.direction.String())
	}
}

// putCgroupIdentity puts a cgroup's identity on a device: its path, the device's name and hw.id, and
// the pod and container its path names.
func putCgroupIdentity(attrs pcommon.Map, path string, id pointIdentity) {
	emit.PutCgroupIdentity(attrs, path)
	attrs.PutStr("system.device", id.device)
	if id.hwID != "" {
		attrs.PutStr("hw.id", id.hwID)
	}
}
