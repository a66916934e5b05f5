package diskhealthreceiver // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver"

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"time"

	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/scraper/scraperhelper"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/diskstats"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device"
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

	// Filesystem configures df-style usage of the host's mounts.
	Filesystem FilesystemConfig `mapstructure:"filesystem"`

	// SMART configures SMART / NVMe health, read with its own interval.
	SMART SMARTConfig `mapstructure:"smart"`

	// Pressure configures the host's I/O pressure stall information (/proc/pressure/io).
	Pressure PressureConfig `mapstructure:"pressure"`

	// Cgroups configures per-cgroup I/O, attributed to containers, pods and systemd units.
	Cgroups CgroupsConfig `mapstructure:"cgroups"`

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

// FilesystemConfig selects the mounts whose usage is reported and bounds every statfs.
type FilesystemConfig struct {
	Enabled bool `mapstructure:"enabled"`
	// MountPoints, FSTypes and Devices (mount sources) filter with full-match regular expressions; a mount
	// is kept when it passes all three. The default excludes container, kubelet and kernel trees.
	MountPoints MatchConfig `mapstructure:"mount_points"`
	FSTypes     MatchConfig `mapstructure:"fs_types"`
	Devices     MatchConfig `mapstructure:"devices"`
	// IncludeMemory adds tmpfs and ramfs; IncludeRemote adds network and FUSE filesystems (nfs, cifs,
	// fuse.*), which answer statfs over a network or from a daemon and so can hang. Naming a type in
	// fs_types.include opts it in as well.
	IncludeMemory bool `mapstructure:"include_memory_filesystems"`
	IncludeRemote bool `mapstructure:"include_remote_filesystems"`
	// Duplicates: "drop" reports each filesystem once (same device and root; bind mounts of a subtree
	// dropped), "keep_binds" keeps bind mounts of subtrees, "keep" reports every mount point.
	Duplicates string `mapstructure:"duplicates"`
	// StatfsTimeout bounds one statfs of a local filesystem, RemoteStatfsTimeout of a network or FUSE one.
	StatfsTimeout       time.Duration `mapstructure:"statfs_timeout"`
	RemoteStatfsTimeout time.Duration `mapstructure:"remote_statfs_timeout"`
	// ForecastWindow is how much history the time-to-full fit uses.
	ForecastWindow time.Duration `mapstructure:"forecast_window"`
	// MountTableRereadScrapes forces a re-read of the mount table every N scrapes even when the kernel
	// signalled no change (superblock read-only switches send none).
	MountTableRereadScrapes int `mapstructure:"mount_table_reread_scrapes"`
}

// PressureConfig switches the host's I/O pressure metrics.
type PressureConfig struct {
	Enabled bool `mapstructure:"enabled"`
}

// CgroupsConfig bounds per-cgroup I/O: only cgroups with I/O since the previous scrape, at most TopN of
// them (the most bytes first), none deeper than MaxDepth below the hierarchy's root.
type CgroupsConfig struct {
	Enabled bool `mapstructure:"enabled"`
	// TopN is the most cgroups reported per scrape.
	TopN int `mapstructure:"top_n"`
	// MaxDepth is the depth of the deepest cgroup reported (kubepods.slice is 1; a burstable pod's container
	// 4); a cgroup at MaxDepth reports the I/O of its whole subtree.
	MaxDepth int `mapstructure:"max_depth"`
	// Devices filters the devices by kernel name with full-match regular expressions.
	Devices MatchConfig `mapstructure:"devices"`
}

// Bounds on the cgroups section: beyond them a scrape's cardinality or a walk's depth stops being "small".
const (
	maxCgroupsTopN  = 1000
	maxCgroupsDepth = 32
)

var duplicateModes = map[string]fsusage.DedupeMode{
	"drop":       fsusage.DedupeBinds,
	"keep_binds": fsusage.DedupeRoot,
	"keep":       fsusage.DedupeNone,
}

// SMARTConfig configures the SMART / NVMe health source.
type SMARTConfig struct {
	Enabled bool `mapstructure:"enabled"`
	// Interval is how often the disks are read: SMART data changes slowly, and every read is a few
	// commands to each disk. Every read is emitted once, with the read's time; nothing is re-emitted in
	// between.
	Interval time.Duration `mapstructure:"interval"`
	// Devices filters disks by kernel name (sda; nvme0, the controller, for NVMe).
	Devices MatchConfig `mapstructure:"devices"`
	// Standby leaves sleeping ATA disks alone, as smartctl --nocheck: never (always read, may spin a
	// disk up), standby (skip disks in standby or sleep), idle (also skip idle disks).
	Standby string `mapstructure:"standby"`
	// Timeout bounds each disk's read; a disk whose read hangs is reported as timed out and not read
	// again until the hung command returns.
	Timeout time.Duration `mapstructure:"timeout"`
}

// MatchConfig is an include/exclude pair of full-match regular expressions. An empty include list
// matches everything; exclude wins over include.
type MatchConfig struct {
	Include []string `mapstructure:"include"`
	Exclude []string `mapstructure:"exclude"`
}

var _ confmap.Validator = (*Config)(nil)

var (
	errRootPath   = errors.New("root_path")
	errIOStat     = errors.New("iostat")
	errFilesystem = errors.New("filesystem")
	errSMART      = errors.New("smart")
	errCgroups    = errors.New("cgroups")
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
	if err := cfg.Filesystem.validate(); err != nil {
		errs = append(errs, fmt.Errorf("%w: %w", errFilesystem, err))
	}
	if err := cfg.SMART.validate(); err != nil {
		errs = append(errs, fmt.Errorf("%w: %w", errSMART, err))
	}
	if err := cfg.Cgroups.validate(); err != nil {
		errs = append(errs, fmt.Errorf("%w: %w", errCgroups, err))
	}
	return errors.Join(errs...)
}

func (c *CgroupsConfig) validate() error {
	var errs []error
	if c.TopN < 1 || c.TopN > maxCgroupsTopN {
		errs = append(errs, fmt.Errorf("top_n must be between 1 and %d, got %d", maxCgroupsTopN, c.TopN))
	}
	if c.MaxDepth < 1 || c.MaxDepth > maxCgroupsDepth {
		errs = append(errs, fmt.Errorf("max_depth must be between 1 and %d, got %d", maxCgroupsDepth, c.MaxDepth))
	}
	if _, _, err := c.deviceFilter(); err != nil {
		errs = append(errs, fmt.Errorf("devices: %w", err))
	}
	return errors.Join(errs...)
}

// deviceFilter compiles the device selection; Validate has already reported any error.
func (c *CgroupsConfig) deviceFilter() (include, exclude []*regexp.Regexp, err error) {
	if include, err = diskstats.CompileFullMatch(c.Devices.Include); err != nil {
		return nil, nil, fmt.Errorf("include: %w", err)
	}
	if exclude, err = diskstats.CompileFullMatch(c.Devices.Exclude); err != nil {
		return nil, nil, fmt.Errorf("exclude: %w", err)
	}
	return include, exclude, nil
}

func (c *SMARTConfig) validate() error {
	var errs []error
	if c.Interval <= 0 {
		errs = append(errs, fmt.Errorf("interval must be positive, got %v", c.Interval))
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("timeout must be positive, got %v", c.Timeout))
	}
	if _, err := device.ParseStandby(c.Standby); err != nil {
		errs = append(errs, err)
	}
	if _, err := c.match(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// match compiles the disk selection; Validate has already reported any error.
func (c *SMARTConfig) match() (func(string) bool, error) {
	inc, err := diskstats.CompileFullMatch(c.Devices.Include)
	if err != nil {
		return nil, fmt.Errorf("devices: include: %w", err)
	}
	exc, err := diskstats.CompileFullMatch(c.Devices.Exclude)
	if err != nil {
		return nil, fmt.Errorf("devices: exclude: %w", err)
	}
	matchAny := func(res []*regexp.Regexp, name string) bool {
		for _, re := range res {
			if re.MatchString(name) {
				return true
			}
		}
		return false
	}
	return func(name string) bool {
		return (len(inc) == 0 || matchAny(inc, name)) && !matchAny(exc, name)
	}, nil
}

func (c *FilesystemConfig) validate() error {
	var errs []error
	if _, err := fsusage.NewFilter(c.filterConfig()); err != nil {
		errs = append(errs, err)
	}
	if _, ok := duplicateModes[c.Duplicates]; !ok {
		errs = append(errs, fmt.Errorf("duplicates: %q is not one of drop, keep_binds, keep", c.Duplicates))
	}
	for name, d := range map[string]time.Duration{
		"statfs_timeout": c.StatfsTimeout, "remote_statfs_timeout": c.RemoteStatfsTimeout, "forecast_window": c.ForecastWindow,
	} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %v", name, d))
		}
	}
	if c.MountTableRereadScrapes < 1 {
		errs = append(errs, fmt.Errorf("mount_table_reread_scrapes must be at least 1, got %d", c.MountTableRereadScrapes))
	}
	return errors.Join(errs...)
}

func (c *FilesystemConfig) filterConfig() fsusage.FilterConfig {
	return fsusage.FilterConfig{
		IncludeMountPoints: c.MountPoints.Include, ExcludeMountPoints: c.MountPoints.Exclude,
		IncludeFSTypes: c.FSTypes.Include, ExcludeFSTypes: c.FSTypes.Exclude,
		IncludeDevices: c.Devices.Include, ExcludeDevices: c.Devices.Exclude,
		IncludeMemory: c.IncludeMemory, IncludeRemote: c.IncludeRemote,
	}
}

// filter compiles the device selection; Validate has already reported any error.
func (c *IOStatConfig) filter() (*diskstats.Filter, error) {
	classes := make([]diskstats.Class, len(c.DeviceClasses))
	for i, cl := range c.DeviceClasses {
		classes[i] = diskstats.Class(cl)
	}
	return diskstats.NewFilter(c.Devices.Include, c.Devices.Exclude, classes)
}
