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
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/iostatscraper/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/tick"
)

// ioScraper wires read → parse → compute → emit for /proc/diskstats. It keeps its buffers between
// scrapes so a steady-state scrape allocates little beyond the emitted pdata.
type ioScraper struct {
	mb      *metadata.MetricsBuilder
	rb      *metadata.ResourceBuilder
	filter  *blockdev.Filter
	procDir string

	// tick is /proc/diskstats and the devices' identity, shared with the receiver's other sources.
	tick   *tick.Reader
	engine *iostat.Engine
	// direct writes the pdata when it can (nil: the generated builder does).
	direct *direct

	now func() time.Time
}

func newScraper(set scraper.Settings, cfg *Config, now func() time.Time) (*ioScraper, error) {
	f, err := cfg.filter(section)
	if err != nil {
		return nil, err
	}
	return &ioScraper{
		mb:      metadata.NewMetricsBuilder(cfg.MetricsBuilderConfig, set),
		rb:      metadata.NewResourceBuilder(cfg.MetricsBuilderConfig.ResourceAttributes),
		filter:  f,
		procDir: filepath.Join(cfg.RootPath, "proc"),
		tick:    cfg.Tick.OrOwn(cfg.RootPath, now),
		direct:  newDirect(set, cfg),
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
	if perr := sn.ParseErr; perr != nil {
		errs.AddPartial(emit.CountErrors(perr), perr)
	}
	if err := sn.Identities(); err != nil {
		// Identity is enrichment: the device's I/O is still reported without the unreadable attribute,
		// so the error must be partial (the controller drops a scrape that returns a plain error).
		errs.AddPartial(emit.CountErrors(err), err)
	}
	var md pmetric.Metrics
	var rms pmetric.ResourceMetricsSlice
	if s.direct != nil {
		md = pmetric.NewMetrics()
		rms = md.ResourceMetrics()
		rms.EnsureCapacity(len(stats))
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
		if s.direct != nil {
			res := s.direct.resource(st, id, func() pcommon.Resource { return s.resource(st, id) })
			s.direct.device(rms, ts, st, id, &r, res)
			continue
		}
		s.record(ts, st, id, &r)
	}
	s.engine.EndScrape(now)
	if s.direct != nil {
		s.direct.endScrape()
		return md
	}
	return s.mb.Emit()
}

func (s *ioScraper) record(ts pcommon.Timestamp, st *diskstats.Stat, id *blockdev.Identity, r *iostat.Result) {
	dev := st.DeviceName
	mb := s.mb
	rd, wr := metadata.AttributeDiskIoDirectionRead, metadata.AttributeDiskIoDirectionWrite
	c := &r.Counters

	// Counters start when their series started (boot, the device's appearance, or its re-creation).
	mb.Reset(metadata.WithStartTime(pcommon.NewTimestampFromTime(r.Start)))
	mb.RecordSystemDiskIoDataPoint(ts, emit.Int(c.ReadBytes), dev, rd)
	mb.RecordSystemDiskIoDataPoint(ts, emit.Int(c.WriteBytes), dev, wr)
	mb.RecordSystemDiskOperationsDataPoint(ts, emit.Int(c.ReadOps), dev, rd)
	mb.RecordSystemDiskOperationsDataPoint(ts, emit.Int(c.WriteOps), dev, wr)
	mb.RecordSystemDiskMergedDataPoint(ts, emit.Int(c.ReadMerged), dev, rd)
	mb.RecordSystemDiskMergedDataPoint(ts, emit.Int(c.WriteMerged), dev, wr)
	mb.RecordSystemDiskOperationTimeDataPoint(ts, c.ReadTime, dev, rd)
	mb.RecordSystemDiskOperationTimeDataPoint(ts, c.WriteTime, dev, wr)
	mb.RecordSystemDiskIoTimeDataPoint(ts, c.IOTime, dev)
	mb.RecordSystemDiskWeightedIoTimeDataPoint(ts, c.WeightedIOTime, dev)
	mb.RecordSystemDiskPendingOperationsDataPoint(ts, emit.Int(c.InFlight), dev)
	if id.Size > 0 {
		mb.RecordSystemDiskLimitDataPoint(ts, emit.Int(id.Size), dev)
	}
	discard, flush := discards(st, id), flushes(st, id)
	if discard {
		mb.RecordSystemDiskDiscardIoDataPoint(ts, emit.Int(c.DiscardBytes), dev)
		mb.RecordSystemDiskDiscardOperationsDataPoint(ts, emit.Int(c.DiscardOps), dev)
		mb.RecordSystemDiskDiscardMergedDataPoint(ts, emit.Int(c.DiscardMerged), dev)
		mb.RecordSystemDiskDiscardOperationTimeDataPoint(ts, c.DiscardTime, dev)
	}
	if flush {
		mb.RecordSystemDiskFlushOperationsDataPoint(ts, emit.Int(c.FlushOps), dev)
		mb.RecordSystemDiskFlushOperationTimeDataPoint(ts, c.FlushTime, dev)
	}

	if r.HasGauges {
		// Gauges describe the interval since the previous read: its start is that read's time.
		mb.Reset(metadata.WithStartTime(pcommon.NewTimestampFromTime(r.PrevTime)))
		s.recordGauges(ts, dev, discard, flush, &r.Gauges)
	}
	mb.EmitForResource(metadata.WithResource(s.resource(st, id)))
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

func (s *ioScraper) recordGauges(ts pcommon.Timestamp, dev string, discard, flush bool, g *iostat.Gauges) {
	mb := s.mb
	type dir = metadata.AttributeIostatDirection
	rd, wr := metadata.AttributeIostatDirectionRead, metadata.AttributeIostatDirectionWrite
	dc, fl := metadata.AttributeIostatDirectionDiscard, metadata.AttributeIostatDirectionFlush
	perDir := func(d dir, ops, bytes, merged, mergedRatio, await, size float64) {
		mb.RecordSystemDiskOperationRateDataPoint(ts, ops, dev, d)
		mb.RecordSystemDiskIoRateDataPoint(ts, bytes, dev, d)
		mb.RecordSystemDiskMergedRateDataPoint(ts, merged, dev, d)
		mb.RecordSystemDiskMergedRatioDataPoint(ts, mergedRatio, dev, d)
		mb.RecordSystemDiskOperationAverageTimeDataPoint(ts, await, dev, d)
		mb.RecordSystemDiskOperationAverageSizeDataPoint(ts, size, dev, d)
	}
	perDir(rd, g.ReadOpsRate, g.ReadBytesRate, g.ReadMergedRate, g.ReadMergedRatio, g.ReadAwait, g.ReadAvgSize)
	perDir(wr, g.WriteOpsRate, g.WriteBytesRate, g.WriteMergedRate, g.WriteMergedRatio, g.WriteAwait, g.WriteAvgSize)
	if discard {
		perDir(dc, g.DiscardOpsRate, g.DiscardBytesRate, g.DiscardMergedRate, g.DiscardMergedRatio, g.DiscardAwait, g.DiscardAvgSize)
	}
	if flush {
		// Flushes carry no data and are never merged: iostat shows only f/s and f_await.
		mb.RecordSystemDiskOperationRateDataPoint(ts, g.FlushOpsRate, dev, fl)
		mb.RecordSystemDiskOperationAverageTimeDataPoint(ts, g.FlushAwait, dev, fl)
	}
	mb.RecordSystemDiskQueueLengthDataPoint(ts, g.QueueLength, dev)
	mb.RecordSystemDiskUtilizationDataPoint(ts, g.Utilization, dev)
}

func (s *ioScraper) resource(st *diskstats.Stat, id *blockdev.Identity) pcommon.Resource {
	rb := s.rb
	rb.SetDiskMajorMinor(blockdev.MajorMinor(st.MajorNumber, st.MinorNumber))
	setClass(rb, id.Class)
	emit.SetIfNotEmpty(rb.SetDiskDmName, id.DMName)
	emit.SetIfNotEmpty(rb.SetDiskParent, id.Parent)
	emit.SetIfNotEmpty(rb.SetHwModel, id.Model)
	emit.SetIfNotEmpty(rb.SetHwSerialNumber, id.Serial)
	emit.SetIfNotEmpty(rb.SetHwFirmwareVersion, id.Firmware)
	emit.SetIfNotEmpty(rb.SetDiskWwn, id.WWN)
	if id.Rotational >= 0 {
		rb.SetDiskRotational(id.Rotational == 1)
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
		rb.SetDiskClassDisk()
	case blockdev.ClassPartition:
		rb.SetDiskClassPartition()
	case blockdev.ClassDM:
		rb.SetDiskClassDm()
	case blockdev.ClassMD:
		rb.SetDiskClassMd()
	case blockdev.ClassLoop:
		rb.SetDiskClassLoop()
	case blockdev.ClassRAM:
		rb.SetDiskClassRAM()
	case blockdev.ClassOther:
		rb.SetDiskClassOther()
	}
}
