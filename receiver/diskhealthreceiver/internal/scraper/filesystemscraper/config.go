package filesystemscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filesystemscraper"

import (
	"errors"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filesystemscraper/internal/hostmetrics"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filesystemscraper/internal/metadata"
)

// section is where users write this source's settings.
const section = "filesystem"

// MetricsConfig and ResourceAttributesConfig are this source's part of the receiver's metrics: and
// resource_attributes: keys.
type (
	// MetricsConfig is this source's part of the receiver's metrics: key.
	MetricsConfig = metadata.MetricsConfig
	// ResourceAttributesConfig is this source's part of the receiver's resource_attributes: key.
	ResourceAttributesConfig = metadata.ResourceAttributesConfig
)

// Config is the filesystem section of the disk_health configuration: which mounts, and the bound on
// every statfs. The capacity source reads the same mounts (the receiver's one snapshot of them).
type Config struct {
	Enabled           bool `mapstructure:"enabled"`
	fsusage.Selection `mapstructure:",squash"`

	// Mounts is the receiver's mount snapshot at this source's interval; nil: the source reads its own.
	Mounts *fsusage.Reader `mapstructure:"-"`

	// Set by the receiver from its top-level keys (root_path, conventions, metrics, resource_attributes).
	RootPath string `mapstructure:"-"`
	// Status is where the source says what of it cannot run (disk_health.source.status); nil: nowhere.
	Status               *emit.Status                  `mapstructure:"-"`
	Conventions          emit.Conventions              `mapstructure:"-"`
	MetricsBuilderConfig metadata.MetricsBuilderConfig `mapstructure:"-"`
	// Hostmetrics is the hostmetrics-compatible set (hostmetrics.yaml), emitted under conventions:
	// hostmetrics; the metrics: key switches its metrics as it does the source's own.
	Hostmetrics hostmetrics.MetricsBuilderConfig `mapstructure:"-"`
}

func createDefaultConfig() *Config {
	return &Config{
		Enabled:              true,
		Selection:            fsusage.DefaultSelection(),
		RootPath:             "/",
		Conventions:          emit.ConventionsSemconv,
		MetricsBuilderConfig: metadata.NewDefaultMetricsBuilderConfig(),
		Hostmetrics:          hostmetrics.NewDefaultMetricsBuilderConfig(),
	}
}

// Validate reports every problem of the section, each under its full key below key ("filesystem").
func (c *Config) Validate(key string) error {
	return errors.Join(c.Selection.Validate(key)...)
}
