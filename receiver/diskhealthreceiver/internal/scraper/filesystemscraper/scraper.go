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
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filesystemscraper/internal/metadata"
)

// fsScraper reports df-style usage per mount. The mount table, the statfs deadlines and stuck-mount
// tracking, and the forecast live in fsusage; this wires them to the metrics builder.
type fsScraper struct {
	cfg    fsusage.Config
	logger *zap.Logger
	e      *metadata.Emitter
	rb     *metadata.ResourceBuilder
	col    *fsusage.Collector
	// Each mount's valid-UTF-8 mount point and resource, built again only when the mount changes.
	mounts emit.Cache[mountKey, mountCache]
	// tableErr names the bad lines of the mount table as last parsed (a *parseerr.Lines), nil for none.
	tableErr error

	now func() time.Time
}

func newScraper(set scraper.Settings, cfg *Config, now func() time.Time) (*fsScraper, error) {
	filter, err := cfg.filter(section)
	if err != nil {
		return nil, err
	}
	s := &fsScraper{
		logger: set.Logger,
		e:      metadata.NewEmitter(cfg.MetricsBuilderConfig, set),
		rb:     metadata.NewResourceBuilder(cfg.MetricsBuilderConfig.ResourceAttributes),
		now:    now,
	}
	fc := cfg
	s.cfg = fsusage.Config{
		RootPath:    cfg.RootPath,
		Filter:      filter,
		Dedupe:      duplicateModes[fc.Duplicates],
		RereadEvery: fc.MountTableRereadScrapes,
		Prober: fsusage.ProberConfig{
			Timeout:       fc.StatfsTimeout,
			RemoteTimeout: fc.RemoteStatfsTimeout,
			OnStateChange: s.logStateChange,
		},
		Forecast:      fsusage.ForecastConfig{Window: fc.ForecastWindow},
		OnTableReload: s.tableReloaded,
	}
	return s, nil
}

// ready opens the mount table on the first scrape that can, so a root_path without /proc is reported
// every scrape (naming the file) instead of failing the collector's start.
func (s *fsScraper) ready() error {
	if s.col != nil {
		return nil
	}
	col, err := fsusage.NewCollector(s.cfg)
	if err != nil {
		return err
	}
	s.col = col
	return nil
}

func (s *fsScraper) shutdown(context.Context) error {
	if s.col == nil {
		return nil
	}
	return s.col.Close()
}

// logStateChange writes one line per change of a mount's status, never one per scrape.
func (s *fsScraper) logStateChange(c fsusage.StateChange) {
	fields := []zap.Field{
		zap.String("mountpoint", sanitize.String(sanitize.MountPoint, c.Mount.MountPoint)), zap.String("device", c.Mount.Source),
		zap.String("from", c.From.String()), zap.String("to", c.To.String()),
	}
	if c.To == fsusage.StatusOK {
		s.logger.Info("filesystem answers statfs again", fields...)
		return
	}
	s.logger.Warn("filesystem statfs failed; reported in system.filesystem.status", append(fields, zap.Error(c.Err))...)
}

// tableReloaded keeps the bad lines of the table as parsed: they are a problem of every scrape of that
// table, said through the scrape's errors, so the receiver logs them once, and once for the stack source
// too, which reads the same table with the same parser (its error has the same words).
func (s *fsScraper) tableReloaded(r fsusage.TableReload) { s.tableErr = r.Err }

func (s *fsScraper) scrape(ctx context.Context) (pmetric.Metrics, error) {
	if err := s.ready(); err != nil {
		return pmetric.NewMetrics(), err
	}
	now := s.now()
	results, err := s.col.Collect(ctx, now)
	ts := pcommon.NewTimestampFromTime(now)
	for i := range results {
		s.record(ts, &results[i])
	}
	s.mounts.Sweep()
	// A mount that cannot be measured is a status, not a scrape error; only an unreadable mount table and
	// its bad lines are. The last good table (the good lines) is still measured: a partial error keeps
	// those results.
	return s.e.Emit(), partial(errors.Join(err, s.tableErr), len(results))
}

// partial makes err partial when there are results: the last good mount table was still measured.
func partial(err error, results int) error {
	if err != nil && results > 0 {
		return scrapererror.NewPartialScrapeError(err, 1)
	}
	return err
}

var fsStatuses = [...]struct {
	status fsusage.Status
	attr   metadata.AttributeSystemFilesystemStatus
}{
	{fsusage.StatusOK, metadata.AttributeSystemFilesystemStatusOk},
	{fsusage.StatusTimeout, metadata.AttributeSystemFilesystemStatusTimeout},
	{fsusage.StatusPermission, metadata.AttributeSystemFilesystemStatusPermission},
	{fsusage.StatusNotFound, metadata.AttributeSystemFilesystemStatusNotFound},
	{fsusage.StatusIOError, metadata.AttributeSystemFilesystemStatusIoError},
	{fsusage.StatusError, metadata.AttributeSystemFilesystemStatusError},
}

// mountKey is what a mount's cached mount point and resource are built from.
type mountKey struct {
	m            *fsusage.Mount
	src          string
	major, minor uint32
}

type mountCache struct {
	mp  string
	res pcommon.Resource
}

// mount returns m's valid-UTF-8 mount point and its resource, from the cache while m is unchanged.
func (s *fsScraper) mount(m *fsusage.Mount) mountCache {
	k := mountKey{m, m.MountPoint, m.Major, m.Minor}
	if c, ok := s.mounts.Get(k); ok {
		return c
	}
	s.rb.SetDiskMajorMinor(m.MajorMinor())
	// Mount points are bytes on Linux; attributes must be valid UTF-8 (and bounded).
	c := mountCache{mp: sanitize.String(sanitize.MountPoint, m.MountPoint), res: s.rb.Emit()}
	s.mounts.Put(k, c)
	return c
}

// record appends one mount's points, metrics in metadata.yaml's (name) order (which the emitter keeps
// without reordering).
func (s *fsScraper) record(ts pcommon.Timestamp, r *fsusage.Result) {
	m := r.Mount
	e := s.e
	c := s.mount(m)
	e.Resource(c.res)
	dev, typ, mp := m.Source, m.FSType, c.mp
	u := &r.Usage
	ok := r.Status == fsusage.StatusOK && u.Limit > 0
	mode := metadata.AttributeSystemFilesystemModeRw
	if r.ReadOnly {
		mode = metadata.AttributeSystemFilesystemModeRo
	}
	used, free := metadata.AttributeSystemFilesystemStateUsed, metadata.AttributeSystemFilesystemStateFree
	if ok && u.Inodes > 0 {
		e.AppendSystemFilesystemInodesUsageDataPoint(ts, emit.Int(u.InodesUsed), dev, mode, mp, typ, used)
		e.AppendSystemFilesystemInodesUsageDataPoint(ts, emit.Int(u.InodesFree), dev, mode, mp, typ, free)
		e.AppendSystemFilesystemInodesUtilizationDataPoint(ts, float64(u.InodesUsed)/float64(u.Inodes), dev, mode, mp, typ)
	}
	if ok {
		e.AppendSystemFilesystemLimitDataPoint(ts, emit.Int(u.Limit), dev, mode, mp, typ)
	}
	for _, st := range fsStatuses {
		v := int64(0)
		if st.status == r.Status {
			v = 1
		}
		e.AppendSystemFilesystemStatusDataPoint(ts, v, dev, mp, typ, st.attr)
	}
	if ok && r.Forecast.OK {
		e.AppendSystemFilesystemTimeToFullDataPoint(ts, r.Forecast.Seconds, dev, mp, typ)
	}
	if ok {
		e.AppendSystemFilesystemUsageDataPoint(ts, emit.Int(u.Used), dev, mode, mp, typ, used)
		e.AppendSystemFilesystemUsageDataPoint(ts, emit.Int(u.Free), dev, mode, mp, typ, free)
		e.AppendSystemFilesystemUsageDataPoint(ts, emit.Int(u.Reserved), dev, mode, mp, typ, metadata.AttributeSystemFilesystemStateReserved)
		if ratio, hasRatio := u.Utilization(); hasRatio {
			e.AppendSystemFilesystemUtilizationDataPoint(ts, ratio, dev, mode, mp, typ)
		}
	}
}
