package iostatscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/iostatscraper"

import (
	"errors"
	"fmt"
	"strings"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/blockdev"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/match"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/iostatscraper/internal/hostmetrics"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/iostatscraper/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/tick"
)

// section is where users write this source's settings.
const section = "iostat"

// MetricsConfig and ResourceAttributesConfig are this source's part of the receiver's metrics: and
// resource_attributes: keys.
type (
	// MetricsConfig is this source's part of the receiver's metrics: key.
	MetricsConfig = metadata.MetricsConfig
	// ResourceAttributesConfig is this source's part of the receiver's resource_attributes: key.
	ResourceAttributesConfig = metadata.ResourceAttributesConfig
)

// Config is the iostat section of the disk_health configuration.
type Config struct {
	Enabled bool `mapstructure:"enabled"`
	// Devices filters by kernel name with full-match regular expressions.
	Devices match.Config `mapstructure:"devices"`
	// DeviceClasses lists the kinds of device reported: disk, partition, dm, md, loop, ram, other.
	// The default (whole disks, device-mapper and md RAID) never counts the same I/O twice.
	DeviceClasses []string `mapstructure:"device_classes"`

	// Set by the receiver from its top-level keys (root_path, conventions, metrics, resource_attributes).
	RootPath string `mapstructure:"-"`
	// Status is where the source says what of it cannot run (disk_health.source.status); nil: nowhere.
	Status               *emit.Status                  `mapstructure:"-"`
	Conventions          emit.Conventions              `mapstructure:"-"`
	MetricsBuilderConfig metadata.MetricsBuilderConfig `mapstructure:"-"`
	// Hostmetrics is the hostmetrics-compatible set (hostmetrics.yaml), emitted under conventions:
	// hostmetrics; the metrics: key switches its metrics as it does the source's own.
	Hostmetrics hostmetrics.MetricsBuilderConfig `mapstructure:"-"`
	// Tick is the receiver's shared /proc/diskstats and identity snapshot, at this source's interval;
	// nil: the source reads its own.
	Tick *tick.Reader `mapstructure:"-"`
}

func createDefaultConfig() *Config {
	classes := make([]string, len(blockdev.DefaultClasses))
	for i, c := range blockdev.DefaultClasses {
		classes[i] = string(c)
	}
	return &Config{Enabled: true, DeviceClasses: classes, RootPath: "/", Conventions: emit.ConventionsSemconv,
		MetricsBuilderConfig: metadata.NewDefaultMetricsBuilderConfig(), Hostmetrics: hostmetrics.NewDefaultMetricsBuilderConfig()}
}

// Validate reports every problem of the section, each under its full key below key ("iostat").
func (c *Config) Validate(key string) error {
	_, err := c.filter(key)
	if c.Enabled && len(c.DeviceClasses) == 0 {
		err = errors.Join(fmt.Errorf("%s.device_classes: empty, so no device would be reported: leave the key out for the default (%s), or set %s.enabled: false",
			key, strings.Join(createDefaultConfig().DeviceClasses, ", "), key), err)
	}
	return err
}

func (c *Config) filter(key string) (*blockdev.Filter, error) {
	classes := make([]blockdev.Class, len(c.DeviceClasses))
	for i, cl := range c.DeviceClasses {
		classes[i] = blockdev.Class(cl)
	}
	return blockdev.NewFilter(key, c.Devices, classes)
}
