package filesystemscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filesystemscraper"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/scraper"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filesystemscraper/internal/metadata"
)

// NewFactory creates the filesystem scraper factory.
func NewFactory() scraper.Factory {
	return scraper.NewFactory(metadata.Type, func() component.Config { return createDefaultConfig() },
		scraper.WithMetrics(func(_ context.Context, set scraper.Settings, cfg component.Config) (scraper.Metrics, error) {
			s, err := newScraper(set, cfg.(*Config), time.Now)
			if err != nil {
				return nil, err
			}
			return scraper.NewMetrics(s.scrape, scraper.WithShutdown(s.shutdown))
		}, metadata.MetricsStability))
}
