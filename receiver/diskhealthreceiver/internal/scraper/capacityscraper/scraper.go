package capacityscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/capacityscraper"

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper"
	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.uber.org/zap"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/capacityscraper/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/store"
)

// capScraper reports what can still be written per capacity domain, from the receiver's mount snapshot:
// the limits and the binding one, pods' /dev/shm, project quotas, and the checkpoint learners.
type capScraper struct {
	// cfg is the configuration of the source's own mount snapshot when the receiver gives it none (its
	// tests); its prober settings also bound the statfs of pods' memory volumes.
	cfg    fsusage.Config
	logger *zap.Logger
	e      *metadata.Emitter
	rb     *metadata.ResourceBuilder
	snap   *fsusage.Reader
	// Each mount's valid-UTF-8 mount point and resource, built again only when the mount changes.
	mounts *emit.Mounts
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
	// bindStates says which limit binds each domain: the current one, and the one left once.
	bindStates *emit.States[fsusage.Domain, metadata.AttributeDiskHealthFilesystemLimitName]
	// freeHeadroom says whether the headroom has its free_blocks point: df's Avail, which the default
	// carries as the mounts' system.filesystem.usage{state=free}, so only with the domain's own usage.
	freeHeadroom bool
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

func newScraper(set scraper.Settings, cfg *Config, sink consumer.Logs, now func() time.Time) (*capScraper, error) {
	mbc := cfg.MetricsBuilderConfig
	s := &capScraper{
		logger: set.Logger,
		e:      metadata.NewEmitter(mbc, set),
		rb:     metadata.NewResourceBuilder(mbc.ResourceAttributes),
		snap:   cfg.Mounts,
		now:    now,

		freeHeadroom: mbc.Metrics.DiskHealthFilesystemDomainUsage.Enabled,
		learners:     newLearners(set.Logger, domainKey),
		bindStates:   emit.NewStates[fsusage.Domain, metadata.AttributeDiskHealthFilesystemLimitName](),
		storage:      cfg.Storage,
		id:           set.ID,
		kubelet:      newKubelet(set.Logger, cfg),
		events:       emit.NewEvents(metadata.ScopeName, set.BuildInfo.Version),
		sink:         sink,
		writers:      newCheckpointWriters(set.Logger, cfg),
	}
	s.mounts = emit.NewMounts(func(majorMinor string) pcommon.Resource {
		s.rb.SetDiskHealthDiskMajorMinor(majorMinor)
		return s.rb.Emit()
	})
	var err error
	// The filesystem section's key: a bad filter there is said under it (it is copied in from there).
	if s.cfg, err = cfg.CollectorConfig("filesystem", cfg.RootPath, nil); err != nil {
		return nil, err
	}
	if cfg.PodSHM {
		s.shmCfg = cfg
	}
	if s.projects, err = newProjectQuotas(set.Logger, cfg); err != nil {
		return nil, err
	}
	return s, nil
}

// ready opens the pods' /dev/shm watch on the first scrape that can, so a root_path without /proc is
// reported every scrape (naming the file) instead of failing the collector's start.
func (s *capScraper) ready() error {
	if s.snap == nil {
		s.snap = fsusage.NewShared(s.cfg, s.now).Reader(0)
	}
	if s.shmCfg == nil || s.shm != nil {
		return nil
	}
	var err error
	s.shm, err = openPodSHM(s.logger, s.shmCfg, s.cfg.Prober)
	return err
}

// start hands the domains' and project directories' learners the storage that keeps them across
// restarts, when one is configured. A name that is no storage extension is a configuration mistake,
// said here; the client itself is opened in the background: a storage that cannot be opened (a full or
// locked directory) or does not answer (a hung one) costs what is kept, with one WARN, never the start.
func (s *capScraper) start(_ context.Context, host component.Host) error {
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

func (s *capScraper) shutdown(ctx context.Context) error {
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
	if s.snap != nil {
		err = errors.Join(err, s.snap.Close())
	}
	return err
}

func (s *capScraper) scrape(ctx context.Context) (pmetric.Metrics, error) {
	if err := s.ready(); err != nil {
		return pmetric.NewMetrics(), err
	}
	// The snapshot is kept, not worked on under the lock: quota reads and the learners would hold the
	// filesystem source up.
	var snap fsusage.Snapshot
	if err := s.snap.Use(ctx, func(sn *fsusage.Snapshot) error { snap = *sn; return nil }); err != nil {
		return pmetric.NewMetrics(), s.snap.Own(err)
	}
	now := snap.At
	ts := pcommon.NewTimestampFromTime(now)
	s.nodefs, s.imagefs = nil, nil
	if s.kubelet.refresh() {
		s.nodefs, s.imagefs = s.kubelet.domains(snap.Results)
	}
	if s.projects != nil {
		s.projects.refresh()
	}
	s.writerErr = nil
	if s.writers != nil {
		// Before the learners: the interval ending now may hold the end of a save they report.
		s.writerErr = s.writers.collect(now)
	}
	for group := range snap.Domains {
		s.recordDomain(ctx, ts, now, group)
	}
	s.bindStates.EndScrape()
	var err error
	if s.shm != nil {
		err = s.scrapePodSHM(ctx, ts, now)
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
	// The mount table's problems are said by the source that owns the snapshot; the checkpoint storage
	// logs its own problems, once.
	err = errors.Join(err, s.writerErr, s.snap.Own(snap.Err))
	if err != nil && len(snap.Results) > 0 {
		err = scrapererror.NewPartialScrapeError(err, 1)
	}
	return s.e.Emit(), err
}

// mount returns m's valid-UTF-8 mount point, its domain and its resource, from the cache while m is
// unchanged.
func (s *capScraper) mount(m *fsusage.Mount) emit.MountResource { return s.mounts.Get(m) }

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
func (s *capScraper) recordDomain(ctx context.Context, ts pcommon.Timestamp, now time.Time, group []fsusage.Result) {
	r := domainResult(group)
	if r == nil {
		s.learners.keep(group[0].Domain)
		return
	}
	e, m, u := s.e, r.Mount, &r.Usage
	c := s.mount(m)
	// The domain's resource is its mounts' (the filesystem source's for the same mounts). Every mount of
	// the group has the domain's major:minor, the resource's one attribute, so the speaking mount's
	// resource is it: no second cache lookup per domain per scrape.
	e.Resource(c.Res)
	dev, dom, uuid, typ := m.Source, c.Domain, r.Domain.UUID, m.FSType
	// Metrics in metadata.yaml's (name) order, so that the emitter has no resource to sort.
	s.byteLimits, s.inodeLimits = limits(u, &s.kubelet.th, s.nodefs != nil && *s.nodefs == r.Domain,
		s.imagefs != nil && *s.imagefs == r.Domain, s.byteLimits, s.inodeLimits)
	bind := binding(s.byteLimits)
	// The limit that binds now at 1, and the one it took over from at 0 once: not a 0 for every other
	// limit at every scrape, which the conventions prescribe for no such set (emit.States).
	s.bindStates.Emit(r.Domain, func(name metadata.AttributeDiskHealthFilesystemLimitName, v int64) {
		e.AppendDiskHealthFilesystemDomainBindingLimitDataPoint(ts, v, dev, dom, uuid, typ, name)
	}, bind.name)
	for _, l := range s.byteLimits {
		if s.freeHeadroom || l.name != metadata.AttributeDiskHealthFilesystemLimitNameFreeBlocks {
			e.AppendDiskHealthFilesystemDomainHeadroomDataPoint(ts, l.headroom, dev, dom, uuid, typ, l.name)
		}
	}
	for _, l := range s.inodeLimits {
		e.AppendDiskHealthFilesystemDomainInodesHeadroomDataPoint(ts, l.headroom, dev, dom, uuid, typ, l.name)
	}
	e.AppendDiskHealthFilesystemDomainLimitDataPoint(ts, emit.Int(u.Limit), dev, dom, uuid, typ)
	e.AppendDiskHealthFilesystemDomainMountsDataPoint(ts, int64(len(group)), dev, dom, uuid, typ)
	if r.Forecast.OK {
		e.AppendDiskHealthFilesystemDomainTimeToFullDataPoint(ts, r.Forecast.Seconds, dev, dom, uuid, typ)
	}
	e.AppendDiskHealthFilesystemDomainUsageDataPoint(ts, emit.Int(u.Used), dev, dom, uuid, typ, metadata.AttributeSystemFilesystemStateUsed)
	e.AppendDiskHealthFilesystemDomainUsageDataPoint(ts, emit.Int(u.Free), dev, dom, uuid, typ, metadata.AttributeSystemFilesystemStateFree)
	e.AppendDiskHealthFilesystemDomainUsageDataPoint(ts, emit.Int(u.Reserved), dev, dom, uuid, typ, metadata.AttributeSystemFilesystemStateReserved)
	s.recordProjects(ctx, ts, now, group, r, c, bind)
	s.recordCheckpoint(ctx, ts, now, r, c.Res, c.MP, dom, bind)
}
