package smartscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper"

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/match"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/signs"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/nvme"
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
	// attributes (as smartctl -B FILE). Empty: the host's /var/lib/smartmontools/drivedb/drivedb.h
	// (update-smart-drivedb's), else its /usr/share/smartmontools/drivedb.h, under root_path, with
	// /etc/smart_drivedb.h's entries first, as smartctl reads them; else the image's copy; else none.
	DriveDB string `mapstructure:"drivedb"`
	// CloudLimits are cloud volumes' provisioned limits. Amazon's log D0h counts the time a volume spent
	// over its limits but never says what they are: with them here, the volume's use of each is a
	// gauge and an event warns before the cap is reached.
	CloudLimits []CloudLimit `mapstructure:"cloud_limits"`
	// CloudNear is the share of a configured limit (0–1] at or above which, over a read interval, a
	// volume is announced as near its limit (disk_health.cloud.throttle_near).
	CloudNear float64 `mapstructure:"cloud_near"`

	// Set by the receiver from its top-level keys (root_path, metrics, resource_attributes).
	RootPath string `mapstructure:"-"`
	// Status is where the source says what of it cannot run (disk_health.source.status); nil: nowhere.
	Status               *emit.Status                  `mapstructure:"-"`
	MetricsBuilderConfig metadata.MetricsBuilderConfig `mapstructure:"-"`
	// Signs is the receiver's signs board: the error counters other sources (stack) saw on a disk join
	// its health rules (kernel_io_errors_rising, filesystem_errors_rising). Nil: SMART data only.
	Signs *signs.Board `mapstructure:"-"`
}

func createDefaultConfig() *Config {
	return &Config{
		Enabled: true, Interval: 5 * time.Minute, Standby: "standby", Timeout: 10 * time.Second,
		CloudNear: nvme.DefaultNearUtilization,
		RootPath:  "/", MetricsBuilderConfig: metadata.NewDefaultMetricsBuilderConfig(),
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
	if !(c.CloudNear > 0 && c.CloudNear <= 1) {
		errs = append(errs, fmt.Errorf("%s.cloud_near: %v: want a share of the limit above 0 and at most 1 (default %v)", key, c.CloudNear, nvme.DefaultNearUtilization))
	}
	errs = append(errs, checkCloudLimits(key+".cloud_limits", c.CloudLimits)...)
	if err := errors.Join(errs...); err != nil {
		return device.Config{}, err
	}
	return device.Config{Root: c.RootPath, Timeout: c.Timeout, Standby: standby, Match: disks.Match}, nil
}

// CloudLimit is one cloud volume's provisioned limits. It names the volume by serial (an EBS volume's
// NVMe serial is its volume id: vol-0123… and vol0123… are the same volume), by device (the NVMe
// controller's kernel name, nvme1), or by both, when both must match.
type CloudLimit struct {
	Serial string `mapstructure:"serial"`
	Device string `mapstructure:"device"`
	// IOPS is the volume's operations per second, reads and writes together (0: not configured).
	IOPS float64 `mapstructure:"iops"`
	// Throughput is the volume's bytes per second, reads and writes together (0: not configured).
	Throughput float64 `mapstructure:"throughput"`
}

// volumeSerial is a serial as the volume reports it: EBS drops the dash of its volume id.
func volumeSerial(s string) string {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(s, "vol-"); ok {
		return "vol" + rest
	}
	return s
}

func (l CloudLimit) matches(name, serial string) bool {
	return (l.Serial == "" || volumeSerial(l.Serial) == volumeSerial(serial)) && (l.Device == "" || l.Device == name)
}

// cloudLimitsFor are the configured limits of the volume, the first entry that matches it.
func cloudLimitsFor(limits []CloudLimit, name, serial string) nvme.VolumeLimits {
	for _, l := range limits {
		if l.matches(name, serial) {
			return nvme.VolumeLimits{IOPS: l.IOPS, Throughput: l.Throughput}
		}
	}
	return nvme.VolumeLimits{}
}

func checkCloudLimits(key string, limits []CloudLimit) []error {
	var errs []error
	seen := map[[2]string]int{}
	for i, l := range limits {
		k := fmt.Sprintf("%s[%d]", key, i)
		if l.Serial == "" && l.Device == "" {
			errs = append(errs, fmt.Errorf("%s: names no volume: set serial (the EBS volume id, vol-…) or device (the NVMe controller, nvme1)", k))
		}
		if !(l.IOPS >= 0 && l.Throughput >= 0) || math.IsInf(l.IOPS, 0) || math.IsInf(l.Throughput, 0) {
			errs = append(errs, fmt.Errorf("%s: iops %v, throughput %v: a limit is a finite number, not negative", k, l.IOPS, l.Throughput))
		}
		if l.IOPS == 0 && l.Throughput == 0 {
			errs = append(errs, fmt.Errorf("%s: no limit: set iops (operations/s) or throughput (bytes/s)", k))
		}
		id := [2]string{volumeSerial(l.Serial), l.Device}
		if j, dup := seen[id]; dup && (l.Serial != "" || l.Device != "") {
			errs = append(errs, fmt.Errorf("%s: the same volume as %s[%d]; only the first would be used", k, key, j))
		} else if !dup {
			seen[id] = i
		}
	}
	return errs
}
