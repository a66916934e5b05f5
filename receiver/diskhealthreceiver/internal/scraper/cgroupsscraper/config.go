package cgroupsscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/cgroupsscraper"

import (
	"errors"
	"fmt"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/match"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/cgroupsscraper/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/tick"
)

// section is where users write this source's settings.
const section = "cgroups"

// MetricsConfig and ResourceAttributesConfig are this source's part of the receiver's metrics: and
// resource_attributes: keys.
type (
	// MetricsConfig is this source's part of the receiver's metrics: key.
	MetricsConfig = metadata.MetricsConfig
	// ResourceAttributesConfig is this source's part of the receiver's resource_attributes: key.
	ResourceAttributesConfig = metadata.ResourceAttributesConfig
)

// Config is the cgroups section of the disk_health configuration. It bounds per-cgroup I/O: only
// cgroups with I/O since the previous scrape, at most TopN of them (the most bytes first), none deeper
// than MaxDepth below the hierarchy's root.
type Config struct {
	Enabled bool `mapstructure:"enabled"`
	// TopN is the most cgroups reported per scrape.
	TopN int `mapstructure:"top_n"`
	// MaxDepth is the depth of the deepest cgroup reported (kubepods.slice is 1; a burstable pod's container
	// 4); a cgroup at MaxDepth reports the I/O of its whole subtree.
	MaxDepth int `mapstructure:"max_depth"`
	// Devices filters the devices by kernel name with full-match regular expressions.
	Devices match.Config `mapstructure:"devices"`

	// Set by the receiver from its top-level keys (root_path, metrics, resource_attributes).
	RootPath string `mapstructure:"-"`
	// Status is where the source says what of it cannot run (disk_health.source.status); nil: nowhere.
	Status               *emit.Status                  `mapstructure:"-"`
	MetricsBuilderConfig metadata.MetricsBuilderConfig `mapstructure:"-"`
	// Tick is the receiver's shared /proc/diskstats snapshot, at this source's interval; nil: the source
	// reads its own.
	Tick *tick.Reader `mapstructure:"-"`
}

// Bounds on the section: beyond them a scrape's cardinality or a walk's depth stops being "small".
const (
	maxTopN  = 1000
	maxDepth = 32
)

func createDefaultConfig() *Config {
	return &Config{Enabled: true, TopN: 10, MaxDepth: 5, RootPath: "/", MetricsBuilderConfig: metadata.NewDefaultMetricsBuilderConfig()}
}

// Validate reports every problem of the section, each under its full key below key ("cgroups").
func (c *Config) Validate(key string) error {
	var errs []error
	if c.TopN < 1 || c.TopN > maxTopN {
		errs = append(errs, fmt.Errorf("%s.top_n: must be between 1 and %d, got %d", key, maxTopN, c.TopN))
	}
	if c.MaxDepth < 1 || c.MaxDepth > maxDepth {
		errs = append(errs, fmt.Errorf("%s.max_depth: must be between 1 and %d, got %d", key, maxDepth, c.MaxDepth))
	}
	if _, err := c.Devices.Compile(key + ".devices"); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
