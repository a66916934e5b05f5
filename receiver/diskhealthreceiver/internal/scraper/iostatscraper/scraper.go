package iostatscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/iostatscraper"

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper"
	"go.opentelemetry.io/collector/scraper/scrapererror"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/blockdev"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/boottime"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/diskstats"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/iostat"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/iostatscraper/internal/hostmetrics"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/iostatscraper/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/tick"
)

// ioScraper wires read → parse → compute → emit for /proc/diskstats. It keeps its buffers between
// scrapes so a steady-state scrape allocates little beyond the emitted pdata.
type ioScraper struct {
	e *metadata.Emitter
	// hm writes the hostmetrics-compatible set under conventions: hostmetrics (nil otherwise).
	hm      *hostmetrics.Emitter
	rb      *metadata.ResourceBuilder
	filter  *blockdev.Filter
	procDir string

	// tick is /proc/diskstats and the devices' identity, shared with the receiver's other sources.
	tick   *tick.Reader
	engine *iostat.Engine
	// Each device's resource, built again only when its identity changes.
	res emit.Cache[resKey, pcommon.Resource]

	now func() time.Time
}

// hostmetricsOurs names this source's own metric of a hostmetrics name where the two differ: semconv
// does not define these, so ours are in disk_health.* and hostmetrics keeps its system.* names.
var hostmetricsOurs = map[string]string{
	"system.disk.pending_operations": "disk_health.disk.pending_operations",
	"system.disk.weighted_io_time":   "disk_health.disk.weighted_io_time",
}

func newScraper(set scraper.Settings, cfg *Config, now func() time.Time) (*ioScraper, error) {
	f, err := cfg.filter(section)
	if err != nil {
		return nil, err
	}
	mbc := cfg.MetricsBuilderConfig
	hm, err := emit.Hostmetrics(cfg.Conventions, &mbc.Metrics, func() *hostmetrics.Emitter { return hostmetrics.NewEmitter(cfg.Hostmetrics, set) }, hostmetricsOurs)
	if err != nil {
		return nil, err
	}
	return &ioScraper{
		e:       metadata.NewEmitter(mbc, set),
		hm:      hm,
		rb:      metadata.NewResourceBuilder(mbc.ResourceAttributes),
		filter:  f,
		procDir: filepath.Join(cfg.RootPath, "proc"),
		tick:    cfg.Tick.OrOwn(cfg.RootPath, now),
		now:     now,
	}, nil
}

// ready creates the rate engine on the first scrape that can read the boot time, so a root_path
// without /proc is reported every scrape (naming the path) instead of failing the collector's start.
func (s *ioScraper) ready() error {
	if s.engine != nil {
		return nil
	}
	boot, err := boottime.Read(s.procDir, s.now())
	if err != nil {
		return err
	}
	s.engine = iostat.NewEngine(boot)
	return nil
}

// shutdown closes /proc/diskstats, which the reader keeps open between scrapes.
func (s *ioScraper) shutdown(context.Context) error {
	return s.tick.Close()
}

func (s *ioScraper) scrape(ctx context.Context) (pmetric.Metrics, error) {
	if err := s.ready(); err != nil {
		return pmetric.NewMetrics(), err
	}
	var md pmetric.Metrics
	var errs scrapererror.ScrapeErrors
	err := s.tick.Use(ctx, func(sn *tick.Snapshot) error {
		if sn.Empty {
			return fmt.Errorf("%s is empty", sn.Path)
		}
		md = s.emit(sn, &errs)
		return nil
	})
	if err != nil {
		return pmetric.NewMetrics(), fmt.Errorf("no device I/O: %w", err)
	}
	return md, errs.Combine()
}

// emit computes and records every device of a snapshot.
func (s *ioScraper) emit(sn *tick.Snapshot, errs *scrapererror.ScrapeErrors) pmetric.Metrics {
	// The read time is the sample time: intervals use its monotonic reading.
	now := sn.At
	ts := pcommon.NewTimestampFromTime(now)
	stats := sn.Stats
	if s.hm != nil {
		// hostmetrics' disk points have no resource attributes: one empty resource holds them all.
		s.hm.Resource(pcommon.NewResource())
	}
	// The input's own problems are the owner's to report (tick.Reader.Owns); iostat, first in the
	// registry, owns it whenever it runs.
	if perr := s.tick.Own(sn.ParseErr); perr != nil {
		errs.AddPartial(emit.CountErrors(perr), perr)
	}
	if err := s.tick.Own(sn.Identities()); err != nil {
		// Identity is enrichment: the device's I/O is still reported without the unreadable attribute,
		// so the error must be partial (the controller drops a scrape that returns a plain error).
		errs.AddPartial(emit.CountErrors(err), err)
	}
	for i := range stats {
		st := &stats[i]
		id, ok := sn.Identity(st.DeviceName)
		if !ok {
			continue
		}
		if !s.filter.Match(id) {
			if uerr := sn.Unreadable(st.DeviceName); uerr != nil {
				// Said every scrape while it lasts (the reporter logs it once): the device is not
				// merely filtered out as configured, it is missing for want of its identity.
				errs.AddPartial(1, fmt.Errorf("device %s dropped from I/O metrics: its sysfs identity could not be read, "+
					"so its class falls back to other, which %s.device_classes does not include: %w", st.DeviceName, section, uerr))
			}
			continue
		}
		r := s.engine.Update(iostat.Key{Major: st.MajorNumber, Minor: st.MinorNumber, Name: st.DeviceName, Seq: id.DiskSeq}, st, now)
		if r.Reset && id.DiskSeq == 0 {
			// Without diskseq (kernels before 5.15) restarted counters are the only sign of a device
			// re-created under the same name and major:minor: its identity is read again, so a swapped
			// disk's new serial and hw.id come with its new series.
			if err := sn.Reread(st.DeviceName); err != nil {
				errs.AddPartial(emit.CountErrors(err), err)
			}
			if id, ok = sn.Identity(st.DeviceName); !ok {
				continue
			}
		}
		s.e.Resource(s.resource(st, id))
		s.record(ts, st, id, &r)
		if s.hm != nil {
			s.recordHostmetrics(ts, st.DeviceName, &r)
		}
	}
	s.engine.EndScrape(now)
	s.res.Sweep()
	md := s.e.Emit()
	if s.hm != nil {
		s.hm.Emit().ResourceMetrics().MoveAndAppendTo(md.ResourceMetrics())
	}
	return md
}

// recordHostmetrics appends one device's points of the hostmetrics-compatible set: hostmetrics'
// disk scraper's metrics from the same counters, with its names, attributes and units.
func (s *ioScraper) recordHostmetrics(ts pcommon.Timestamp, dev string, r *iostat.Result) {
	e, c := s.hm, &r.Counters
	rd, wr := hostmetrics.AttributeDirectionRead, hostmetrics.AttributeDirectionWrite
	e.SetStartTime(pcommon.NewTimestampFromTime(r.Start))
	e.AppendSystemDiskIoDataPoint(ts, emit.Int(c.ReadBytes), dev, rd)
	e.AppendSystemDiskIoDataPoint(ts, emit.Int(c.WriteBytes), dev, wr)
	e.AppendSystemDiskIoTimeDataPoint(ts, c.IOTime, dev)
	e.AppendSystemDiskMergedDataPoint(ts, emit.Int(c.ReadMerged), dev, rd)
	e.AppendSystemDiskMergedDataPoint(ts, emit.Int(c.WriteMerged), dev, wr)
	e.AppendSystemDiskOperationTimeDataPoint(ts, c.ReadTime, dev, rd)
	e.AppendSystemDiskOperationTimeDataPoint(ts, c.WriteTime, dev, wr)
	e.AppendSystemDiskOperationsDataPoint(ts, emit.Int(c.ReadOps), dev, rd)
	e.AppendSystemDiskOperationsDataPoint(ts, emit.Int(c.WriteOps), dev, wr)
	e.AppendSystemDiskPendingOperationsDataPoint(ts, emit.Int(c.InFlight), dev)
	e.AppendSystemDiskWeightedIoTimeDataPoint(ts, c.WeightedIOTime, dev)
}

// record appends one device's points. Metrics come in metadata.yaml's (name) order, which the emitter
// keeps without reordering (any order gives the same output, at the cost of a sort).
func (s *ioScraper) record(ts pcommon.Timestamp, st *diskstats.Stat, id *blockdev.Identity, r *iostat.Result) {
	e := s.e
	dev := st.DeviceName
	rd, wr := metadata.AttributeDiskIoDirectionRead, metadata.AttributeDiskIoDirectionWrite
	c, g := &r.Counters, &r.Gauges
	discard, flush, gauges := discards(st, id), flushes(st, id), r.HasGauges
	// Counters start when their series started (boot, the device's appearance, or its re-creation);
	// gauges describe the interval since the previous read, so theirs starts at that read.
	counters, interval := pcommon.NewTimestampFromTime(r.Start), pcommon.NewTimestampFromTime(r.PrevTime)

	// Discards and flushes are their own metrics (disk.io.direction is read or write), counters and
	// gauges alike: documentation-extra.md says why.
	e.SetStartTime(counters)
	if discard {
		e.AppendDiskHealthDiskDiscardIoDataPoint(ts, emit.Int(c.DiscardBytes), dev)
	}
	if discard && gauges {
		e.SetStartTime(interval)
		e.AppendDiskHealthDiskDiscardMergeRateDataPoint(ts, g.DiscardMergedRate, dev)
		e.AppendDiskHealthDiskDiscardMergeRatioDataPoint(ts, g.DiscardMergedRatio, dev)
		e.SetStartTime(counters)
	}
	if discard {
		e.AppendDiskHealthDiskDiscardMergedDataPoint(ts, emit.Int(c.DiscardMerged), dev)
	}
	if discard && gauges {
		e.SetStartTime(interval)
		e.AppendDiskHealthDiskDiscardOperationAverageSizeDataPoint(ts, g.DiscardAvgSize, dev)
		e.AppendDiskHealthDiskDiscardOperationAverageTimeDataPoint(ts, g.DiscardAwait, dev)
		e.AppendDiskHealthDiskDiscardOperationRateDataPoint(ts, g.DiscardOpsRate, dev)
		e.SetStartTime(counters)
	}
	if discard {
		e.AppendDiskHealthDiskDiscardOperationTimeDataPoint(ts, c.DiscardTime, dev)
		e.AppendDiskHealthDiskDiscardOperationsDataPoint(ts, emit.Int(c.DiscardOps), dev)
	}
	if discard && gauges {
		e.SetStartTime(interval)
		e.AppendDiskHealthDiskDiscardThroughputDataPoint(ts, g.DiscardBytesRate, dev)
		e.SetStartTime(counters)
	}
	if flush && gauges {
		// Flushes carry no data and are never merged: iostat shows only f/s and f_await.
		e.SetStartTime(interval)
		e.AppendDiskHealthDiskFlushOperationAverageTimeDataPoint(ts, g.FlushAwait, dev)
		e.AppendDiskHealthDiskFlushOperationRateDataPoint(ts, g.FlushOpsRate, dev)
		e.SetStartTime(counters)
	}
	if flush {
		e.AppendDiskHealthDiskFlushOperationTimeDataPoint(ts, c.FlushTime, dev)
		e.AppendDiskHealthDiskFlushOperationsDataPoint(ts, emit.Int(c.FlushOps), dev)
	}
	if gauges {
		e.SetStartTime(interval)
		e.AppendDiskHealthDiskMergeRateDataPoint(ts, g.ReadMergedRate, dev, rd)
		e.AppendDiskHealthDiskMergeRateDataPoint(ts, g.WriteMergedRate, dev, wr)
		e.AppendDiskHealthDiskMergeRatioDataPoint(ts, g.ReadMergedRatio, dev, rd)
		e.AppendDiskHealthDiskMergeRatioDataPoint(ts, g.WriteMergedRatio, dev, wr)
		e.AppendDiskHealthDiskOperationAverageSizeDataPoint(ts, g.ReadAvgSize, dev, rd)
		e.AppendDiskHealthDiskOperationAverageSizeDataPoint(ts, g.WriteAvgSize, dev, wr)
		e.AppendDiskHealthDiskOperationAverageTimeDataPoint(ts, g.ReadAwait, dev, rd)
		e.AppendDiskHealthDiskOperationAverageTimeDataPoint(ts, g.WriteAwait, dev, wr)
		e.AppendDiskHealthDiskOperationRateDataPoint(ts, g.ReadOpsRate, dev, rd)
		e.AppendDiskHealthDiskOperationRateDataPoint(ts, g.WriteOpsRate, dev, wr)
		e.SetStartTime(counters)
	}
	e.AppendSystemDiskIoDataPoint(ts, emit.Int(c.ReadBytes), dev, rd)
	e.AppendSystemDiskIoDataPoint(ts, emit.Int(c.WriteBytes), dev, wr)
	e.AppendSystemDiskIoTimeDataPoint(ts, c.IOTime, dev)
	if id.Size > 0 {
		e.AppendSystemDiskLimitDataPoint(ts, emit.Int(id.Size), dev)
	}
	e.AppendSystemDiskMergedDataPoint(ts, emit.Int(c.ReadMerged), dev, rd)
	e.AppendSystemDiskMergedDataPoint(ts, emit.Int(c.WriteMerged), dev, wr)
	e.AppendSystemDiskOperationTimeDataPoint(ts, c.ReadTime, dev, rd)
	e.AppendSystemDiskOperationTimeDataPoint(ts, c.WriteTime, dev, wr)
	e.AppendSystemDiskOperationsDataPoint(ts, emit.Int(c.ReadOps), dev, rd)
	e.AppendSystemDiskOperationsDataPoint(ts, emit.Int(c.WriteOps), dev, wr)
	e.AppendDiskHealthDiskPendingOperationsDataPoint(ts, emit.Int(c.InFlight), dev)
	if gauges {
		e.SetStartTime(interval)
		e.AppendDiskHealthDiskQueueLengthDataPoint(ts, g.QueueLength, dev)
		e.AppendDiskHealthDiskThroughputDataPoint(ts, g.ReadBytesRate, dev, rd)
		e.AppendDiskHealthDiskThroughputDataPoint(ts, g.WriteBytesRate, dev, wr)
		e.AppendDiskHealthDiskUtilizationDataPoint(ts, g.Utilization, dev)
		e.SetStartTime(counters)
	}
	e.AppendDiskHealthDiskWeightedIoTimeDataPoint(ts, c.WeightedIOTime, dev)
}

// resKey is what a device's resource is built from.
type resKey struct {
	name         string
	major, minor uint32
	id           blockdev.Identity
}

// resource returns the device's resource, from the cache while its identity is unchanged.
func (s *ioScraper) resource(st *diskstats.Stat, id *blockdev.Identity) pcommon.Resource {
	k := resKey{st.DeviceName, st.MajorNumber, st.MinorNumber, *id}
	if res, ok := s.res.Get(k); ok {
		return res
	}
	res := s.buildResource(st, id)
	s.res.Put(k, res)
	return res
}

func (s *ioScraper) buildResource(st *diskstats.Stat, id *blockdev.Identity) pcommon.Resource {
	rb := s.rb
	rb.SetDiskHealthDiskMajorMinor(blockdev.MajorMinor(st.MajorNumber, st.MinorNumber))
	setClass(rb, id.Class)
	emit.SetIfNotEmpty(rb.SetDiskHealthDiskDmName, id.DMName)
	emit.SetIfNotEmpty(rb.SetDiskHealthDiskParent, id.Parent)
	emit.SetIfNotEmpty(rb.SetHwModel, id.Model)
	emit.SetIfNotEmpty(rb.SetHwSerialNumber, id.Serial)
	emit.SetIfNotEmpty(rb.SetHwFirmwareVersion, id.Firmware)
	emit.SetIfNotEmpty(rb.SetDiskHealthDiskWwn, id.WWN)
	if id.Rotational >= 0 {
		rb.SetDiskHealthDiskRotational(id.Rotational == 1)
	}
	if id.Class == blockdev.ClassDisk {
		rb.SetHwID(blockdev.DiskID(id))
	}
	emit.SetIfNotEmpty(rb.SetHwParent, id.HWParent)
	return rb.Emit()
}

func setClass(rb *metadata.ResourceBuilder, c blockdev.Class) {
	switch c {
	case blockdev.ClassDisk:
		rb.SetDiskHealthDiskClassDisk()
	case blockdev.ClassPartition:
		rb.SetDiskHealthDiskClassPartition()
	case blockdev.ClassDM:
		rb.SetDiskHealthDiskClassDm()
	case blockdev.ClassMD:
		rb.SetDiskHealthDiskClassMd()
	case blockdev.ClassLoop:
		rb.SetDiskHealthDiskClassLoop()
	case blockdev.ClassRAM:
		rb.SetDiskHealthDiskClassRAM()
	case blockdev.ClassOther:
		rb.SetDiskHealthDiskClassOther()
	}
}

// discards reports whether a device's discard series are emitted: where the kernel counts discards
// (4.18+) and the device can discard at all (else they stay 0 forever: an empty series).
func discards(st *diskstats.Stat, id *blockdev.Identity) bool {
	return st.HasDiscard() && !id.NoDiscard
}

// flushes reports whether a device's flush series are emitted: where the kernel counts flushes (5.5+)
// and the device has a volatile write cache (the kernel sends a write-through device no flush).
func flushes(st *diskstats.Stat, id *blockdev.Identity) bool {
	return st.HasFlush() && !id.WriteThrough
}
