package filelatscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filelatscraper"

import (
	"errors"
	"fmt"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filelatscraper/internal/metadata"
)

// MetricsConfig is this source's part of the receiver's metrics: key (the counters; the histogram
// follows enabled).
type MetricsConfig = metadata.MetricsConfig

// Config is the filelat section of the disk_health configuration.
type Config struct {
	// Enabled loads the BPF probe at start; off by default, because once attached the probe puts every
	// system call of the machine on the kernel's traced path (README, File latency). Where it cannot
	// load the source logs one WARN line naming the cause and the fix and reports nothing.
	Enabled bool `mapstructure:"enabled"`
	// MaxMounts bounds the mounts with file I/O the probe keeps at once and sizes its preallocated
	// table (3 operations × 1960 B per mount: 1.5 MiB of kernel memory for the default 256); calls on
	// further mounts count in disk_health.filesystem.operation.dropped.
	MaxMounts int `mapstructure:"max_mounts"`
	// TopN is the most mounts that get their own series: the most active by operations per scrape,
	// each keeping its series while idle until a mount twice as active needs the slot. The rest is
	// one "other" series per operation.
	TopN int `mapstructure:"top_n"`

	// Set by the receiver from its top-level keys (root_path, metrics), never in this section.
	RootPath string        `mapstructure:"-"`
	Metrics  MetricsConfig `mapstructure:"-"`
	// Status is where the source says it cannot run (disk_health.source.status); nil: nowhere.
	Status *emit.Status `mapstructure:"-"`
}

// Defaults and bounds. 256 mounts is the probe's own default: a host's mounts with file I/O within one
// scrape interval (the series of unmounted mounts and of other mount namespaces are freed every scrape)
// are far fewer; 4096 mounts is 24 MiB of kernel memory. 20 mounts of 3 histograms each keep a
// scrape under about 200 points here; 1000 is past any dashboard.
const (
	defaultMaxMounts = 256
	maxMountsLimit   = 4096
	defaultTopN      = 20
	maxTopN          = 1000
)

func createDefaultConfig() *Config {
	return &Config{MaxMounts: defaultMaxMounts, TopN: defaultTopN, RootPath: "/", Metrics: metadata.DefaultMetricsConfig()}
}

// Validate reports the section's problems, each under its full key below key ("filelat").
func (c *Config) Validate(key string) error {
	var errs []error
	if c.MaxMounts < 1 || c.MaxMounts > maxMountsLimit {
		errs = append(errs, fmt.Errorf("%s.max_mounts: %d is out of range, want 1 to %d", key, c.MaxMounts, maxMountsLimit))
	}
	if low := max(1, c.MaxMounts); c.TopN < 1 || c.TopN > min(maxTopN, low) {
		errs = append(errs, fmt.Errorf("%s.top_n: %d is out of range, want 1 to max_mounts (at most %d)", key, c.TopN, maxTopN))
	}
	return errors.Join(errs...)
}
