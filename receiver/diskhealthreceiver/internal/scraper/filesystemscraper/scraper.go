package filesystemscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filesystemscraper"

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper"
	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.uber.org/zap"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/sanitize"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filesystemscraper/internal/hostmetrics"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filesystemscraper/internal/metadata"
)

// fsScraper reports df-style usage per mount: df, df -i, each mount's statfs status and its time to
// full. The mount table, the statfs deadlines and stuck-mount tracking, and the forecast live in fsusage,
// read through the receiver's one mount snapshot (the capacity source reads the same); this wires them
// to the metrics builder.
type fsScraper struct {
	// cfg is the configuration of the source's own snapshot when the receiver gives it none (its tests).
	cfg    fsusage.Config
	logger *zap.Logger
	e      *metadata.Emitter
	// hm writes the hostmetrics-compatible set under conventions: hostmetrics (nil otherwise).
	hm   *hostmetrics.Emitter
	rb   *metadata.ResourceBuilder
	snap *fsusage.Reader
	// Each mount's valid-UTF-8 mount point and resource, built again only when the mount changes.
	mounts *emit.Mounts
	// states emits disk_health.filesystem.status by the mount's series.
	states *emit.States[statusKey, metadata.AttributeDiskHealthFilesystemStatus]

	now func() time.Time
}

// hostmetricsOurs names this source's own metric of a hostmetrics name where the two differ: semconv
// does not define it, so ours is in disk_health.* and hostmetrics keeps its system.* name.
var hostmetricsOurs = map[string]string{"system.filesystem.inodes.usage": "disk_health.filesystem.inodes.usage"}

func newScraper(set scraper.Settings, cfg *Config, now func() time.Time) (*fsScraper, error) {
	mbc := cfg.MetricsBuilderConfig
	hm, err := emit.Hostmetrics(cfg.Conventions, &mbc.Metrics, func() *hostmetrics.Emitter { return hostmetrics.NewEmitter(cfg.Hostmetrics, set) }, hostmetricsOurs)
	if err != nil {
		return nil, err
	}
	s := &fsScraper{
		logger: set.Logger,
		e:      metadata.NewEmitter(mbc, set),
		hm:     hm,
		rb:     metadata.NewResourceBuilder(mbc.ResourceAttributes),
		snap:   cfg.Mounts,
		states: emit.NewStates[statusKey, metadata.AttributeDiskHealthFilesystemStatus](),
		now:    now,
	}
	s.mounts = emit.NewMounts(func(majorMinor string) pcommon.Resource {
		s.rb.SetDiskHealthDiskMajorMinor(majorMinor)
		return s.rb.Emit()
	})
	if s.cfg, err = cfg.CollectorConfig(section, cfg.RootPath, LogStateChange(set.Logger)); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *fsScraper) shutdown(context.Context) error {
	if s.snap == nil {
		return nil
	}
	return s.snap.Close()
}

// LogStateChange returns the mount snapshot's state-change callback: one line per change of a mount's
// status, never one per scrape.
func LogStateChange(logger *zap.Logger) func(fsusage.StateChange) {
	return func(c fsusage.StateChange) { logStateChange(logger, c) }
}

func logStateChange(logger *zap.Logger, c fsusage.StateChange) {
	fields := []zap.Field{
		zap.String("mountpoint", sanitize.String(sanitize.MountPoint, c.Mount.MountPoint)), zap.String("device", c.Mount.Source),
		zap.String("from", c.From.String()), zap.String("to", c.To.String()),
	}
	if c.To == fsusage.StatusOK {
		logger.Info("filesystem answers statfs again", fields...)
		return
	}
	logger.Warn("filesystem statfs failed; reported in disk_health.filesystem.status", append(fields, zap.Error(c.Err))...)
}

func (s *fsScraper) scrape(ctx context.Context) (pmetric.Metrics, error) {
	if s.snap == nil {
		s.snap = fsusage.NewShared(s.cfg, s.now).Reader(0)
	}
	var tableErr error
	results := 0
	err := s.snap.Use(ctx, func(snap *fsusage.Snapshot) error {
		ts := pcommon.NewTimestampFromTime(snap.At)
		if s.hm != nil {
			// hostmetrics' filesystem points have no resource attributes: one empty resource holds them all.
			s.hm.Resource(pcommon.NewResource())
		}
		for group := range snap.Domains {
			s.e.Resource(s.mount(group[0].Mount).Res)
			for k := range group {
				s.record(ts, &group[k])
				if s.hm != nil {
					s.recordHostmetrics(ts, &group[k])
				}
			}
		}
		tableErr, results = snap.Err, len(snap.Results)
		return nil
	})
	s.mounts.Sweep()
	s.states.EndScrape()
	// A mount that cannot be measured is a status, not a scrape error; only an unreadable mount table and
	// its bad lines are, said by the source that owns the snapshot. The last good table (the good lines)
	// is still measured: a partial error keeps those results.
	md := s.e.Emit()
	if s.hm != nil {
		s.hm.Emit().ResourceMetrics().MoveAndAppendTo(md.ResourceMetrics())
	}
	return md, partial(s.snap.Own(errors.Join(err, tableErr)), results)
}

// recordHostmetrics appends one mount's points of the hostmetrics-compatible set: hostmetrics'
// filesystem scraper's metrics from the same statfs, with its names, attributes and units. Like
// hostmetrics it reports every mount that answered, inodes included where the filesystem counts none.
func (s *fsScraper) recordHostmetrics(ts pcommon.Timestamp, r *fsusage.Result) {
	u := &r.Usage
	if r.Status != fsusage.StatusOK || u.Limit == 0 {
		return
	}
	e, m := s.hm, r.Mount
	dev, mode, mp, typ := m.Source, m.Mode(), s.mount(m).MP, m.FSType
	used, free := hostmetrics.AttributeStateUsed, hostmetrics.AttributeStateFree
	e.AppendSystemFilesystemInodesUsageDataPoint(ts, emit.Int(u.InodesUsed), dev, mode, mp, typ, used)
	e.AppendSystemFilesystemInodesUsageDataPoint(ts, emit.Int(u.InodesFree), dev, mode, mp, typ, free)
	e.AppendSystemFilesystemUsageDataPoint(ts, emit.Int(u.Used), dev, mode, mp, typ, used)
	e.AppendSystemFilesystemUsageDataPoint(ts, emit.Int(u.Free), dev, mode, mp, typ, free)
	e.AppendSystemFilesystemUsageDataPoint(ts, emit.Int(u.Reserved), dev, mode, mp, typ, hostmetrics.AttributeStateReserved)
	if ratio, ok := u.Utilization(); ok {
		e.AppendSystemFilesystemUtilizationDataPoint(ts, ratio, dev, mode, mp, typ)
	}
}

// partial makes err partial when there are results: the last good mount table was still measured.
func partial(err error, results int) error {
	if err != nil && results > 0 {
		return scrapererror.NewPartialScrapeError(err, 1)
	}
	return err
}

var fsStatuses = [...]metadata.AttributeDiskHealthFilesystemStatus{
	fsusage.StatusOK:         metadata.AttributeDiskHealthFilesystemStatusOk,
	fsusage.StatusTimeout:    metadata.AttributeDiskHealthFilesystemStatusTimeout,
	fsusage.StatusPermission: metadata.AttributeDiskHealthFilesystemStatusPermission,
	fsusage.StatusNotFound:   metadata.AttributeDiskHealthFilesystemStatusNotFound,
	fsusage.StatusIOError:    metadata.AttributeDiskHealthFilesystemStatusIoError,
	fsusage.StatusError:      metadata.AttributeDiskHealthFilesystemStatusError,
}

// statusKey is a mount's disk_health.filesystem.status series but for the state: the mount as its
// points name it, so a mount read again from a new table is the same key.
type statusKey struct{ dev, dom, uuid, mp, typ string }

// mount returns m's valid-UTF-8 mount point, its domain and its resource, from the cache while m is
// unchanged.
func (s *fsScraper) mount(m *fsusage.Mount) emit.MountResource { return s.mounts.Get(m) }

// record appends one mount's points to the current resource (its domain's), metrics in metadata.yaml's
// (name) order.
func (s *fsScraper) record(ts pcommon.Timestamp, r *fsusage.Result) {
	m := r.Mount
	e := s.e
	c := s.mount(m)
	dev, dom, uuid, typ, mp := m.Source, c.Domain, r.Domain.UUID, m.FSType, c.MP
	u := &r.Usage
	ok := r.Status == fsusage.StatusOK && u.Limit > 0
	mode := metadata.AttributeSystemFilesystemModeRw
	if r.ReadOnly {
		mode = metadata.AttributeSystemFilesystemModeRo
	}
	used, free := metadata.AttributeSystemFilesystemStateUsed, metadata.AttributeSystemFilesystemStateFree
	if ok && u.Inodes > 0 {
		e.AppendDiskHealthFilesystemInodesUsageDataPoint(ts, emit.Int(u.InodesUsed), dev, dom, uuid, mode, mp, typ, used)
		e.AppendDiskHealthFilesystemInodesUsageDataPoint(ts, emit.Int(u.InodesFree), dev, dom, uuid, mode, mp, typ, free)
		e.AppendDiskHealthFilesystemInodesUtilizationDataPoint(ts, float64(u.InodesUsed)/float64(u.Inodes), dev, dom, uuid, mode, mp, typ)
	}
	s.states.Emit(statusKey{dev, dom, uuid, mp, typ}, func(st metadata.AttributeDiskHealthFilesystemStatus, v int64) {
		e.AppendDiskHealthFilesystemStatusDataPoint(ts, v, dev, dom, uuid, mp, typ, st)
	}, fsStatuses[r.Status])
	if ok && r.Forecast.OK {
		e.AppendDiskHealthFilesystemTimeToFullDataPoint(ts, r.Forecast.Seconds, dev, dom, uuid, mp, typ)
	}
	if ok {
		e.AppendSystemFilesystemLimitDataPoint(ts, emit.Int(u.Limit), dev, dom, uuid, mode, mp, typ)
		e.AppendSystemFilesystemUsageDataPoint(ts, emit.Int(u.Used), dev, dom, uuid, mode, mp, typ, used)
		e.AppendSystemFilesystemUsageDataPoint(ts, emit.Int(u.Free), dev, dom, uuid, mode, mp, typ, free)
		e.AppendSystemFilesystemUsageDataPoint(ts, emit.Int(u.Reserved), dev, dom, uuid, mode, mp, typ, metadata.AttributeSystemFilesystemStateReserved)
		if ratio, hasRatio := u.Utilization(); hasRatio {
			e.AppendSystemFilesystemUtilizationDataPoint(ts, ratio, dev, dom, uuid, mode, mp, typ)
		}
	}
}
