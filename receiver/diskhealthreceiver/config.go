package diskhealthreceiver // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver"

import (
	"errors"
	"fmt"
	"os"

	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/scraper/scraperhelper"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/cgroupsscraper"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filesystemscraper"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/iostatscraper"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/latencyscraper"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/pressurescraper"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/stackscraper"
)

// Config is the disk_health receiver's configuration. Each source's section is that source's own
// config type; the top-level keys (root_path, metrics, resource_attributes) are handed to every source.
type Config struct {
	ControllerConfig scraperhelper.ControllerConfig `mapstructure:",squash"`

	// RootPath is where the host's root filesystem is mounted when the collector runs in a container
	// (hostmetrics convention, e.g. /hostfs): /proc, /sys and /dev are read below it. Empty means "/".
	RootPath string `mapstructure:"root_path"`

	// Metrics and ResourceAttributes switch every source's metrics and resource attributes under the
	// one key users write; each source takes its part.
	Metrics            MetricsConfig            `mapstructure:"metrics"`
	ResourceAttributes ResourceAttributesConfig `mapstructure:"resource_attributes"`

	// IOStat configures per-device I/O from /proc/diskstats.
	IOStat iostatscraper.Config `mapstructure:"iostat"`
	// Filesystem configures df-style usage of the host's mounts.
	Filesystem filesystemscraper.Config `mapstructure:"filesystem"`
	// SMART configures SMART / NVMe health, read with its own interval.
	SMART smartscraper.Config `mapstructure:"smart"`
	// Pressure configures the host's I/O pressure stall information (/proc/pressure/io).
	Pressure pressurescraper.Config `mapstructure:"pressure"`
	// Cgroups configures per-cgroup I/O, attributed to containers, pods and systemd units.
	Cgroups cgroupsscraper.Config `mapstructure:"cgroups"`
	// Latency configures per-device block request latency histograms and kernel-seen I/O errors (eBPF);
	// its devices are iostat's (iostat.devices, iostat.device_classes).
	Latency latencyscraper.Config `mapstructure:"latency"`
	// Stack configures md RAID arrays, device-mapper thin pools and multipath maps (logical disks with a
	// health verdict), and the SCSI, ext4 and btrfs error counters.
	Stack stackscraper.Config `mapstructure:"stack"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// MetricsConfig is every source's metrics: part; metric names never repeat across sources.
type MetricsConfig struct {
	IOStat     iostatscraper.MetricsConfig     `mapstructure:",squash"`
	Filesystem filesystemscraper.MetricsConfig `mapstructure:",squash"`
	SMART      smartscraper.MetricsConfig      `mapstructure:",squash"`
	Pressure   pressurescraper.MetricsConfig   `mapstructure:",squash"`
	Cgroups    cgroupsscraper.MetricsConfig    `mapstructure:",squash"`
	Latency    latencyscraper.MetricsConfig    `mapstructure:",squash"`
	// Stack shares hw.status and hw.errors with SMART: one key switches both sources' series.
	Stack stackscraper.MetricsConfig `mapstructure:",squash"`
}

// ResourceAttributesConfig is every source's resource_attributes: part. An attribute several sources
// set (hw.id, hw.model …) is one key: each source takes the same setting.
type ResourceAttributesConfig struct {
	IOStat     iostatscraper.ResourceAttributesConfig     `mapstructure:",squash"`
	Filesystem filesystemscraper.ResourceAttributesConfig `mapstructure:",squash"`
	SMART      smartscraper.ResourceAttributesConfig      `mapstructure:",squash"`
	Cgroups    cgroupsscraper.ResourceAttributesConfig    `mapstructure:",squash"`
}

var _ confmap.Validator = (*Config)(nil)

// Validate reports every problem at once, each naming its full key as the user writes it
// (filesystem.mount_points.exclude[0]).
func (cfg *Config) Validate() error {
	var errs []error
	if cfg.RootPath != "" {
		if fi, err := os.Stat(cfg.RootPath); err != nil {
			errs = append(errs, fmt.Errorf("root_path: %q: %w", cfg.RootPath, err))
		} else if !fi.IsDir() {
			errs = append(errs, fmt.Errorf("root_path: %q is not a directory", cfg.RootPath))
		}
	}
	for _, src := range cfg.sources(nil, nil, nil) {
		if err := src.validate(src.name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (cfg *Config) rootPath() string {
	if cfg.RootPath == "" {
		return "/"
	}
	return cfg.RootPath
}
