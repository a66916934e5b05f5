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
	// system call of the machine on the kernel's traced path (docs/file-latency.md). Where it cannot
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
	// PerCgroup adds the histograms and page-cache pages per cgroup (pod, container) and mount.
	PerCgroup PerCgroupConfig `mapstructure:"per_cgroup"`

	// Set by the receiver from its top-level keys (root_path, metrics), never in this section.
	RootPath string        `mapstructure:"-"`
	Metrics  MetricsConfig `mapstructure:"-"`
	// Status is where the source says it cannot run (disk_health.source.status); nil: nowhere.
	Status *emit.Status `mapstructure:"-"`
}

// PerCgroupConfig is filelat.per_cgroup: every call counted a second time per {cgroup, mount,
// operation}, charged to the cgroup of the task that made it, and the bounds on those series.
type PerCgroupConfig struct {
	// Enabled keeps the per-cgroup table in the probe; like the latency source's per_cgroup, it does
	// nothing without filelat.enabled. Off by default: each
	// measured call then pays a second table update (about 0.3 µs per cached 4 KiB read measured here).
	Enabled bool `mapstructure:"enabled"`
	// TopN is the most cgroups that get their own series: the most active by reads per scrape, each
	// keeping its series while idle until a cgroup twice as active needs the slot, on the mounts that
	// have their own series (filelat.top_n); the rest of a shown cgroup is its mount "other", every other
	// cgroup is one cgroup.path "other" series per operation.
	TopN int `mapstructure:"top_n"`
	// MaxSeries sizes the probe's preallocated per-cgroup table, in {cgroup, mount, operation}
	// entries (1984 B each: 2 MiB of kernel memory for the default 1024); calls with no room count in
	// disk_health.container.filesystem.operation.dropped and are still in their mount's series.
	MaxSeries int `mapstructure:"max_series"`
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
	// 10 cgroups, as the latency source's per_cgroup.top_n: the pods worth a dashboard row on a node,
	// at most 10 × (top_n + 1) × 3 histograms. 1024 entries hold about 100 pods reading 3 mounts each
	// in both directions; 65536 entries is 124 MiB of kernel memory.
	defaultCgroupTopN  = 10
	defaultMaxCgSeries = 1024
	maxCgSeriesLimit   = 65536
)

func createDefaultConfig() *Config {
	return &Config{MaxMounts: defaultMaxMounts, TopN: defaultTopN,
		PerCgroup: PerCgroupConfig{TopN: defaultCgroupTopN, MaxSeries: defaultMaxCgSeries}, RootPath: "/", Metrics: metadata.DefaultMetricsConfig()}
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
	if c.PerCgroup.TopN < 1 || c.PerCgroup.TopN > maxTopN {
		errs = append(errs, fmt.Errorf("%s.per_cgroup.top_n: %d is out of range, want 1 to %d", key, c.PerCgroup.TopN, maxTopN))
	}
	if low := max(1, c.PerCgroup.TopN); c.PerCgroup.MaxSeries < low || c.PerCgroup.MaxSeries > maxCgSeriesLimit {
		errs = append(errs, fmt.Errorf("%s.per_cgroup.max_series: %d is out of range, want per_cgroup.top_n (or 1) to %d", key, c.PerCgroup.MaxSeries, maxCgSeriesLimit))
	}
	return errors.Join(errs...)
}
