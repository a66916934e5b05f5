package capacityscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/capacityscraper"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/scraper"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/capacityscraper/internal/metadata"
)

// NewFactory creates the capacity scraper factory; its checkpoint and /dev/shm events are logged only.
func NewFactory() scraper.Factory { return NewFactoryWithEvents(nil) }

// NewFactoryWithEvents creates the capacity scraper factory whose scrapers send their checkpoint and
// /dev/shm events to events (a logs pipeline; nil: logged only).
func NewFactoryWithEvents(events consumer.Logs) scraper.Factory {
	return scraper.NewFactory(metadata.Type, func() component.Config { return createDefaultConfig() },
		scraper.WithMetrics(func(_ context.Context, set scraper.Settings, cfg component.Config) (scraper.Metrics, error) {
			s, err := newScraper(set, cfg.(*Config), events, time.Now)
			if err != nil {
				return nil, err
			}
			return scraper.NewMetrics(s.scrape, scraper.WithStart(s.start), scraper.WithShutdown(s.shutdown))
		}, metadata.MetricsStability))
}
