package netfsscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/netfsscraper"

import (
	"errors"
	"fmt"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"time"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/match"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/netfsscraper/internal/metadata"
)

// section is where users write this source's settings.
const section = "netfs"

// Config is the netfs section of the disk_health configuration. The source is off by default, as
// remote filesystems are opt-in in the filesystem source: a statfs of a network or FUSE mount can hang
// on a server or daemon (bounded here by statfs_timeout), and the mounts' names are the user's.
type Config struct {
	Enabled bool `mapstructure:"enabled"`
	// MountPoints, FSTypes and Devices (mount sources) filter the NFS (nfs, nfs4) and FUSE (fuse,
	// fuse.*, fuseblk) mounts with full-match regular expressions, as in the filesystem section.
	MountPoints match.Config `mapstructure:"mount_points"`
	FSTypes     match.Config `mapstructure:"fs_types"`
	Devices     match.Config `mapstructure:"devices"`
	// StatfsTimeout bounds one statfs of a mount; past it the mount is unresponsive and not called
	// again until a background re-probe answers.
	StatfsTimeout time.Duration `mapstructure:"statfs_timeout"`
	// SlowRoundTrip: an NFS mean round trip at or above it makes the mount slow.
	SlowRoundTrip time.Duration `mapstructure:"slow_round_trip"`
	// StallAfter: FUSE requests waiting this long without their count falling make the mount
	// unresponsive (slow before that).
	StallAfter time.Duration `mapstructure:"stall_after"`

	// Set by the receiver from its top-level keys (root_path, metrics; the source has no resource
	// attributes: a mount's identity is on its points).
	RootPath string `mapstructure:"-"`
	// Status is where the source says what of it cannot run (disk_health.source.status); nil: nowhere.
	Status               *emit.Status                  `mapstructure:"-"`
	MetricsBuilderConfig metadata.MetricsBuilderConfig `mapstructure:"-"`
	// KernelLog is the kernel log device whose NFS server lines are evidence for the state:
	// /dev/kmsg of the collector itself, not under root_path (the log is the kernel's, one for every
	// mount namespace; a container needs CAP_SYSLOG, or kernel.dmesg_restrict=0, and the device).
	// Tests point it elsewhere.
	KernelLog string `mapstructure:"-"`
}

func createDefaultConfig() *Config {
	return &Config{
		MountPoints:          match.Config{Exclude: fsusage.DefaultExcludeMountPoints()},
		StatfsTimeout:        fsusage.DefaultRemoteTimeout,
		SlowRoundTrip:        time.Second,
		StallAfter:           30 * time.Second,
		RootPath:             "/",
		KernelLog:            "/dev/kmsg",
		MetricsBuilderConfig: metadata.NewDefaultMetricsBuilderConfig(),
	}
}

// Validate reports every problem of the section, each under its full key below key ("netfs").
func (c *Config) Validate(key string) error {
	var errs []error
	if _, err := c.filter(key); err != nil {
		errs = append(errs, err)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"statfs_timeout", c.StatfsTimeout}, {"slow_round_trip", c.SlowRoundTrip}, {"stall_after", c.StallAfter}} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("%s.%s: must be positive, got %v", key, d.name, d.v))
		}
	}
	return errors.Join(errs...)
}

// filter compiles the section's filters; remote filesystems are in by default here, as they are
// what the source is for.
func (c *Config) filter(key string) (*fsusage.Filter, error) {
	return fsusage.NewFilter(key, fsusage.FilterConfig{
		MountPoints: c.MountPoints, FSTypes: c.FSTypes, Devices: c.Devices, IncludeRemote: true,
	})
}
