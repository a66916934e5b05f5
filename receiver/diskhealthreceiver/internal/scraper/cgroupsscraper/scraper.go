package cgroupsscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/cgroupsscraper"

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper"
	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.uber.org/zap"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/blockdev"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/boottime"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/cgroupio"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/match"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/pressure"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/cgroupsscraper/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/tick"
)

// cgroupScraper reports the busiest cgroups' I/O per device. Device numbers become the kernel names the
// iostat metrics carry (from /proc/diskstats), so a backend can put a pod next to its disk.
type cgroupScraper struct {
	mb      *metadata.MetricsBuilder
	rb      *metadata.ResourceBuilder
	logger  *zap.Logger
	cfg     *Config
	devices *match.Matcher
	root    string
	procDir string

	hierarchy cgroupio.Hierarchy  // found at start; Dir is empty on a host without per-cgroup I/O
	collector *cgroupio.Collector // created by the first scrape that can read the boot time

	// tick is /proc/diskstats, shared with the receiver's other sources: only its device names are used.
	tick  *tick.Reader
	names map[devNum]string

	now func() time.Time
}

type devNum struct{ major, minor uint32 }

func newScraper(set scraper.Settings, cfg *Config, now func() time.Time) (*cgroupScraper, error) {
	devices, err := cfg.Devices.Compile(section + ".devices")
	if err != nil {
		return nil, err
	}
	return &cgroupScraper{
		mb:      metadata.NewMetricsBuilder(cfg.MetricsBuilderConfig, set),
		rb:      metadata.NewResourceBuilder(cfg.MetricsBuilderConfig.ResourceAttributes),
		logger:  set.Logger,
		cfg:     cfg,
		devices: devices,
		root:    cfg.RootPath,
		procDir: filepath.Join(cfg.RootPath, "proc"),
		tick:    cfg.Tick.OrOwn(cfg.RootPath, now),
		names:   map[devNum]string{},
		now:     now,
	}, nil
}

// start finds the hierarchy once: a host without per-cgroup I/O accounting is logged here and the
// scraper then reports nothing, never an error every scrape.
func (s *cgroupScraper) start(context.Context, component.Host) error {
	h, err := cgroupio.Detect(filepath.Join(s.root, "sys", "fs", "cgroup"))
	if errors.Is(err, cgroupio.ErrNoIOAccounting) {
		s.logger.Info("No per-cgroup I/O accounting on this host: container.disk.* are not reported.", zap.Error(err))
		return nil
	}
	if err != nil {
		return err
	}
	s.hierarchy = h
	s.logger.Info("Per-cgroup I/O", zap.Stringer("cgroup", h.Version), zap.String("hierarchy", h.Dir),
		zap.String("pressure", h.PressureDir))
	return nil
}

// ready creates the collector on the first scrape that can read the boot time, so a root_path without
// /proc is reported every scrape (naming the path) instead of failing the collector's start.
func (s *cgroupScraper) ready() error {
	if s.collector != nil {
		return nil
	}
	// Counters of cgroups present at the first scrape count since their creation, after boot.
	boot, err := boottime.Read(s.procDir, s.now())
	if err != nil {
		return err
	}
	h := s.hierarchy
	cc := cgroupio.Config{Version: h.Version, TopN: s.cfg.TopN, MaxDepth: s.cfg.MaxDepth, Start: boot}
	if h.PressureDir != "" {
		cc.Pressure = cgroupio.NewDirFS(h.PressureDir)
	}
	s.collector, err = cgroupio.NewCollector(cgroupio.NewDirFS(h.Dir), cc)
	return err
}

func (s *cgroupScraper) shutdown(context.Context) error {
	return s.tick.Close()
}

func (s *cgroupScraper) scrape(ctx context.Context) (pmetric.Metrics, error) {
	if s.hierarchy.Dir == "" {
		return pmetric.NewMetrics(), nil
	}
	if err := s.ready(); err != nil {
		return pmetric.NewMetrics(), err
	}
	now := s.now()
	res, cerr := s.collector.Collect(now)
	var errs scrapererror.ScrapeErrors
	if cerr != nil {
		errs.AddPartial(emit.CountErrors(cerr), cerr)
	}
	if len(res.Cgroups) == 0 {
		return pmetric.NewMetrics(), errs.Combine()
	}
	if err := s.refreshNames(ctx); err != nil {
		// /proc/diskstats is read only for device names: without it (or for its bad lines) devices are
		// named by major:minor and every cgroup's I/O is still reported, so the error is partial (the
		// controller drops a scrape that returns a plain error).
		errs.AddPartial(emit.CountErrors(err), fmt.Errorf("device names (devices then named by major:minor): %w", err))
	}
	ts := pcommon.NewTimestampFromTime(now)
	for i := range res.Cgroups {
		s.record(ts, &res.Cgroups[i])
	}
	return s.mb.Emit(), errs.Combine()
}

// refreshNames maps device numbers to kernel names from /proc/diskstats.
func (s *cgroupScraper) refreshNames(ctx context.Context) error {
	return s.tick.Use(ctx, func(sn *tick.Snapshot) error {
		clear(s.names)
		for i := range sn.Stats {
			st := &sn.Stats[i]
			s.names[devNum{st.MajorNumber, st.MinorNumber}] = st.DeviceName
		}
		return sn.ParseErr
	})
}

func (s *cgroupScraper) deviceName(d *cgroupio.DeviceStat) string {
	if name, ok := s.names[devNum{d.Major, d.Minor}]; ok {
		return name
	}
	return blockdev.MajorMinor(d.Major, d.Minor)
}

func (s *cgroupScraper) record(ts pcommon.Timestamp, cg *cgroupio.Cgroup) {
	mb := s.mb
	mb.Reset(metadata.WithStartTime(pcommon.NewTimestampFromTime(cg.Start)))
	rd, wr := metadata.AttributeDiskIoDirectionRead, metadata.AttributeDiskIoDirectionWrite
	kept := false
	for i := range cg.Devices {
		d := &cg.Devices[i]
		dev := s.deviceName(d)
		if !s.devices.Match(dev) {
			continue
		}
		kept = true
		mb.RecordContainerDiskIoDataPoint(ts, emit.Int(d.ReadBytes), cg.Path, dev, rd)
		mb.RecordContainerDiskIoDataPoint(ts, emit.Int(d.WriteBytes), cg.Path, dev, wr)
		mb.RecordContainerDiskOperationsDataPoint(ts, emit.Int(d.ReadOps), cg.Path, dev, rd)
		mb.RecordContainerDiskOperationsDataPoint(ts, emit.Int(d.WriteOps), cg.Path, dev, wr)
		if d.HasDiscard {
			mb.RecordContainerDiskDiscardIoDataPoint(ts, emit.Int(d.DiscardBytes), cg.Path, dev)
			mb.RecordContainerDiskDiscardOperationsDataPoint(ts, emit.Int(d.DiscardOps), cg.Path, dev)
		}
	}
	if !kept {
		return
	}
	if cg.HasPressure {
		some, full := metadata.AttributeSystemLinuxPressureStallTypeSome, metadata.AttributeSystemLinuxPressureStallTypeFull
		record := func(st pressure.Stall, kind metadata.AttributeSystemLinuxPressureStallType) {
			mb.RecordContainerIoLinuxPressureTotalDataPoint(ts, st.TotalSeconds(), cg.Path, kind)
			mb.RecordContainerIoLinuxPressure10sDataPoint(ts, st.Avg10, cg.Path, kind)
			mb.RecordContainerIoLinuxPressure1mDataPoint(ts, st.Avg60, cg.Path, kind)
			mb.RecordContainerIoLinuxPressure5mDataPoint(ts, st.Avg300, cg.Path, kind)
		}
		record(cg.Pressure.Some, some)
		if cg.Pressure.HasFull {
			record(cg.Pressure.Full, full)
		}
	}
	rb := s.rb
	rb.SetCgroupPath(cg.Path)
	emit.SetIfNotEmpty(rb.SetContainerID, cg.ContainerID)
	emit.SetIfNotEmpty(rb.SetContainerRuntimeName, cg.Runtime)
	emit.SetIfNotEmpty(rb.SetK8sPodUID, cg.PodUID)
	emit.SetIfNotEmpty(rb.SetK8sPodQosClass, cg.QoSClass)
	emit.SetIfNotEmpty(rb.SetSystemdUnitName, cg.SystemdUnit)
	mb.EmitForResource(metadata.WithResource(rb.Emit()))
}
