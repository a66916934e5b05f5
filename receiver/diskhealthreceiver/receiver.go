package diskhealthreceiver // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver"

import (
	"context"
	"errors"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/scraper"
	"go.opentelemetry.io/collector/scraper/scraperhelper"
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

// build creates the controllers of the enabled sources for the pipelines present.
func (r *diskHealthReceiver) build() error {
	cfg, set := r.cfg, r.set
	next := r.metrics
	if next == nil {
		next = dropMetrics
	}
	add := func(typ string, cc *scraperhelper.ControllerConfig, s scraper.Metrics) error {
		c, err := scraperhelper.NewMetricsController(cc, set, next,
			scraperhelper.AddMetricsScraper(component.MustNewType(typ), s))
		if err != nil {
			return err
		}
		r.controllers = append(r.controllers, c)
		return nil
	}
	if cfg.IOStat.Enabled && r.metrics != nil {
		io, err := newIOScraper(set, cfg)
		if err != nil {
			return err
		}
		s, err := scraper.NewMetrics(io.scrape, scraper.WithShutdown(io.shutdown))
		if err != nil {
			return err
		}
		if err := add("iostat", &cfg.ControllerConfig, s); err != nil {
			return err
		}
	}
	if cfg.Filesystem.Enabled && r.metrics != nil {
		fs := newFSScraper(set, cfg)
		s, err := scraper.NewMetrics(fs.scrape, scraper.WithShutdown(fs.shutdown))
		if err != nil {
			return err
		}
		if err := add("filesystem", &cfg.ControllerConfig, s); err != nil {
			return err
		}
	}
	if cfg.Pressure.Enabled {
		ps := newPressureScraper(set, cfg)
		s, err := scraper.NewMetrics(ps.scrape, scraper.WithStart(ps.start))
		if err != nil {
			return err
		}
		if err := add("pressure", &cfg.ControllerConfig, s); err != nil {
			return err
		}
	}
	if cfg.Cgroups.Enabled {
		cs, err := newCgroupScraper(set, cfg)
		if err != nil {
			return err
		}
		s, err := scraper.NewMetrics(cs.scrape, scraper.WithStart(cs.start), scraper.WithShutdown(cs.shutdown))
		if err != nil {
			return err
		}
		if err := add("cgroups", &cfg.ControllerConfig, s); err != nil {
			return err
		}
	}
	if cfg.SMART.Enabled {
		sm, err := newSMARTScraper(set, cfg, r.logs)
		if err != nil {
			return err
		}
		s, err := scraper.NewMetrics(sm.scrape, scraper.WithShutdown(sm.shutdown))
		if err != nil {
			return err
		}
		// SMART runs on its own interval; its reads bound themselves (smart.timeout per disk).
		cc := scraperhelper.ControllerConfig{CollectionInterval: cfg.SMART.Interval, InitialDelay: cfg.ControllerConfig.InitialDelay}
		if err := add("smart", &cc, s); err != nil {
			return err
		}
	}
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
