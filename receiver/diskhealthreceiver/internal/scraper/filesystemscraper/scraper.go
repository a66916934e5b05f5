package filesystemscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filesystemscraper"

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
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
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/store"
)

// fsScraper reports df-style usage per mount. The mount table, the statfs deadlines and stuck-mount
// tracking, and the forecast live in fsusage; this wires them to the metrics builder.
type fsScraper struct {
	cfg    fsusage.Config
	logger *zap.Logger
	e      *metadata.Emitter
	// hm writes the hostmetrics-compatible set under conventions: hostmetrics (nil otherwise).
	hm  *hostmetrics.Emitter
	rb  *metadata.ResourceBuilder
	col *fsusage.Collector
	// Each mount's valid-UTF-8 mount point and resource, built again only when the mount changes.
	mounts emit.Cache[mountKey, mountCache]
	// tableErr names the bad lines of the mount table as last parsed (a *parseerr.Lines), nil for none.
	tableErr error
	// learners learn each domain's checkpoint saves; events buffers a scrape's log events for sink
	// (nil: logged only).
	learners *learners[fsusage.Domain]
	events   *emit.Events
	sink     consumer.Logs
	// kubelet knows the eviction thresholds; nodefs and imagefs are this scrape's kubelet
	// filesystems (nil off a node); byteLimits and inodeLimits are scratch.
	kubelet *kubelet
	// shm watches the pods' memory emptyDirs (nil until the first scrape, or when pod_shm is off);
	// shmCfg is the section it is opened from (nil: off).
	shm                     *podSHM
	shmCfg                  *Config
	nodefs, imagefs         *fsusage.Domain
	byteLimits, inodeLimits []limit
	// projects reads the project quotas (nil when project_quotas is off).
	projects *projectQuotas
	// writers names the domains' checkpoint writers (nil when checkpoint_writers is off); writerErr
	// is this scrape's problem naming them.
	writers   *checkpointWriters
	writerErr error
	// storage names the extension that keeps the learners across restarts (nil: none, nothing is
	// written); store is its client once started; id is this source's, the client's owner (named after
	// the receiver, so two receivers' clients are distinct).
	storage *component.ID
	store   *store.Background
	id      component.ID

	now func() time.Time
}

// hostmetricsOurs names this source's own metric of a hostmetrics name where the two differ: semconv
// does not define it, so ours is in disk_health.* and hostmetrics keeps its system.* name.
var hostmetricsOurs = map[string]string{"system.filesystem.inodes.usage": "disk_health.filesystem.inodes.usage"}

func newScraper(set scraper.Settings, cfg *Config, sink consumer.Logs, now func() time.Time) (*fsScraper, error) {
	filter, err := cfg.filter(section)
	if err != nil {
		return nil, err
	}
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
		now:    now,

		learners: newLearners(set.Logger, domainKey),
		storage:  cfg.Storage,
		id:       set.ID,
		kubelet:  newKubelet(set.Logger, cfg),
		events:   emit.NewEvents(metadata.ScopeName, set.BuildInfo.Version),
		sink:     sink,
		writers:  newCheckpointWriters(set.Logger, cfg),
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
	if cfg.PodSHM {
		s.shmCfg = cfg
	}
	if s.projects, err = newProjectQuotas(set.Logger, cfg); err != nil {
		return nil, err
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
	if s.shmCfg != nil {
		if s.shm, err = openPodSHM(s.logger, s.shmCfg, s.cfg.Prober); err != nil {
			return errors.Join(err, col.Close())
		}
	}
	s.col = col
	return nil
}

// start hands the domains' and project directories' learners the storage that keeps them across
// restarts, when one is configured. A name that is no storage extension is a configuration mistake,
// said here; the client itself is opened in the background: a storage that cannot be opened (a full or
// locked directory) or does not answer (a hung one) costs what is kept, with one WARN, never the start.
func (s *fsScraper) start(_ context.Context, host component.Host) error {
	var err error
	if s.store, err = store.Start(host, section+".storage", s.storage, s.id, "checkpoint", s.logger, "checkpoint state"); s.store == nil {
		return err
	}
	s.learners.store = s.store
	if s.projects != nil {
		s.projects.learners.store = s.store
	}
	return nil
}

func (s *fsScraper) shutdown(ctx context.Context) error {
	var err error
	if s.store != nil {
		// What was learned since the last save, and whether will_fail was said, for the next start.
		s.learners.persistAll()
		if s.projects != nil {
			s.projects.learners.persistAll()
		}
		err = s.store.Close(ctx)
	}
	if s.shm != nil {
		err = errors.Join(err, s.shm.close())
	}
	if s.col != nil {
		err = errors.Join(err, s.col.Close())
	}
	return err
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
	s.logger.Warn("filesystem statfs failed; reported in disk_health.filesystem.status", append(fields, zap.Error(c.Err))...)
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
	byDomain(results)
	if s.hm != nil {
		// hostmetrics' filesystem points have no resource attributes: one empty resource holds them all.
		s.hm.Resource(pcommon.NewResource())
	}
	s.nodefs, s.imagefs = nil, nil
	if s.kubelet.refresh() {
		s.nodefs, s.imagefs = s.kubelet.domains(results)
	}
	if s.projects != nil {
		s.projects.refresh()
	}
	s.writerErr = nil
	if s.writers != nil {
		// Before the learners: the interval ending now may hold the end of a save they report.
		s.writerErr = s.writers.collect(now)
	}
	for i := 0; i < len(results); {
		j := i + 1
		for j < len(results) && results[j].Domain.Major == results[i].Domain.Major && results[j].Domain.Minor == results[i].Domain.Minor {
			j++
		}
		group := results[i:j]
		s.e.Resource(s.mount(group[0].Mount).res)
		for k := range group {
			s.record(ts, &group[k])
			if s.hm != nil {
				s.recordHostmetrics(ts, &group[k])
			}
		}
		s.recordDomain(ctx, ts, now, group)
		i = j
	}
	if s.shm != nil {
		err = errors.Join(err, s.scrapePodSHM(ctx, ts, now))
	}
	s.mounts.Sweep()
	s.learners.sweep()
	if s.writers != nil {
		s.writers.sweep(func(d fsusage.Domain) bool { return s.learners.byKey[d] != nil })
	}
	if s.projects != nil {
		s.projects.sweep()
		s.projects.learners.sweep()
	}
	if serr := s.events.Send(ctx, s.logger, s.sink); serr != nil {
		err = errors.Join(err, serr)
	}
	// A mount that cannot be measured is a status, not a scrape error; only an unreadable mount table and
	// its bad lines are (the checkpoint storage logs its own problems, once). The last good table (the
	// good lines) is still measured: a partial error keeps those results.
	md := s.e.Emit()
	if s.hm != nil {
		s.hm.Emit().ResourceMetrics().MoveAndAppendTo(md.ResourceMetrics())
	}
	return md, partial(errors.Join(err, s.writerErr, s.tableErr), len(results))
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
	dev, mode, mp, typ := m.Source, m.Mode(), s.mount(m).mp, m.FSType
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

var fsStatuses = [...]struct {
	status fsusage.Status
	attr   metadata.AttributeDiskHealthFilesystemStatus
}{
	{fsusage.StatusOK, metadata.AttributeDiskHealthFilesystemStatusOk},
	{fsusage.StatusTimeout, metadata.AttributeDiskHealthFilesystemStatusTimeout},
	{fsusage.StatusPermission, metadata.AttributeDiskHealthFilesystemStatusPermission},
	{fsusage.StatusNotFound, metadata.AttributeDiskHealthFilesystemStatusNotFound},
	{fsusage.StatusIOError, metadata.AttributeDiskHealthFilesystemStatusIoError},
	{fsusage.StatusError, metadata.AttributeDiskHealthFilesystemStatusError},
}

// mountKey is what a mount's cached mount point and resource are built from.
type mountKey struct {
	m            *fsusage.Mount
	src          string
	major, minor uint32
}

type mountCache struct {
	mp, domain string
	res        pcommon.Resource
}

// mount returns m's valid-UTF-8 mount point and its resource, from the cache while m is unchanged.
func (s *fsScraper) mount(m *fsusage.Mount) mountCache {
	k := mountKey{m, m.MountPoint, m.Major, m.Minor}
	if c, ok := s.mounts.Get(k); ok {
		return c
	}
	s.rb.SetDiskHealthDiskMajorMinor(m.MajorMinor())
	// Mount points are bytes on Linux; attributes must be valid UTF-8 (and bounded).
	c := mountCache{mp: sanitize.String(sanitize.MountPoint, m.MountPoint), domain: m.MajorMinor(), res: s.rb.Emit()}
	s.mounts.Put(k, c)
	return c
}

// byDomain puts the results of one domain next to each other, domains in the order of their first
// mount, mounts in table order within a domain: each domain is one resource, its own points once.
func byDomain(results []fsusage.Result) {
	first := make(map[[2]uint32]int, len(results))
	for i := range results {
		k := [2]uint32{results[i].Domain.Major, results[i].Domain.Minor}
		if _, ok := first[k]; !ok {
			first[k] = i
		}
	}
	slices.SortStableFunc(results, func(a, b fsusage.Result) int {
		return cmp.Compare(first[[2]uint32{a.Domain.Major, a.Domain.Minor}], first[[2]uint32{b.Domain.Major, b.Domain.Minor}])
	})
}

// domainResult is the result that speaks for a domain: the mount of the filesystem's root when one
// answered (a bind of a directory under an XFS project quota reports the quota, not the filesystem),
// else the first that answered; nil when none did.
func domainResult(group []fsusage.Result) *fsusage.Result {
	var best *fsusage.Result
	for i := range group {
		r := &group[i]
		if r.Status != fsusage.StatusOK || r.Usage.Limit == 0 {
			continue
		}
		if r.Mount.Root == "/" {
			return r
		}
		if best == nil {
			best = r
		}
	}
	return best
}

// recordDomain appends the domain's own points, once whatever the number of its mounts, and what
// its checkpoint learner knows.
func (s *fsScraper) recordDomain(ctx context.Context, ts pcommon.Timestamp, now time.Time, group []fsusage.Result) {
	r := domainResult(group)
	if r == nil {
		s.learners.keep(group[0].Domain)
		return
	}
	e, m, u := s.e, r.Mount, &r.Usage
	c := s.mount(m)
	dev, dom, uuid, typ := m.Source, c.domain, r.Domain.UUID, m.FSType
	e.AppendDiskHealthFilesystemDomainLimitDataPoint(ts, emit.Int(u.Limit), dev, dom, uuid, typ)
	e.AppendDiskHealthFilesystemDomainMountsDataPoint(ts, int64(len(group)), dev, dom, uuid, typ)
	if r.Forecast.OK {
		e.AppendDiskHealthFilesystemDomainTimeToFullDataPoint(ts, r.Forecast.Seconds, dev, dom, uuid, typ)
	}
	e.AppendDiskHealthFilesystemDomainUsageDataPoint(ts, emit.Int(u.Used), dev, dom, uuid, typ, metadata.AttributeSystemFilesystemStateUsed)
	e.AppendDiskHealthFilesystemDomainUsageDataPoint(ts, emit.Int(u.Free), dev, dom, uuid, typ, metadata.AttributeSystemFilesystemStateFree)
	e.AppendDiskHealthFilesystemDomainUsageDataPoint(ts, emit.Int(u.Reserved), dev, dom, uuid, typ, metadata.AttributeSystemFilesystemStateReserved)

	s.byteLimits, s.inodeLimits = limits(u, &s.kubelet.th, s.nodefs != nil && *s.nodefs == r.Domain,
		s.imagefs != nil && *s.imagefs == r.Domain, s.byteLimits, s.inodeLimits)
	bind := binding(s.byteLimits)
	for _, l := range s.byteLimits {
		v := int64(0)
		if l.name == bind.name {
			v = 1
		}
		e.AppendDiskHealthFilesystemDomainBindingLimitDataPoint(ts, v, dev, dom, uuid, typ, l.name)
		e.AppendDiskHealthFilesystemDomainHeadroomDataPoint(ts, l.headroom, dev, dom, uuid, typ, l.name)
	}
	for _, l := range s.inodeLimits {
		e.AppendDiskHealthFilesystemDomainInodesHeadroomDataPoint(ts, l.headroom, dev, dom, uuid, typ, l.name)
	}
	s.recordProjects(ctx, ts, now, group, r, c, bind)
	s.recordCheckpoint(ctx, ts, now, r, c.res, c.mp, dom, bind)
}

// record appends one mount's points to the current resource (its domain's), metrics in metadata.yaml's
// (name) order.
func (s *fsScraper) record(ts pcommon.Timestamp, r *fsusage.Result) {
	m := r.Mount
	e := s.e
	c := s.mount(m)
	dev, dom, uuid, typ, mp := m.Source, c.domain, r.Domain.UUID, m.FSType, c.mp
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
	if ok {
		e.AppendSystemFilesystemLimitDataPoint(ts, emit.Int(u.Limit), dev, dom, uuid, mode, mp, typ)
	}
	for _, st := range fsStatuses {
		v := int64(0)
		if st.status == r.Status {
			v = 1
		}
		e.AppendDiskHealthFilesystemStatusDataPoint(ts, v, dev, dom, uuid, mp, typ, st.attr)
	}
	if ok && r.Forecast.OK {
		e.AppendDiskHealthFilesystemTimeToFullDataPoint(ts, r.Forecast.Seconds, dev, dom, uuid, mp, typ)
	}
	if ok {
		e.AppendSystemFilesystemUsageDataPoint(ts, emit.Int(u.Used), dev, dom, uuid, mode, mp, typ, used)
		e.AppendSystemFilesystemUsageDataPoint(ts, emit.Int(u.Free), dev, dom, uuid, mode, mp, typ, free)
		e.AppendSystemFilesystemUsageDataPoint(ts, emit.Int(u.Reserved), dev, dom, uuid, mode, mp, typ, metadata.AttributeSystemFilesystemStateReserved)
		if ratio, hasRatio := u.Utilization(); hasRatio {
			e.AppendSystemFilesystemUtilizationDataPoint(ts, ratio, dev, dom, uuid, mode, mp, typ)
		}
	}
}
