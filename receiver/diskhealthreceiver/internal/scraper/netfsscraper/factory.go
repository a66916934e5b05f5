package netfsscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/netfsscraper"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/scraper"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/netfsscraper/internal/metadata"
)

// NewFactory creates the netfs scraper factory; its state-change events are logged only.
func NewFactory() scraper.Factory { return NewFactoryWithEvents(nil) }

// NewFactoryWithEvents creates the netfs scraper factory whose scrapers send their state-change
// events to events (a logs pipeline; nil: logged only).
func NewFactoryWithEvents(events consumer.Logs) scraper.Factory {
	return scraper.NewFactory(metadata.Type, func() component.Config { return createDefaultConfig() },
		scraper.WithMetrics(func(_ context.Context, set scraper.Settings, cfg component.Config) (scraper.Metrics, error) {
			return newScraper(set, cfg.(*Config), events, time.Now)
		}, metadata.MetricsStability))
}
