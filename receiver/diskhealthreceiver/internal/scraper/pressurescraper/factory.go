package pressurescraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/pressurescraper"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/scraper"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/pressurescraper/internal/metadata"
)

// NewFactory creates the pressure scraper factory.
func NewFactory() scraper.Factory {
	return scraper.NewFactory(metadata.Type, func() component.Config { return createDefaultConfig() },
		scraper.WithMetrics(createMetrics, metadata.MetricsStability))
}

func createMetrics(_ context.Context, set scraper.Settings, cfg component.Config) (scraper.Metrics, error) {
	s := newScraper(set, cfg.(*Config), time.Now)
	return scraper.NewMetrics(s.scrape, scraper.WithStart(s.start))
}
