package stackscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/stackscraper"

import (
	"errors"
	"fmt"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"time"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/stackscraper/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/signs"
)

// MetricsConfig is this source's part of the receiver's metrics: key.
type MetricsConfig = metadata.MetricsConfig

// Config is the stack section of the disk_health configuration.
type Config struct {
	Enabled bool `mapstructure:"enabled"`
	// MD reads md RAID arrays from sysfs (no privileges).
	MD bool `mapstructure:"md"`
	// DeviceMapper reads thin pools, thin volumes and multipath maps through read-only device-mapper
	// ioctls; the kernel answers them only with CAP_SYS_ADMIN (otherwise: permission_denied, once).
	DeviceMapper bool `mapstructure:"device_mapper"`
	// NVMe reads native NVMe multipath and NVMe over Fabrics subsystems from sysfs (no privileges).
	NVMe bool `mapstructure:"nvme"`
	// NVMeMaxSubsystems caps the NVMe subsystems reported (a host on a fabric can see hundreds, each with
	// its namespaces' series): past it the highest-numbered are not read, and counted in
	// disk_health.nvme.subsystems.omitted.
	NVMeMaxSubsystems int `mapstructure:"nvme_max_subsystems"`
	// Errors reads the SCSI, ext4 and btrfs error counters.
	Errors bool `mapstructure:"errors"`
	// ThinPoolThreshold is the used share of a thin pool's data or metadata (0-1) from which the pool is
	// degraded.
	ThinPoolThreshold float64 `mapstructure:"thin_pool_threshold"`
	// Timeout bounds each read: one md array's attributes, the device-mapper ioctls, one btrfs
	// superblock. A read that hangs is reported as timed out and not repeated until it returns.
	Timeout time.Duration `mapstructure:"timeout"`

	// Set by the receiver from its top-level keys (root_path, metrics) and its signs board.
	RootPath string `mapstructure:"-"`
	// Status is where the source says what of it cannot run (disk_health.source.status); nil: nowhere.
	Status               *emit.Status                  `mapstructure:"-"`
	MetricsBuilderConfig metadata.MetricsBuilderConfig `mapstructure:"-"`
	// Signs receives the error counters this source sees on each physical disk, for the SMART verdict.
	Signs *signs.Board `mapstructure:"-"`
}

func createDefaultConfig() *Config {
	return &Config{
		Enabled: true, MD: true, DeviceMapper: true, NVMe: true, NVMeMaxSubsystems: 256, Errors: true, ThinPoolThreshold: 0.9, Timeout: 2 * time.Second,
		RootPath: "/", MetricsBuilderConfig: metadata.NewDefaultMetricsBuilderConfig(),
	}
}

// Validate reports every problem of the section, each under its full key below key ("stack").
func (c *Config) Validate(key string) error {
	var errs []error
	if !(c.ThinPoolThreshold > 0 && c.ThinPoolThreshold <= 1) {
		errs = append(errs, fmt.Errorf("%s.thin_pool_threshold: must be above 0 and at most 1, got %v", key, c.ThinPoolThreshold))
	}
	if c.NVMeMaxSubsystems <= 0 {
		errs = append(errs, fmt.Errorf("%s.nvme_max_subsystems: must be positive, got %d", key, c.NVMeMaxSubsystems))
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("%s.timeout: must be positive, got %v", key, c.Timeout))
	}
	return errors.Join(errs...)
}
