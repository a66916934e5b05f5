package smartscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper"

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/match"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/signs"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device"
)

// section is where users write this source's settings.
const section = "smart"

// MetricsConfig and ResourceAttributesConfig are this source's part of the receiver's metrics: and
// resource_attributes: keys.
type (
	// MetricsConfig is this source's part of the receiver's metrics: key.
	MetricsConfig = metadata.MetricsConfig
	// ResourceAttributesConfig is this source's part of the receiver's resource_attributes: key.
	ResourceAttributesConfig = metadata.ResourceAttributesConfig
)

// Config is the smart section of the disk_health configuration.
type Config struct {
	Enabled bool `mapstructure:"enabled"`
	// Interval is how often the disks are read: SMART data changes slowly, and every read is a few
	// commands to each disk. Every read is emitted once, with the read's time; nothing is re-emitted in
	// between.
	Interval time.Duration `mapstructure:"interval"`
	// Devices filters disks by kernel name (sda; nvme0, the controller, for NVMe).
	Devices match.Config `mapstructure:"devices"`
	// Standby leaves sleeping ATA disks alone, as smartctl --nocheck: never (always read, may spin a
	// disk up), standby (skip disks in standby or sleep), idle (also skip idle disks).
	Standby string `mapstructure:"standby"`
	// Timeout bounds each disk's read; a disk whose read hangs is reported as timed out and not read
	// again until the hung command returns.
	Timeout time.Duration `mapstructure:"timeout"`
	// Storage names a storage extension (file_storage) that keeps each NVMe drive's error-log
	// high-water mark across restarts, so the entries made while no collector ran are sent once when it
	// starts again. Nil: kept in memory; a restart then sends none of the entries it finds.
	Storage *component.ID `mapstructure:"storage"`
	// DriveDB is a drive database in smartmontools' drivedb.h syntax that names and decodes the ATA
	// attributes, replacing the built-in one (as smartctl -B FILE). Empty: the host's
	// /var/lib/smartmontools/drivedb/drivedb.h (update-smart-drivedb's) under root_path when present,
	// with /etc/smart_drivedb.h's entries first, as smartctl reads them; else the built-in database.
	DriveDB string `mapstructure:"drivedb"`

	// Set by the receiver from its top-level keys (root_path, metrics, resource_attributes).
	RootPath             string                        `mapstructure:"-"`
	MetricsBuilderConfig metadata.MetricsBuilderConfig `mapstructure:"-"`
	// Signs is the receiver's signs board: the error counters other sources (stack) saw on a disk join
	// its health rules (kernel_io_errors_rising, filesystem_errors_rising). Nil: SMART data only.
	Signs *signs.Board `mapstructure:"-"`
}

func createDefaultConfig() *Config {
	return &Config{
		Enabled: true, Interval: 5 * time.Minute, Standby: "standby", Timeout: 10 * time.Second,
		RootPath: "/", MetricsBuilderConfig: metadata.NewDefaultMetricsBuilderConfig(),
	}
}

// Validate reports every problem of the section, each under its full key below key ("smart").
func (c *Config) Validate(key string) error {
	_, err := c.deviceConfig(key)
	return err
}

// deviceConfig is the reader configuration the section describes.
func (c *Config) deviceConfig(key string) (device.Config, error) {
	var errs []error
	if err := emit.CheckInterval(key+".interval", c.Interval); err != nil {
		errs = append(errs, err)
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("%s.timeout: must be positive, got %v", key, c.Timeout))
	}
	standby, err := device.ParseStandby(c.Standby)
	if err != nil {
		errs = append(errs, fmt.Errorf("%s.standby: %w", key, err))
	}
	disks, err := c.Devices.Compile(key + ".devices")
	if err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return device.Config{}, err
	}
	return device.Config{Root: c.RootPath, Timeout: c.Timeout, Standby: standby, Match: disks.Match}, nil
}
