package pressurescraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/pressurescraper"

import (
	"context"
	"path/filepath"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper"
	"go.uber.org/zap"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/boottime"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/pressure"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/pressurescraper/internal/metadata"
)

// pressureScraper reports the host's I/O pressure stall information. A kernel without PSI is found at
// start and logged once; the scraper then reports nothing, and no error, every scrape.
type pressureScraper struct {
	// status is where the source says it cannot run (disk_health.source.status).
	status  *emit.Status
	mb      *metadata.MetricsBuilder
	logger  *zap.Logger
	procDir string
	path    string
	boot    time.Time
	off     bool
	// seriesStart is the start of the cumulative totals: boot, or the previous scrape after a total went
	// back (the kernel's never do; a replaced or garbage file can), so a total never falls within
	// a series.
	seriesStart time.Time
	last        [2]uint64 // the some and full totals of the previous scrape
	lastTime    time.Time

	now func() time.Time
}

func newScraper(set scraper.Settings, cfg *Config, now func() time.Time) *pressureScraper {
	procDir := filepath.Join(cfg.RootPath, "proc")
	return &pressureScraper{
		mb:      metadata.NewMetricsBuilder(metadata.MetricsBuilderConfig{Metrics: cfg.Metrics}, set),
		logger:  set.Logger,
		status:  cfg.Status,
		procDir: procDir,
		path:    filepath.Join(procDir, "pressure", "io"),
		now:     now,
	}
}

func (s *pressureScraper) start(context.Context, component.Host) error {
	_, err := pressure.Read(s.path)
	if pressure.Unavailable(err) {
		s.off = true
		s.status.Set("psi", emit.StateOff, emit.ReasonUnsupportedKernel)
		s.logger.Info("The kernel has no I/O pressure stall information (CONFIG_PSI off or booted with psi=0): "+
			"system.io.linux.pressure.* are not reported.", zap.String("path", s.path), zap.Error(err))
	}
	// Any other error (a malformed file) is reported by every scrape until it goes away.
	return nil
}

// ready reads the boot time on the first scrape that can, so a root_path without /proc is reported
// every scrape (naming the path) instead of failing the collector's start.
func (s *pressureScraper) ready() error {
	if !s.boot.IsZero() {
		return nil
	}
	boot, err := boottime.Read(s.procDir, s.now())
	if err != nil {
		return err
	}
	s.boot, s.seriesStart = boot, boot
	return nil
}

func (s *pressureScraper) scrape(context.Context) (pmetric.Metrics, error) {
	if s.off {
		return pmetric.NewMetrics(), nil
	}
	if err := s.ready(); err != nil {
		return pmetric.NewMetrics(), err
	}
	p, err := pressure.Read(s.path)
	if err != nil {
		return pmetric.NewMetrics(), err
	}
	now := s.now()
	ts := pcommon.NewTimestampFromTime(now)
	if !s.lastTime.IsZero() && (p.Some.TotalMicros < s.last[0] || p.Full.TotalMicros < s.last[1]) {
		s.seriesStart = s.lastTime
	}
	s.last, s.lastTime = [2]uint64{p.Some.TotalMicros, p.Full.TotalMicros}, now
	mb := s.mb
	mb.Reset(metadata.WithStartTime(pcommon.NewTimestampFromTime(s.seriesStart)))
	some, full := metadata.AttributeDiskHealthLinuxPressureStallTypeSome, metadata.AttributeDiskHealthLinuxPressureStallTypeFull
	record := func(st pressure.Stall, kind metadata.AttributeDiskHealthLinuxPressureStallType) {
		mb.RecordDiskHealthIoLinuxPressureTotalDataPoint(ts, st.TotalSeconds(), kind)
		mb.RecordDiskHealthIoLinuxPressure10sDataPoint(ts, st.Avg10, kind)
		mb.RecordDiskHealthIoLinuxPressure1mDataPoint(ts, st.Avg60, kind)
		mb.RecordDiskHealthIoLinuxPressure5mDataPoint(ts, st.Avg300, kind)
	}
	record(p.Some, some)
	if p.HasFull {
		record(p.Full, full)
	}
	return mb.Emit(), nil
}
