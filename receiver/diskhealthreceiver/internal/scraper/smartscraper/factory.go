package smartscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/scraper"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper/internal/metadata"
)

// NewFactory creates the SMART scraper factory; its health events are logged only.
func NewFactory() scraper.Factory { return NewFactoryWithEvents(nil) }

// NewFactoryWithEvents creates the SMART scraper factory whose scrapers send their health events to
// events (a logs pipeline; nil: logged only).
func NewFactoryWithEvents(events consumer.Logs) scraper.Factory {
	return scraper.NewFactory(metadata.Type, func() component.Config { return createDefaultConfig() },
		scraper.WithMetrics(func(_ context.Context, set scraper.Settings, cfg component.Config) (scraper.Metrics, error) {
			c := cfg.(*Config)
			dc, err := c.deviceConfig(section)
			if err != nil {
				return nil, err
			}
			db := loadDriveDB(set.Logger, c.RootPath, c.DriveDB, imageDriveDB)
			dc.DriveDB = db.db
			s := newScraper(set, c, dc, events, time.Now)
			s.drivedb = db
			s.storage, s.id = c.Storage, set.ID
			return scraper.NewMetrics(s.scrape, scraper.WithStart(s.start), scraper.WithShutdown(s.shutdown))
		}, metadata.MetricsStability))
}
