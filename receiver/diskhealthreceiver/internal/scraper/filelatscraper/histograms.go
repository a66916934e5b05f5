package filelatscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filelatscraper"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/sanitize"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
)

// histogramMetric is an exponential histogram this source emits. mdatagen renders only sums and
// gauges, so it is built here by hand; this table is its one definition, and documentation-extra.md
// documents each row (TestHistogramsDocumented keeps the two equal).
type histogramMetric struct {
	name, unit, description string
}

var histograms = []histogramMetric{{
	name: "disk_health.filesystem.operation.duration", unit: "s",
	description: "Time each read, write and fsync system call on a regular file of the mount took, from entry to return " +
		"(page cache, NFS and FUSE included), as a cumulative exponential histogram with the buckets of the block " +
		"latency histograms; the top N mounts, the rest as system.filesystem.mountpoint \"other\". Opt-in " +
		"(filelat.enabled). Not in semantic conventions.",
}, {
	name: "disk_health.container.filesystem.operation.duration", unit: "s",
	description: "disk_health.filesystem.operation.duration per cgroup (pod, container): the calls of the cgroup's tasks " +
		"on the mount, charged to the cgroup of the task that made each call; the top N cgroups by reads on the top N " +
		"mounts, a shown cgroup's other mounts as system.filesystem.mountpoint \"other\", every other cgroup as " +
		"cgroup.path \"other\". Opt-in (filelat.per_cgroup.enabled). Not in semantic conventions.",
}}

// appendHistograms adds the histogram's points, one per mount (or other) and operation, to ms.
func appendHistograms(ms pmetric.MetricSlice, points []point, ts pcommon.Timestamp) {
	if len(points) == 0 {
		return
	}
	h := histograms[0]
	dps := emit.AppendExpHistogram(ms, h.name, h.unit, h.description)
	for i := range points {
		putPoint(dps.AppendEmpty(), &points[i], ts)
	}
}

// appendCgroupHistograms adds the per-cgroup histogram's points, one per cgroup (or other), mount
// (or other) and operation, to ms.
func appendCgroupHistograms(ms pmetric.MetricSlice, points []cgPoint, ts pcommon.Timestamp) {
	if len(points) == 0 {
		return
	}
	h := histograms[1]
	dps := emit.AppendExpHistogram(ms, h.name, h.unit, h.description)
	for i := range points {
		dp := dps.AppendEmpty()
		emit.PutCgroupIdentity(dp.Attributes(), points[i].path)
		putPoint(dp, &points[i].point, ts)
	}
}

// putPoint sets dp to p's histogram, with its mount's attributes and operation.
func putPoint(dp pmetric.ExponentialHistogramDataPoint, p *point, ts pcommon.Timestamp) {
	emit.SetHistogramPoint(dp, &p.v.hist, p.start, ts)
	attrs := dp.Attributes()
	if p.mount == nil {
		attrs.PutStr("system.filesystem.mountpoint", otherMount)
	} else {
		attrs.PutStr("system.filesystem.mountpoint", mountPoint(p.mount))
		attrs.PutStr("system.filesystem.type", p.mount.FSType)
		attrs.PutStr("system.device", p.mount.Source)
	}
	attrs.PutStr("disk_health.file.operation", p.op.String())
}

// mountPoint is a mount's system.filesystem.mountpoint: its path as the host sees it, sanitised (a mount
// point need not be valid UTF-8).
func mountPoint(m *fsusage.Mount) string { return sanitize.String(sanitize.MountPoint, m.MountPoint) }
