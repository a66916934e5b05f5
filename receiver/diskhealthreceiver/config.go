package diskhealthreceiver // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver"

import (
	"errors"
	"fmt"
	"os"

	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/scraper/scraperhelper"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/diskstats"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/metadata"
)

// Config is the disk_health receiver's configuration.
type Config struct {
	ControllerConfig     scraperhelper.ControllerConfig `mapstructure:",squash"`
	MetricsBuilderConfig metadata.MetricsBuilderConfig  `mapstructure:",squash"`

	// RootPath is where the host's root filesystem is mounted when the collector runs in a container
	// (hostmetrics convention, e.g. /hostfs): /proc, /sys and /dev are read below it. Empty means "/".
	RootPath string `mapstructure:"root_path"`

	// IOStat configures per-device I/O from /proc/diskstats.
	IOStat IOStatConfig `mapstructure:"iostat"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// IOStatConfig selects the block devices whose I/O is reported.
type IOStatConfig struct {
	Enabled bool `mapstructure:"enabled"`
	// Devices filters by kernel name with full-match regular expressions.
	Devices MatchConfig `mapstructure:"devices"`
	// DeviceClasses lists the kinds of device reported: disk, partition, dm, md, loop, ram, other.
	// The default (whole disks, device-mapper and md RAID) never counts the same I/O twice.
	DeviceClasses []string `mapstructure:"device_classes"`
}

// MatchConfig is an include/exclude pair of full-match regular expressions. An empty include list
// matches everything; exclude wins over include.
type MatchConfig struct {
	Include []string `mapstructure:"include"`
	Exclude []string `mapstructure:"exclude"`
}

var _ confmap.Validator = (*Config)(nil)

var (
	errRootPath = errors.New("root_path")
	errIOStat   = errors.New("iostat")
)

// Validate reports every problem at once, each naming the setting.
func (cfg *Config) Validate() error {
	var errs []error
	if cfg.RootPath != "" {
		if fi, err := os.Stat(cfg.RootPath); err != nil {
			errs = append(errs, fmt.Errorf("%w %q: %w", errRootPath, cfg.RootPath, err))
		} else if !fi.IsDir() {
			errs = append(errs, fmt.Errorf("%w %q: not a directory", errRootPath, cfg.RootPath))
		}
	}
	if _, err := cfg.IOStat.filter(); err != nil {
		errs = append(errs, fmt.Errorf("%w: %w", errIOStat, err))
	}
	return errors.Join(errs...)
}

// filter compiles the device selection; Validate has already reported any error.
func (c *IOStatConfig) filter() (*diskstats.Filter, error) {
	classes := make([]diskstats.Class, len(c.DeviceClasses))
	for i, cl := range c.DeviceClasses {
		classes[i] = diskstats.Class(cl)
	}
	return diskstats.NewFilter(c.Devices.Include, c.Devices.Exclude, classes)
}
