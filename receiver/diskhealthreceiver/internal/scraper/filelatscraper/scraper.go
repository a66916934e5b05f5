package filelatscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filelatscraper"

import (
	"context"
	"errors"
	"time"

	conventions "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/semconv/v1.44.0"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper"
	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.uber.org/zap"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/biolat"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/filelat"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filelatscraper/internal/metadata"
)

// probe is what the scraper uses of *filelat.Probe; tests put a fake behind it.
type probe interface {
	Started() time.Time
	Collect() (filelat.Snapshot, error)
	Forget(mountIDs ...uint32) error
	Close() error
}

// opener opens the probe (filelat.Open in production).
type opener func(filelat.Options) (probe, error)

// mountReader reads the host's mount table (fsusage.ReadHostMountInfo under root_path in production).
type mountReader func() ([]byte, fsusage.View, error)

// filelatScraper turns the probe's cumulative per-mount series into pdata: the top N mounts and
// "other". Where the probe cannot load, start logs one line and every scrape reports nothing.
type filelatScraper struct {
	cfg     *Config
	mb      *metadata.MetricsBuilder
	logger  *zap.Logger
	version string
	open    opener
	mounts  mountReader
	now     func() time.Time

	probe  probe
	folder *folder
}

func newScraper(set scraper.Settings, cfg *Config, open opener, mounts mountReader, now func() time.Time) *filelatScraper {
	return &filelatScraper{
		cfg: cfg, mb: metadata.NewMetricsBuilder(metadata.MetricsBuilderConfig{Metrics: cfg.Metrics}, set),
		logger: set.Logger, version: set.BuildInfo.Version, open: open, mounts: mounts, now: now,
	}
}

// probePart is the part of the source's status (disk_health.source.status) its start sets.
const probePart = "probe"

// start loads and attaches the probe. It never fails the collector: where BPF cannot be used it logs
// exactly one line that names the cause and the fix (biolat.UnavailableError, as the latency source's),
// and the source then reports nothing while every other source runs on. The line is a WARN, not the
// latency source's INFO: this source is off by default, so it runs only because it was asked to.
func (s *filelatScraper) start(context.Context, component.Host) error {
	p, err := s.open(filelat.Options{MaxMounts: s.cfg.MaxMounts})
	if err != nil {
		fields := []zap.Field{zap.String("cause", biolat.CauseName(err))}
		var ue *biolat.UnavailableError
		if errors.As(err, &ue) && len(ue.Missing) > 0 {
			fields = append(fields, zap.Strings("missing", ue.Missing))
		}
		s.logger.Warn(err.Error()+". The filelat source reports nothing; every other source runs on.", fields...)
		s.cfg.Status.Set(probePart, emit.StateOff, emit.Reason(biolat.StatusReason(err)))
		return nil
	}
	s.probe = p
	s.folder = newFolder(s.cfg.TopN, pcommon.NewTimestampFromTime(p.Started()))
	s.logger.Info("File latency probe attached: every system call of the host now runs on the traced path.",
		zap.Int("max_mounts", s.cfg.MaxMounts), zap.Int("top_n", s.cfg.TopN))
	return nil
}

func (s *filelatScraper) shutdown(context.Context) error {
	if s.probe == nil {
		return nil
	}
	err := s.probe.Close()
	s.probe = nil
	return err
}

// scrape reads the probe, then the mount table: a mount made after the probe's read is in the table
// (no harm), one unmounted after it is not, and its series are forgotten at once.
func (s *filelatScraper) scrape(context.Context) (pmetric.Metrics, error) {
	if s.probe == nil {
		return pmetric.NewMetrics(), nil
	}
	ts := pcommon.NewTimestampFromTime(s.now())
	snap, err := s.probe.Collect()
	if err != nil {
		return pmetric.NewMetrics(), err
	}
	data, view, err := s.mounts()
	if err != nil {
		// Without the table no series can be named, and none may be forgotten.
		return pmetric.NewMetrics(), err
	}
	var errs scrapererror.ScrapeErrors
	mounts, perr := fsusage.ParseMountInfo(data)
	if perr != nil {
		errs.AddPartial(emit.CountErrors(perr), perr)
	}
	// Host paths (root_path removed in the collector's own view), and only the top mount of a path:
	// the ones under it are not in the table, so their calls go to other.
	mounts = fsusage.DropShadowed(fsusage.Translate(mounts, s.cfg.RootPath, view))
	points, gone := s.folder.fold(snap.Series, mounts, ts)
	if len(gone) > 0 {
		if err := s.probe.Forget(gone...); err != nil {
			errs.AddPartial(len(gone), err)
		}
	}
	return s.build(points, snap.Drops, ts), errs.Combine()
}

// build records the counters through the generated builder and the histogram by hand into its scope.
func (s *filelatScraper) build(points []point, drops filelat.Drops, ts pcommon.Timestamp) pmetric.Metrics {
	mb := s.mb
	for i := range points {
		p := &points[i]
		mb.Reset(metadata.WithStartTime(p.start))
		mp, opts := otherMount, []metadata.MetricAttributeOption(nil)
		if p.mount != nil {
			mp = mountPoint(p.mount)
			opts = []metadata.MetricAttributeOption{
				metadata.WithSystemFilesystemTypeMetricAttribute(p.mount.FSType),
				metadata.WithSystemDeviceMetricAttribute(p.mount.Source),
			}
		}
		switch p.op {
		case filelat.Read:
			mb.RecordDiskHealthFilesystemPageCachePagesDataPoint(ts, emit.Int(p.v.hits), mp, metadata.AttributePageCacheResultHit, opts...)
			mb.RecordDiskHealthFilesystemPageCachePagesDataPoint(ts, emit.Int(p.v.misses), mp, metadata.AttributePageCacheResultMiss, opts...)
			mb.RecordDiskHealthFilesystemIoDataPoint(ts, emit.Int(p.v.bytes), mp, metadata.AttributeFilelatDirectionRead, opts...)
		case filelat.Write:
			mb.RecordDiskHealthFilesystemIoDataPoint(ts, emit.Int(p.v.bytes), mp, metadata.AttributeFilelatDirectionWrite, opts...)
		}
	}
	mb.Reset(metadata.WithStartTime(s.folder.started))
	mb.RecordDiskHealthFilesystemOperationDroppedDataPoint(ts, emit.Int(drops.Full))
	md := mb.Emit()
	appendHistograms(emit.ScopeMetrics(md, conventions.SchemaURL, metadata.ScopeName, s.version), points, ts)
	return md
}
