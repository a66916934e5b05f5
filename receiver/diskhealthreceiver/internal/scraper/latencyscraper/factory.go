package latencyscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/latencyscraper"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/scraper"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/biolat"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/latencyscraper/internal/metadata"
)

// NewFactory creates the latency scraper factory; its noisy-neighbour events are logged only.
func NewFactory() scraper.Factory { return NewFactoryWithEvents(nil) }

// NewFactoryWithEvents creates the latency scraper factory whose scrapers send their noisy-neighbour
// events to events (a logs pipeline; nil: logged only).
func NewFactoryWithEvents(events consumer.Logs) scraper.Factory {
	return scraper.NewFactory(metadata.Type, func() component.Config { return createDefaultConfig() },
		scraper.WithMetrics(func(_ context.Context, set scraper.Settings, cfg component.Config) (scraper.Metrics, error) {
			s, err := newScraper(set, cfg.(*Config), openBiolat, time.Now)
			if err != nil {
				return nil, err
			}
			s.openCgroups, s.sink = openCglat, events
			return scraper.NewMetrics(s.scrape, scraper.WithStart(s.start), scraper.WithShutdown(s.shutdown))
		}, metadata.MetricsStability))
}

// openBiolat opens the real probe.
func openBiolat(opts biolat.Options) (probe, error) {
	p, err := biolat.Open(opts)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// openCglat opens the real per-cgroup probe.
func openCglat(opts biolat.CgroupOptions) (cgroupProbe, error) {
	p, err := biolat.OpenCgroups(opts)
	if err != nil {
		return nil, err
	}
	return p, nil
}
