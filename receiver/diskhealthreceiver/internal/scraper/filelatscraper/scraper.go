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
	ForgetCgroups(cgroupIDs ...uint64) error
	Close() error
}

// opener opens the probe (filelat.Open in production).
type opener func(filelat.Options) (probe, error)

// mountReader reads the host's mount table (fsusage.ReadHostMountInfo under root_path in production).
type mountReader func() ([]byte, fsusage.View, error)

// cgroupsReader finds the io/blkio hierarchy under root_path and returns what reads its cgroups by
// id (cgroupio.Detect and cgroupio.IDs in production).
type cgroupsReader func(root string) (func() (map[uint64]string, error), error)

// filelatScraper turns the probe's cumulative per-mount series into pdata: the top N mounts and
// "other". Where the probe cannot load, start logs one line and every scrape reports nothing.
type filelatScraper struct {
	cfg     *Config
	mb      *metadata.MetricsBuilder
	logger  *zap.Logger
	version string
	open    opener
	mounts  mountReader
	cgroups cgroupsReader
	now     func() time.Time

	probe  probe
	folder *folder
	// cgIDs reads the hierarchy's cgroups and cgFolder folds the per-cgroup series; both nil while
	// per_cgroup is off.
	cgIDs    func() (map[uint64]string, error)
	cgFolder *cgFolder
}

func newScraper(set scraper.Settings, cfg *Config, open opener, mounts mountReader, cgroups cgroupsReader, now func() time.Time) *filelatScraper {
	return &filelatScraper{
		cfg: cfg, mb: metadata.NewMetricsBuilder(metadata.MetricsBuilderConfig{Metrics: cfg.Metrics}, set),
		logger: set.Logger, version: set.BuildInfo.Version, open: open, mounts: mounts, cgroups: cgroups, now: now,
	}
}

// probePart and perCgroupPart are the parts of the source's status (disk_health.source.status) its
// start sets.
const (
	probePart     = "probe"
	perCgroupPart = "per_cgroup"
)

// start loads and attaches the probe. It never fails the collector: where BPF cannot be used it logs
// exactly one line that names the cause and the fix (biolat.UnavailableError, as the latency source's),
// and the source then reports nothing while every other source runs on. The line is a WARN, not the
// latency source's INFO: this source is off by default, so it runs only because it was asked to.
func (s *filelatScraper) start(context.Context, component.Host) error {
	opts := filelat.Options{MaxMounts: s.cfg.MaxMounts}
	if s.cfg.PerCgroup.Enabled {
		// Without the hierarchy no cgroup id can be named: the probe then keeps no per-cgroup table.
		ids, err := s.cgroups(s.cfg.RootPath)
		if err != nil {
			s.logger.Warn("Per-cgroup file latency is off: "+err.Error()+".", zap.String("cause", "no_cgroup_io"))
			s.cfg.Status.Set(perCgroupPart, emit.StateDegraded, emit.ReasonUnsupportedKernel)
		} else {
			s.cgIDs = ids
			opts.PerCgroup, opts.MaxCgroupSeries = true, s.cfg.PerCgroup.MaxSeries
		}
	}
	p, err := s.open(opts)
	if err != nil {
		s.cgIDs = nil
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
	if s.cgIDs != nil {
		s.cgFolder = newCgFolder(s.cfg.PerCgroup.TopN, pcommon.NewTimestampFromTime(p.Started()))
	}
	s.logger.Info("File latency probe attached: every system call of the host now runs on the traced path.",
		zap.Int("max_mounts", s.cfg.MaxMounts), zap.Int("top_n", s.cfg.TopN), zap.Bool("per_cgroup", s.cgFolder != nil))
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
	var cg []cgPoint
	if s.cgFolder != nil {
		cg = s.foldCgroups(&snap, points, gone, ts, &errs)
	}
	// After the per-cgroup fold: a gone mount's series are forgotten in every cgroup too.
	if len(gone) > 0 {
		if err := s.probe.Forget(gone...); err != nil {
			errs.AddPartial(len(gone), err)
		}
	}
	return s.build(points, cg, snap.Drops, ts), errs.Combine()
}

// foldCgroups reads the hierarchy's cgroups (after the probe, so a cgroup the snapshot has and the
// hierarchy does not was removed) and folds the per-cgroup series against the mounts shown at this
// scrape; it forgets the removed cgroups in the probe. Where the hierarchy cannot be read this scrape
// has no per-cgroup series: that costs the per-cgroup points, not the per-mount ones.
func (s *filelatScraper) foldCgroups(snap *filelat.Snapshot, points []point, gone []uint32, ts pcommon.Timestamp, errs *scrapererror.ScrapeErrors) []cgPoint {
	ids, err := s.cgIDs()
	if err != nil {
		s.cgFolder.forgetMounts(gone)
		errs.AddPartial(1, err)
		return nil
	}
	shown := map[uint32]*fsusage.Mount{}
	for i := range points {
		if m := points[i].mount; m != nil {
			shown[uint32(m.ID)] = m
		}
	}
	cg, removed := s.cgFolder.fold(snap.Cgroups, ids, shown, gone, ts)
	if len(removed) > 0 {
		if err := s.probe.ForgetCgroups(removed...); err != nil {
			errs.AddPartial(len(removed), err)
		}
	}
	return cg
}

// build records the counters through the generated builder and the histogram by hand into its scope.
func (s *filelatScraper) build(points []point, cg []cgPoint, drops filelat.Drops, ts pcommon.Timestamp) pmetric.Metrics {
	mb := s.mb
	for i := range points {
		p := &points[i]
		mb.Reset(metadata.WithStartTime(p.start))
		mp, opts := mountOptions(p.mount)
		switch p.op {
		case filelat.Read:
			mb.RecordDiskHealthFilesystemPageCachePagesDataPoint(ts, emit.Int(p.v.hits), mp, metadata.AttributePageCacheResultHit, opts...)
			mb.RecordDiskHealthFilesystemPageCachePagesDataPoint(ts, emit.Int(p.v.misses), mp, metadata.AttributePageCacheResultMiss, opts...)
			mb.RecordDiskHealthFilesystemIoDataPoint(ts, emit.Int(p.v.bytes), mp, metadata.AttributeFilelatDirectionRead, opts...)
		case filelat.Write:
			mb.RecordDiskHealthFilesystemIoDataPoint(ts, emit.Int(p.v.bytes), mp, metadata.AttributeFilelatDirectionWrite, opts...)
		}
	}
	for i := range cg {
		p := &cg[i]
		if p.op != filelat.Read {
			continue
		}
		mb.Reset(metadata.WithStartTime(p.start))
		mp, opts := mountOptions(p.mount)
		opts = append(opts, emit.CgroupOptions(p.path, metadata.WithK8sPodUIDMetricAttribute, metadata.WithContainerIDMetricAttribute)...)
		mb.RecordDiskHealthContainerFilesystemPageCachePagesDataPoint(ts, emit.Int(p.v.hits), p.path, mp, metadata.AttributePageCacheResultHit, opts...)
		mb.RecordDiskHealthContainerFilesystemPageCachePagesDataPoint(ts, emit.Int(p.v.misses), p.path, mp, metadata.AttributePageCacheResultMiss, opts...)
	}
	mb.Reset(metadata.WithStartTime(s.folder.started))
	mb.RecordDiskHealthFilesystemOperationDroppedDataPoint(ts, emit.Int(drops.Full))
	if s.cgFolder != nil {
		mb.RecordDiskHealthContainerFilesystemOperationDroppedDataPoint(ts, emit.Int(drops.CgroupsFull))
	}
	md := mb.Emit()
	ms := emit.ScopeMetrics(md, conventions.SchemaURL, metadata.ScopeName, s.version)
	appendHistograms(ms, points, ts)
	appendCgroupHistograms(ms, cg, ts)
	return md
}

// mountOptions are a point's system.filesystem.mountpoint and the options for its type and device
// (none for "other").
func mountOptions(m *fsusage.Mount) (string, []metadata.MetricAttributeOption) {
	if m == nil {
		return otherMount, nil
	}
	return mountPoint(m), []metadata.MetricAttributeOption{
		metadata.WithSystemFilesystemTypeMetricAttribute(m.FSType),
		metadata.WithSystemDeviceMetricAttribute(m.Source),
	}
}
