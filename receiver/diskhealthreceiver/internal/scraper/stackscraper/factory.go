package stackscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/stackscraper"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/scraper"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/stackscraper/internal/metadata"
)

// section is where users write this source's settings.
const section = "stack"

// NewFactory creates the stack scraper factory; its health events are logged only.
func NewFactory() scraper.Factory { return NewFactoryWithEvents(nil) }

// NewFactoryWithEvents creates the stack scraper factory whose scrapers send their health events to
// events (a logs pipeline; nil: logged only).
func NewFactoryWithEvents(events consumer.Logs) scraper.Factory {
	return scraper.NewFactory(metadata.Type, func() component.Config { return createDefaultConfig() },
		scraper.WithMetrics(func(_ context.Context, set scraper.Settings, cfg component.Config) (scraper.Metrics, error) {
			c := cfg.(*Config)
			if err := c.Validate(section); err != nil {
				return nil, err
			}
			s := newScraper(set, c, newReaders(c), events, time.Now)
			return scraper.NewMetrics(s.scrape, scraper.WithShutdown(s.shutdown))
		}, metadata.MetricsStability))
}
