package pressurescraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/pressurescraper"

import (
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/pressurescraper/internal/metadata"
)

// MetricsConfig is this source's part of the receiver's metrics: key.
type MetricsConfig = metadata.MetricsConfig

// Config is the pressure section of the disk_health configuration.
type Config struct {
	Enabled bool `mapstructure:"enabled"`

	// Set by the receiver from its top-level keys (root_path, metrics), never in this section.
	RootPath string `mapstructure:"-"`
	// Status is where the source says what of it cannot run (disk_health.source.status); nil: nowhere.
	Status  *emit.Status  `mapstructure:"-"`
	Metrics MetricsConfig `mapstructure:"-"`
}

func createDefaultConfig() *Config {
	return &Config{Enabled: true, RootPath: "/", Metrics: metadata.DefaultMetricsConfig()}
}

// Validate reports the section's problems, each under its full key below section ("pressure"); the
// section has nothing to get wrong.
func (*Config) Validate(string) error { return nil }
