package diskhealthreceiver // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver"

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/scraper/scrapererror"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/diskstats"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/iostat"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/metadata"
)

// ioScraper wires read → parse → compute → emit for /proc/diskstats. It keeps its buffers between
// scrapes so a steady-state scrape allocates little beyond the emitted pdata.
type ioScraper struct {
	mb      *metadata.MetricsBuilder
	rb      *metadata.ResourceBuilder
	filter  *diskstats.Filter
	procDir string
	sysDir  string

	reader diskstats.FileReader
	parser diskstats.Parser
	stats  []diskstats.Stat
	ids    diskstats.IdentityCache
	engine *iostat.Engine

	// now is the clock; tests replace it to control intervals.
	now func() time.Time
}

func newIOScraper(set receiver.Settings, cfg *Config) (*ioScraper, error) {
	f, err := cfg.IOStat.filter()
	if err != nil {
		return nil, err
	}
	root := rootOf(cfg)
	return &ioScraper{
		mb:      metadata.NewMetricsBuilder(cfg.MetricsBuilderConfig, set),
		rb:      metadata.NewResourceBuilder(cfg.MetricsBuilderConfig.ResourceAttributes),
		filter:  f,
		procDir: filepath.Join(root, "proc"),
		sysDir:  filepath.Join(root, "sys"),
		now:     time.Now,
	}, nil
}

func rootOf(cfg *Config) string {
	if cfg.RootPath == "" {
		return "/"
	}
	return cfg.RootPath
}

// engineReady creates the rate engine on the first scrape that can read the boot time, so a root_path
// without /proc is reported every scrape (naming the path) instead of failing the collector's start.
func (s *ioScraper) engineReady() error {
	if s.engine != nil {
		return nil
	}
	boot, err := bootTime(s.procDir, s.now())
	if err != nil {
		return err
	}
	s.engine = iostat.NewEngine(boot)
	return nil
}

// shutdown closes /proc/diskstats, which the reader keeps open between scrapes.
func (s *ioScraper) shutdown(context.Context) error {
	return s.reader.Close()
}

func (s *ioScraper) scrape(context.Context) (pmetric.Metrics, error) {
	if err := s.engineReady(); err != nil {
		return pmetric.NewMetrics(), err
	}
	path := filepath.Join(s.procDir, "diskstats")
	data, err := s.reader.Read(path)
	if err != nil {
		return pmetric.NewMetrics(), err
	}
	// The read time is the sample time: intervals use its monotonic reading.
	now := s.now()
	ts := pcommon.NewTimestampFromTime(now)

	var errs scrapererror.ScrapeErrors
	stats, perr := s.parser.Parse(data, s.stats[:0])
	s.stats = stats
	if perr != nil {
		errs.AddPartial(countErrors(perr), perr)
	}
	if err := s.ids.Refresh(s.sysDir, stats); err != nil {
		// Identity is enrichment: the device's I/O is still reported without the unreadable attribute,
		// so the error must be partial (the controller drops a scrape that returns a plain error).
		errs.AddPartial(countErrors(err), err)
	}
	for i := range stats {
		st := &stats[i]
		id, ok := s.ids.Get(st.DeviceName)
		if !ok || !s.filter.Match(id) {
			continue
		}
		r := s.engine.Update(iostat.Key{Major: st.MajorNumber, Minor: st.MinorNumber, Name: st.DeviceName}, st, now)
		s.record(ts, st, id, &r)
	}
	s.engine.EndScrape(now)
	return s.mb.Emit(), errs.Combine()
}

// countErrors counts the device lines an errors.Join reports, for the partial-error count.
func countErrors(err error) int {
	var joined interface{ Unwrap() []error }
	if errors.As(err, &joined) {
		return len(joined.Unwrap())
	}
	return 1
}

func (s *ioScraper) record(ts pcommon.Timestamp, st *diskstats.Stat, id *diskstats.Identity, r *iostat.Result) {
	dev := st.DeviceName
	mb := s.mb
	rd, wr := metadata.AttributeDiskIoDirectionRead, metadata.AttributeDiskIoDirectionWrite
	c := &r.Counters

	// Counters start when their series started (boot, the device's appearance, or its re-creation).
	mb.Reset(metadata.WithStartTime(pcommon.NewTimestampFromTime(r.Start)))
	mb.RecordSystemDiskIoDataPoint(ts, int64(c.ReadBytes), dev, rd)
	mb.RecordSystemDiskIoDataPoint(ts, int64(c.WriteBytes), dev, wr)
	mb.RecordSystemDiskOperationsDataPoint(ts, int64(c.ReadOps), dev, rd)
	mb.RecordSystemDiskOperationsDataPoint(ts, int64(c.WriteOps), dev, wr)
	mb.RecordSystemDiskMergedDataPoint(ts, int64(c.ReadMerged), dev, rd)
	mb.RecordSystemDiskMergedDataPoint(ts, int64(c.WriteMerged), dev, wr)
	mb.RecordSystemDiskOperationTimeDataPoint(ts, c.ReadTime, dev, rd)
	mb.RecordSystemDiskOperationTimeDataPoint(ts, c.WriteTime, dev, wr)
	mb.RecordSystemDiskIoTimeDataPoint(ts, c.IOTime, dev)
	mb.RecordSystemDiskWeightedIoTimeDataPoint(ts, c.WeightedIOTime, dev)
	mb.RecordSystemDiskPendingOperationsDataPoint(ts, int64(c.InFlight), dev)
	if id.Size > 0 {
		mb.RecordSystemDiskLimitDataPoint(ts, int64(id.Size), dev)
	}
	if st.HasDiscard() {
		mb.RecordSystemDiskDiscardIoDataPoint(ts, int64(c.DiscardBytes), dev)
		mb.RecordSystemDiskDiscardOperationsDataPoint(ts, int64(c.DiscardOps), dev)
		mb.RecordSystemDiskDiscardMergedDataPoint(ts, int64(c.DiscardMerged), dev)
		mb.RecordSystemDiskDiscardOperationTimeDataPoint(ts, c.DiscardTime, dev)
	}
	if st.HasFlush() {
		mb.RecordSystemDiskFlushOperationsDataPoint(ts, int64(c.FlushOps), dev)
		mb.RecordSystemDiskFlushOperationTimeDataPoint(ts, c.FlushTime, dev)
	}

	if r.HasGauges {
		// Gauges describe the interval since the previous read: its start is that read's time.
		mb.Reset(metadata.WithStartTime(pcommon.NewTimestampFromTime(r.PrevTime)))
		s.recordGauges(ts, dev, st, &r.Gauges)
	}
	mb.EmitForResource(metadata.WithResource(s.resource(st, id)))
}

func (s *ioScraper) recordGauges(ts pcommon.Timestamp, dev string, st *diskstats.Stat, g *iostat.Gauges) {
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
	if st.HasDiscard() {
		perDir(dc, g.DiscardOpsRate, g.DiscardBytesRate, g.DiscardMergedRate, g.DiscardMergedRatio, g.DiscardAwait, g.DiscardAvgSize)
	}
	if st.HasFlush() {
		// Flushes carry no data and are never merged: iostat shows only f/s and f_await.
		mb.RecordSystemDiskOperationRateDataPoint(ts, g.FlushOpsRate, dev, fl)
		mb.RecordSystemDiskOperationAverageTimeDataPoint(ts, g.FlushAwait, dev, fl)
	}
	mb.RecordSystemDiskQueueLengthDataPoint(ts, g.QueueLength, dev)
	mb.RecordSystemDiskUtilizationDataPoint(ts, g.Utilization, dev)
}

func (s *ioScraper) resource(st *diskstats.Stat, id *diskstats.Identity) pcommon.Resource {
	rb := s.rb
	rb.SetDiskMajorMinor(strconv.FormatUint(uint64(st.MajorNumber), 10) + ":" + strconv.FormatUint(uint64(st.MinorNumber), 10))
	setClass(rb, id.Class)
	setIfNotEmpty(rb.SetDiskDmName, id.DMName)
	setIfNotEmpty(rb.SetDiskParent, id.Parent)
	setIfNotEmpty(rb.SetHwModel, id.Model)
	setIfNotEmpty(rb.SetHwSerialNumber, id.Serial)
	setIfNotEmpty(rb.SetHwFirmwareVersion, id.Firmware)
	setIfNotEmpty(rb.SetDiskWwn, id.WWN)
	if id.Rotational >= 0 {
		rb.SetDiskRotational(id.Rotational == 1)
	}
	if id.Class == diskstats.ClassDisk {
		rb.SetHwID(diskstats.DiskID(id))
	}
	return rb.Emit()
}

func setClass(rb *metadata.ResourceBuilder, c diskstats.Class) {
	switch c {
	case diskstats.ClassDisk:
		rb.SetDiskClassDisk()
	case diskstats.ClassPartition:
		rb.SetDiskClassPartition()
	case diskstats.ClassDM:
		rb.SetDiskClassDm()
	case diskstats.ClassMD:
		rb.SetDiskClassMd()
	case diskstats.ClassLoop:
		rb.SetDiskClassLoop()
	case diskstats.ClassRAM:
		rb.SetDiskClassRAM()
	case diskstats.ClassOther:
		rb.SetDiskClassOther()
	}
}

func setIfNotEmpty(set func(string), v string) {
	if v != "" {
		set(v)
	}
}

// bootTime reads the host's boot time (btime in <proc>/stat): counters present at start count since boot.
func bootTime(procDir string, now time.Time) (time.Time, error) {
	path := filepath.Join(procDir, "stat")
	data, err := os.ReadFile(path)
	if err != nil {
		return time.Time{}, fmt.Errorf("boot time: %w", err)
	}
	secs, err := parseBtime(data)
	if err != nil {
		return time.Time{}, fmt.Errorf("boot time from %s: %w", path, err)
	}
	if b := time.Unix(secs, 0); !b.After(now) {
		return b, nil
	}
	return time.Time{}, fmt.Errorf("boot time from %s lies in the future", path)
}
