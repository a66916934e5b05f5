package diskhealthreceiver // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver"

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/scraper"
	"go.opentelemetry.io/collector/scraper/scraperhelper"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/diskstats"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/sanitize"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/signs"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/tick"
)

// diskHealthReceiver runs one scraper controller per data source, so a slow source (a hung mount, a
// sleeping disk) never delays another's tick, and each source can keep its own interval. One instance
// serves both the metrics and the logs pipeline of a configuration (the logs get the SMART health
// events), so the disks are read once whichever pipelines ask.
type diskHealthReceiver struct {
	set receiver.Settings
	cfg *Config

	metrics consumer.Metrics // nil without a metrics pipeline
	logs    consumer.Logs    // nil without a logs pipeline

	// notes logs the strings the sources' inputs needed sanitising, once per kind for all sources.
	notes sanitize.Notes
	// problems are the sources' scrape problems, logged once for all the sources that meet one.
	problems emit.Problems

	// openDiskstats opens /proc/diskstats for the shared snapshot; nil: os.Open (tests count reads).
	openDiskstats func(string) (diskstats.File, error)
	// statfs replaces unix.Statfs for the shared mount snapshot; nil: unix.Statfs (tests count calls).
	statfs fsusage.StatfsFunc

	mu          sync.Mutex
	started     bool
	stopped     bool
	controllers []receiver.Metrics
}

// sharedReceivers hands out one receiver per configuration, as the collector creates a component once
// per pipeline type.
type sharedReceivers struct {
	mu sync.Mutex
	m  map[*Config]*diskHealthReceiver
}

var receivers = &sharedReceivers{m: map[*Config]*diskHealthReceiver{}}

func (s *sharedReceivers) get(set receiver.Settings, cfg *Config) *diskHealthReceiver {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.m[cfg]
	if r == nil {
		r = &diskHealthReceiver{set: set, cfg: cfg}
		s.m[cfg] = r
	}
	return r
}

func (s *sharedReceivers) remove(cfg *Config, r *diskHealthReceiver) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[cfg] == r {
		delete(s.m, cfg)
	}
}

// dropMetrics stands in for the metrics pipeline when only logs are configured: the SMART source still
// reads the disks to produce its events.
var dropMetrics, _ = consumer.NewMetrics(func(context.Context, pmetric.Metrics) error { return nil })

// build creates one controller per enabled source, from the one table of sources. A source that
// only emits metrics runs only with a metrics pipeline; a source with events (SMART) also for a logs
// pipeline alone, whose metrics are then dropped.
func (r *diskHealthReceiver) build() error {
	var next consumer.Metrics = &refusals{next: r.metrics, logger: r.set.Logger}
	if r.metrics == nil {
		next = dropMetrics
	}
	board := signs.New()
	snaps := tick.New(r.cfg.rootPath(), time.Now, r.openDiskstats)
	mounts, err := newMounts(r.cfg.sections, r.cfg.rootPath(), r.set.Logger, r.statfs)
	if err != nil {
		return err
	}
	var statuses []sourceStatus
	for _, src := range r.cfg.sources(r.logs, board, snaps, mounts) {
		st := emit.NewStatus()
		*field(src.cfg, statusField).(**emit.Status) = st
		statuses = append(statuses, sourceStatus{name: src.name, running: src.enabled, status: st})
		if !src.enabled || (r.metrics == nil && !src.events) {
			continue
		}
		cc := r.cfg.ControllerConfig
		if src.interval > 0 {
			cc.CollectionInterval, cc.Timeout = src.interval, 0
		}
		c, err := scraperhelper.NewMetricsController(&cc, r.set, next, scraperhelper.AddFactoryWithConfig(reported(src.factory, r.set.ID, &r.notes, &r.problems, r.cfg.MaxPointsPerScrape, st), src.cfg))
		if err != nil {
			return err
		}
		r.controllers = append(r.controllers, c)
	}
	if r.metrics == nil || !r.cfg.status.Metrics.DiskHealthSourceStatus.Enabled {
		// Switched off, it has no controller: one would send an empty batch every interval.
		return nil
	}
	// Last, so that every source's start has said what of it cannot run before the first status.
	c, err := scraperhelper.NewMetricsController(&r.cfg.ControllerConfig, r.set, next,
		scraperhelper.AddMetricsScraper(statusType, statusScraper(r.set, r.cfg.status, statuses)))
	if err != nil {
		return err
	}
	r.controllers = append(r.controllers, c)
	return nil
}

func (r *diskHealthReceiver) Start(ctx context.Context, host component.Host) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		return nil
	}
	r.started = true
	if err := r.build(); err != nil {
		return err
	}
	for i, c := range r.controllers {
		if err := c.Start(ctx, host); err != nil {
			// Stop what already runs so a failed start leaks nothing.
			for _, started := range r.controllers[:i] {
				_ = started.Shutdown(ctx)
			}
			r.controllers = nil
			return err
		}
	}
	return nil
}

func (r *diskHealthReceiver) Shutdown(ctx context.Context) error {
	receivers.remove(r.cfg, r)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return nil
	}
	r.stopped = true
	var errs []error
	for _, c := range r.controllers {
		errs = append(errs, c.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

// reported wraps a source's factory so that its scrape problems are logged once per change
// (emit.Reporter) instead of at ERROR by the controller every scrape; the scrape's output, partial or
// not, still goes on; a problem several sources meet is logged once. After each scrape, notes logs what
// input strings had to be sanitised (once per kind), and the scrape's data points are capped at
// maxPoints (max_points_per_scrape, emit.PointBound); whether it had a problem goes into st
// (disk_health.source.status). Each scraper is named after its receiver rid
// (filesystem/gpu for disk_health/gpu): its ID is the owner of its storage clients, and scraperhelper
// names it after its type alone, so two disk_health receivers on one storage extension opened the same
// client (file_storage: the same file, which the first one locks).
func reported(f scraper.Factory, rid component.ID, notes *sanitize.Notes, problems *emit.Problems, maxPoints int, st *emit.Status) scraper.Factory {
	return scraper.NewFactory(f.Type(), f.CreateDefaultConfig, scraper.WithMetrics(
		func(ctx context.Context, set scraper.Settings, cfg component.Config) (scraper.Metrics, error) {
			set.ID = component.NewIDWithName(f.Type(), rid.Name())
			s, err := f.CreateMetrics(ctx, set, cfg)
			if err != nil {
				return nil, err
			}
			rep := emit.NewReporter(set.Logger, problems)
			bound := emit.NewPointBound(set.Logger, maxPointsKey, maxPoints)
			return scraper.NewMetrics(func(ctx context.Context) (pmetric.Metrics, error) {
				md, err := s.ScrapeMetrics(ctx)
				recordScrape(st, err)
				notes.Log(set.Logger)
				return bound.Apply(md), rep.Report(err)
			}, scraper.WithStart(s.Start), scraper.WithShutdown(s.Shutdown))
		}, f.MetricsStability()))
}
