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
	e       *metadata.Emitter
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
	devs  []string // names of one cgroup's devices, "" where the filter drops one

	now func() time.Time
}

type devNum struct{ major, minor uint32 }

func newScraper(set scraper.Settings, cfg *Config, now func() time.Time) (*cgroupScraper, error) {
	devices, err := cfg.Devices.Compile(section + ".devices")
	if err != nil {
		return nil, err
	}
	s := &cgroupScraper{
		e:       metadata.NewEmitter(cfg.MetricsBuilderConfig, set),
		rb:      metadata.NewResourceBuilder(cfg.MetricsBuilderConfig.ResourceAttributes),
		logger:  set.Logger,
		cfg:     cfg,
		devices: devices,
		root:    cfg.RootPath,
		procDir: filepath.Join(cfg.RootPath, "proc"),
		tick:    cfg.Tick.OrOwn(cfg.RootPath, now),
		names:   map[devNum]string{},
		now:     now,
	}
	return s, nil
}

// start finds the hierarchy once: a host without per-cgroup I/O accounting is logged here and the
// scraper then reports nothing, never an error every scrape.
func (s *cgroupScraper) start(context.Context, component.Host) error {
	h, err := cgroupio.Detect(filepath.Join(s.root, "sys", "fs", "cgroup"))
	if errors.Is(err, cgroupio.ErrNoIOAccounting) {
		s.logger.Info("No per-cgroup I/O accounting on this host: container.disk.io and disk_health.container.* are not reported.", zap.Error(err))
		s.cfg.Status.Set("hierarchy", emit.StateOff, emit.ReasonUnsupportedKernel)
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
	if err := s.tick.Own(s.refreshNames(ctx)); err != nil {
		// /proc/diskstats is read only for device names: without it (or for its bad lines) devices are
		// named by major:minor and every cgroup's I/O is still reported, so the error is partial (the
		// controller drops a scrape that returns a plain error). It is said only when this source owns
		// the input (tick.Reader.Owns): otherwise the owner says it, once for the receiver.
		errs.AddPartial(emit.CountErrors(err), fmt.Errorf("device names (devices then named by major:minor): %w", err))
	}
	ts := pcommon.NewTimestampFromTime(now)
	for i := range res.Cgroups {
		if cg := &res.Cgroups[i]; s.keep(cg) > 0 {
			s.record(ts, cg, s.devs)
		}
	}
	return s.e.Emit(), errs.Combine()
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

// keep names cg's devices into s.devs ("" for one the devices filter drops) and returns how many are kept:
// a cgroup without one is not reported.
func (s *cgroupScraper) keep(cg *cgroupio.Cgroup) int {
	s.devs = s.devs[:0]
	kept := 0
	for i := range cg.Devices {
		dev := s.deviceName(&cg.Devices[i])
		if !s.devices.Match(dev) {
			dev = ""
		} else {
			kept++
		}
		s.devs = append(s.devs, dev)
	}
	return kept
}

// resource builds cg's resource.
func (s *cgroupScraper) resource(cg *cgroupio.Cgroup) pcommon.Resource {
	rb := s.rb
	rb.SetCgroupPath(cg.Path)
	emit.SetIfNotEmpty(rb.SetContainerID, cg.ContainerID)
	emit.SetIfNotEmpty(rb.SetContainerRuntimeName, cg.Runtime)
	emit.SetIfNotEmpty(rb.SetK8sPodUID, cg.PodUID)
	emit.SetIfNotEmpty(rb.SetDiskHealthK8sPodQosClass, cg.QoSClass)
	emit.SetIfNotEmpty(rb.SetSystemdUnitName, cg.SystemdUnit)
	return rb.Emit()
}

// record appends cg's resource and points (the generated emitter keeps metadata.yaml's metric order);
// devs as keep leaves them.
func (s *cgroupScraper) record(ts pcommon.Timestamp, cg *cgroupio.Cgroup, devs []string) {
	e := s.e
	e.Resource(s.resource(cg))
	e.SetStartTime(pcommon.NewTimestampFromTime(cg.Start))
	rd, wr := metadata.AttributeDiskIoDirectionRead, metadata.AttributeDiskIoDirectionWrite
	for i := range cg.Devices {
		d, dev := &cg.Devices[i], devs[i]
		if dev == "" {
			continue
		}
		e.AppendContainerDiskIoDataPoint(ts, emit.Int(d.ReadBytes), cg.Path, dev, rd)
		e.AppendContainerDiskIoDataPoint(ts, emit.Int(d.WriteBytes), cg.Path, dev, wr)
		e.AppendDiskHealthContainerDiskOperationsDataPoint(ts, emit.Int(d.ReadOps), cg.Path, dev, rd)
		e.AppendDiskHealthContainerDiskOperationsDataPoint(ts, emit.Int(d.WriteOps), cg.Path, dev, wr)
		if d.HasDiscard {
			e.AppendDiskHealthContainerDiskDiscardIoDataPoint(ts, emit.Int(d.DiscardBytes), cg.Path, dev)
			e.AppendDiskHealthContainerDiskDiscardOperationsDataPoint(ts, emit.Int(d.DiscardOps), cg.Path, dev)
		}
	}
	if cg.HasPressure {
		some, full := metadata.AttributeDiskHealthLinuxPressureStallTypeSome, metadata.AttributeDiskHealthLinuxPressureStallTypeFull
		// The totals have a start of their own: they may go back while the I/O counters do not.
		psiStart, ioStart := pcommon.NewTimestampFromTime(cg.PressureStart), pcommon.NewTimestampFromTime(cg.Start)
		record := func(st pressure.Stall, kind metadata.AttributeDiskHealthLinuxPressureStallType) {
			e.SetStartTime(psiStart)
			e.AppendDiskHealthContainerIoLinuxPressureTotalDataPoint(ts, st.TotalSeconds(), cg.Path, kind)
			e.SetStartTime(ioStart)
			e.AppendDiskHealthContainerIoLinuxPressure10sDataPoint(ts, st.Avg10, cg.Path, kind)
			e.AppendDiskHealthContainerIoLinuxPressure1mDataPoint(ts, st.Avg60, cg.Path, kind)
			e.AppendDiskHealthContainerIoLinuxPressure5mDataPoint(ts, st.Avg300, cg.Path, kind)
		}
		record(cg.Pressure.Some, some)
		if cg.Pressure.HasFull {
			record(cg.Pressure.Full, full)
		}
	}
}
