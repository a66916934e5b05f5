package diskhealthreceiver // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver"

import (
	"context"
	"errors"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/scraper"
	"go.opentelemetry.io/collector/scraper/scraperhelper"
)

// diskHealthReceiver runs one scraper controller per data source, so a slow source (a hung mount, a
// sleeping disk) never delays another's tick, and each source can keep its own interval.
type diskHealthReceiver struct {
	controllers []receiver.Metrics
}

func newReceiver(set receiver.Settings, cfg *Config, next consumer.Metrics) (*diskHealthReceiver, error) {
	r := &diskHealthReceiver{}
	add := func(typ string, cc *scraperhelper.ControllerConfig, s scraper.Metrics) error {
		c, err := scraperhelper.NewMetricsController(cc, set, next,
			scraperhelper.AddMetricsScraper(component.MustNewType(typ), s))
		if err != nil {
			return err
		}
		r.controllers = append(r.controllers, c)
		return nil
	}
	if cfg.IOStat.Enabled {
		io, err := newIOScraper(set, cfg)
		if err != nil {
			return nil, err
		}
		s, err := scraper.NewMetrics(io.scrape, scraper.WithShutdown(io.shutdown))
		if err != nil {
			return nil, err
		}
		if err := add("iostat", &cfg.ControllerConfig, s); err != nil {
			return nil, err
		}
	}
	if cfg.Filesystem.Enabled {
		fs := newFSScraper(set, cfg)
		s, err := scraper.NewMetrics(fs.scrape, scraper.WithShutdown(fs.shutdown))
		if err != nil {
			return nil, err
		}
		if err := add("filesystem", &cfg.ControllerConfig, s); err != nil {
			return nil, err
		}
	}
	if cfg.Pressure.Enabled {
		ps := newPressureScraper(set, cfg)
		s, err := scraper.NewMetrics(ps.scrape, scraper.WithStart(ps.start))
		if err != nil {
			return nil, err
		}
		if err := add("pressure", &cfg.ControllerConfig, s); err != nil {
			return nil, err
		}
	}
	if cfg.Cgroups.Enabled {
		cs, err := newCgroupScraper(set, cfg)
		if err != nil {
			return nil, err
		}
		s, err := scraper.NewMetrics(cs.scrape, scraper.WithStart(cs.start), scraper.WithShutdown(cs.shutdown))
		if err != nil {
			return nil, err
		}
		if err := add("cgroups", &cfg.ControllerConfig, s); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (r *diskHealthReceiver) Start(ctx context.Context, host component.Host) error {
	for i, c := range r.controllers {
		if err := c.Start(ctx, host); err != nil {
			// Stop what already runs so a failed start leaks nothing.
			for _, started := range r.controllers[:i] {
				_ = started.Shutdown(ctx)
			}
			return err
		}
	}
	return nil
}

func (r *diskHealthReceiver) Shutdown(ctx context.Context) error {
	var errs []error
	for _, c := range r.controllers {
		errs = append(errs, c.Shutdown(ctx))
	}
	return errors.Join(errs...)
}
