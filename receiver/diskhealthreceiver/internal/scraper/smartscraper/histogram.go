package smartscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper"

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	conventions "go.opentelemetry.io/otel/semconv/v1.38.0"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/nvme"
)

// cloudDurationName is the device-side latency histogram of a cloud volume. mdatagen cannot render a
// histogram: it is built here and documented in documentation-extra.md.
const (
	cloudDurationName = "hw.physical_disk.cloud.operation.duration"
	cloudDurationDesc = "Latency of each read / write operation as the cloud volume measured it (Amazon D0h device-side histogram), " +
		"as a cumulative explicit-bucket histogram in seconds. SMART, Amazon EBS and instance store. Not in semantic conventions."
)

// appendCloudHistograms adds one resource (res) holding the volume's read and write latency
// histograms to md. A bin [lower, upper) µs becomes the bucket with upper bound upper: the volume's bins
// are powers of two, so the buckets are the volume's own, unchanged.
func appendCloudHistograms(md pmetric.Metrics, res pcommon.Resource, start, ts time.Time, id, name, version string, a *nvme.AmazonStats) {
	if len(a.ReadLatency) == 0 && len(a.WriteLatency) == 0 {
		return
	}
	rm := md.ResourceMetrics().AppendEmpty()
	rm.SetSchemaUrl(conventions.SchemaURL)
	res.CopyTo(rm.Resource())
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName(metadata.ScopeName)
	sm.Scope().SetVersion(version)
	m := sm.Metrics().AppendEmpty()
	m.SetName(cloudDurationName)
	m.SetDescription(cloudDurationDesc)
	m.SetUnit("s")
	h := m.SetEmptyHistogram()
	h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	for _, d := range []struct {
		dir  metadata.AttributeDiskIoDirection
		bins []nvme.LatencyBin
	}{{metadata.AttributeDiskIoDirectionRead, a.ReadLatency}, {metadata.AttributeDiskIoDirectionWrite, a.WriteLatency}} {
		if len(d.bins) == 0 {
			continue
		}
		dp := h.DataPoints().AppendEmpty()
		dp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		dp.SetTimestamp(pcommon.NewTimestampFromTime(ts))
		attrs := dp.Attributes()
		attrs.PutStr("hw.id", id)
		attrs.PutStr("hw.name", name)
		attrs.PutStr("hw.type", physicalDisk.String())
		attrs.PutStr("disk.io.direction", d.dir.String())
		var total uint64
		for i, b := range d.bins {
			if i < len(d.bins)-1 {
				dp.ExplicitBounds().Append(float64(b.Upper) / 1e6)
			}
			dp.BucketCounts().Append(b.Count)
			total += b.Count
		}
		dp.SetCount(total)
	}
}
