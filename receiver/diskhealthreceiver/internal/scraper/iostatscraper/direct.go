package iostatscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/iostatscraper"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/blockdev"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/diskstats"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/iostat"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/iostatscraper/internal/metadata"
)

// direct writes a scrape's pdata without the generated MetricsBuilder (see emit's package comment for
// why), producing what record writes through it: the same resources, metrics in the builder's order,
// points in record's order. It is used only where that holds for every input: every enabled metric
// keeps all its attributes and no resource attribute filters (newDirect returns nil otherwise, and
// the scraper uses the builder). TestDirectMatchesBuilder compares the two byte for byte.
type direct struct {
	hdr emit.Header
	// One shape per metric, nil when the metric is disabled; in the builder's emit order.
	discardIo, discardMerged, discardOpTime, discardOps, flushOpTime, flushOps,
	io, ioRate, ioTime, limit, merged, mergedRate, mergedRatio, avgSize, avgTime, opRate,
	opTime, ops, pending, queue, util, weighted *emit.Shape
	// gauges is set when any gauge metric is enabled.
	gauges bool

	devKey, ioDirKey, statDirKey string
	rd, wr                       string // disk.io.direction values
	srd, swr, sdc, sfl           string // iostat.direction values

	// res caches each device's resource, rebuilt only when its identity changes.
	res map[string]*devResource
	gen uint64
}

type devResource struct {
	id    blockdev.Identity
	major uint32
	minor uint32
	res   pcommon.Resource
	gen   uint64
}

// newDirect returns the direct emitter for cfg, or nil where only the builder writes the right output.
func newDirect(set scraper.Settings, cfg *Config) *direct {
	mbc := cfg.MetricsBuilderConfig
	if !emit.FullAttributes(mbc.Metrics, metadata.DefaultMetricsConfig()) || emit.ResourceFilters(mbc.ResourceAttributes) {
		return nil
	}
	// One device with every optional field, recorded through the builder, shows every enabled metric.
	tmp := &ioScraper{mb: metadata.NewMetricsBuilder(mbc, set), rb: metadata.NewResourceBuilder(mbc.ResourceAttributes)}
	st := &diskstats.Stat{Fields: 20}
	st.DeviceName = "sda"
	tmp.record(0, st, &blockdev.Identity{Name: "sda", Class: blockdev.ClassDisk, Size: 1}, &iostat.Result{HasGauges: true})
	hdr, shapes := emit.Shapes(tmp.mb.Emit())
	mi := &metadata.MetricsInfo
	d := &direct{
		hdr:           hdr,
		discardIo:     shapes[mi.SystemDiskDiscardIo.Name],
		discardMerged: shapes[mi.SystemDiskDiscardMerged.Name],
		discardOpTime: shapes[mi.SystemDiskDiscardOperationTime.Name],
		discardOps:    shapes[mi.SystemDiskDiscardOperations.Name],
		flushOpTime:   shapes[mi.SystemDiskFlushOperationTime.Name],
		flushOps:      shapes[mi.SystemDiskFlushOperations.Name],
		io:            shapes[mi.SystemDiskIo.Name],
		ioRate:        shapes[mi.SystemDiskIoRate.Name],
		ioTime:        shapes[mi.SystemDiskIoTime.Name],
		limit:         shapes[mi.SystemDiskLimit.Name],
		merged:        shapes[mi.SystemDiskMerged.Name],
		mergedRate:    shapes[mi.SystemDiskMergedRate.Name],
		mergedRatio:   shapes[mi.SystemDiskMergedRatio.Name],
		avgSize:       shapes[mi.SystemDiskOperationAverageSize.Name],
		avgTime:       shapes[mi.SystemDiskOperationAverageTime.Name],
		opRate:        shapes[mi.SystemDiskOperationRate.Name],
		opTime:        shapes[mi.SystemDiskOperationTime.Name],
		ops:           shapes[mi.SystemDiskOperations.Name],
		pending:       shapes[mi.SystemDiskPendingOperations.Name],
		queue:         shapes[mi.SystemDiskQueueLength.Name],
		util:          shapes[mi.SystemDiskUtilization.Name],
		weighted:      shapes[mi.SystemDiskWeightedIoTime.Name],
		devKey:        string(metadata.SystemDiskIoMetricAttributeKeySystemDevice),
		ioDirKey:      string(metadata.SystemDiskIoMetricAttributeKeyDiskIoDirection),
		statDirKey:    string(metadata.SystemDiskIoRateMetricAttributeKeyIostatDirection),
		rd:            metadata.AttributeDiskIoDirectionRead.String(),
		wr:            metadata.AttributeDiskIoDirectionWrite.String(),
		srd:           metadata.AttributeIostatDirectionRead.String(),
		swr:           metadata.AttributeIostatDirectionWrite.String(),
		sdc:           metadata.AttributeIostatDirectionDiscard.String(),
		sfl:           metadata.AttributeIostatDirectionFlush.String(),
		res:           map[string]*devResource{},
	}
	d.gauges = d.ioRate != nil || d.mergedRate != nil || d.mergedRatio != nil || d.avgSize != nil ||
		d.avgTime != nil || d.opRate != nil || d.queue != nil || d.util != nil
	return d
}

// count returns how many of shapes are enabled.
func count(shapes ...*emit.Shape) int {
	n := 0
	for _, s := range shapes {
		if s != nil {
			n++
		}
	}
	return n
}

// resource returns dev's resource, built by build when the device is new or its identity changed.
func (d *direct) resource(st *diskstats.Stat, id *blockdev.Identity, build func() pcommon.Resource) pcommon.Resource {
	c := d.res[st.DeviceName]
	if c == nil || c.id != *id || c.major != st.MajorNumber || c.minor != st.MinorNumber {
		c = &devResource{id: *id, major: st.MajorNumber, minor: st.MinorNumber, res: build()}
		d.res[st.DeviceName] = c
	}
	c.gen = d.gen
	return c.res
}

// endScrape forgets the resources of devices the scrape did not report.
func (d *direct) endScrape() {
	for name, c := range d.res {
		if c.gen != d.gen {
			delete(d.res, name)
		}
	}
	d.gen++
}

// device appends one device's resource and metrics to rms.
func (d *direct) device(rms pmetric.ResourceMetricsSlice, ts pcommon.Timestamp, st *diskstats.Stat, id *blockdev.Identity, r *iostat.Result, res pcommon.Resource) {
	discard, flush, gauges := discards(st, id), flushes(st, id), r.HasGauges
	n := count(d.io, d.ioTime, d.merged, d.opTime, d.ops, d.pending, d.weighted)
	if id.Size > 0 {
		n += count(d.limit)
	}
	if discard {
		n += count(d.discardIo, d.discardMerged, d.discardOpTime, d.discardOps)
	}
	if flush {
		n += count(d.flushOpTime, d.flushOps)
	}
	if gauges {
		n += count(d.ioRate, d.mergedRate, d.mergedRatio, d.avgSize, d.avgTime, d.opRate, d.queue, d.util)
	}
	if n == 0 {
		return // the builder drops a resource without metrics
	}
	ms := d.hdr.Resource(rms, res, n)
	dev := st.DeviceName
	c := &r.Counters
	g := &r.Gauges
	start := pcommon.NewTimestampFromTime(r.Start)
	var gstart pcommon.Timestamp
	if gauges {
		gstart = pcommon.NewTimestampFromTime(r.PrevTime)
	}
	// Counters of one value per device.
	int1 := func(s *emit.Shape, v int64) {
		if s != nil {
			emit.Point(s.Begin(ms, 1), start, ts, d.devKey, dev).SetIntValue(v)
		}
	}
	dbl1 := func(s *emit.Shape, v float64) {
		if s != nil {
			emit.Point(s.Begin(ms, 1), start, ts, d.devKey, dev).SetDoubleValue(v)
		}
	}
	// Counters by disk.io.direction: read, write.
	int2 := func(s *emit.Shape, rv, wv int64) {
		if s != nil {
			dps := s.Begin(ms, 2)
			emit.Point(dps, start, ts, d.devKey, dev, d.ioDirKey, d.rd).SetIntValue(rv)
			emit.Point(dps, start, ts, d.devKey, dev, d.ioDirKey, d.wr).SetIntValue(wv)
		}
	}
	// Gauges by iostat.direction: read, write, discard where the kernel counts it, flush where the
	// metric has it.
	perDir := func(s *emit.Shape, rv, wv, dv float64, withFlush bool, fv float64) {
		if s == nil || !gauges {
			return
		}
		k := 2
		if discard {
			k++
		}
		withFlush = withFlush && flush
		if withFlush {
			k++
		}
		dps := s.Begin(ms, k)
		emit.Point(dps, gstart, ts, d.devKey, dev, d.statDirKey, d.srd).SetDoubleValue(rv)
		emit.Point(dps, gstart, ts, d.devKey, dev, d.statDirKey, d.swr).SetDoubleValue(wv)
		if discard {
			emit.Point(dps, gstart, ts, d.devKey, dev, d.statDirKey, d.sdc).SetDoubleValue(dv)
		}
		if withFlush {
			emit.Point(dps, gstart, ts, d.devKey, dev, d.statDirKey, d.sfl).SetDoubleValue(fv)
		}
	}
	gauge1 := func(s *emit.Shape, v float64) {
		if s != nil && gauges {
			emit.Point(s.Begin(ms, 1), gstart, ts, d.devKey, dev).SetDoubleValue(v)
		}
	}

	// The builder's order: metrics by name.
	if discard {
		int1(d.discardIo, emit.Int(c.DiscardBytes))
		int1(d.discardMerged, emit.Int(c.DiscardMerged))
		dbl1(d.discardOpTime, c.DiscardTime)
		int1(d.discardOps, emit.Int(c.DiscardOps))
	}
	if flush {
		dbl1(d.flushOpTime, c.FlushTime)
		int1(d.flushOps, emit.Int(c.FlushOps))
	}
	int2(d.io, emit.Int(c.ReadBytes), emit.Int(c.WriteBytes))
	perDir(d.ioRate, g.ReadBytesRate, g.WriteBytesRate, g.DiscardBytesRate, false, 0)
	dbl1(d.ioTime, c.IOTime)
	if id.Size > 0 {
		int1(d.limit, emit.Int(id.Size))
	}
	int2(d.merged, emit.Int(c.ReadMerged), emit.Int(c.WriteMerged))
	perDir(d.mergedRate, g.ReadMergedRate, g.WriteMergedRate, g.DiscardMergedRate, false, 0)
	perDir(d.mergedRatio, g.ReadMergedRatio, g.WriteMergedRatio, g.DiscardMergedRatio, false, 0)
	perDir(d.avgSize, g.ReadAvgSize, g.WriteAvgSize, g.DiscardAvgSize, false, 0)
	perDir(d.avgTime, g.ReadAwait, g.WriteAwait, g.DiscardAwait, true, g.FlushAwait)
	perDir(d.opRate, g.ReadOpsRate, g.WriteOpsRate, g.DiscardOpsRate, true, g.FlushOpsRate)
	if s := d.opTime; s != nil {
		dps := s.Begin(ms, 2)
		emit.Point(dps, start, ts, d.devKey, dev, d.ioDirKey, d.rd).SetDoubleValue(c.ReadTime)
		emit.Point(dps, start, ts, d.devKey, dev, d.ioDirKey, d.wr).SetDoubleValue(c.WriteTime)
	}
	int2(d.ops, emit.Int(c.ReadOps), emit.Int(c.WriteOps))
	int1(d.pending, emit.Int(c.InFlight))
	gauge1(d.queue, g.QueueLength)
	gauge1(d.util, g.Utilization)
	dbl1(d.weighted, c.WeightedIOTime)
}
