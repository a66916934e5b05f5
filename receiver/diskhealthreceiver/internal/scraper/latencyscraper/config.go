package latencyscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/latencyscraper"

import (
	"errors"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/signs"

	"fmt"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/blockdev"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/match"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/noisy"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/latencyscraper/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/tick"
)

// filterSection is where the device filter is written: latency reports the devices iostat reports.
const filterSection = "iostat"

// maxDevicesLimit bounds max_devices: the probe preallocates about 9 KiB of map memory (charged to
// the collector's memory cgroup) and 8 KiB of Go heap per device, about twice that with device_time.
const maxDevicesLimit = 1024

// MetricsConfig is this source's part of the receiver's metrics: key (the error counter; the
// histograms follow enabled and device_time).
type MetricsConfig = metadata.MetricsConfig

// Config is the latency section of the disk_health configuration.
type Config struct {
	// Enabled loads the BPF probe at start. Where it cannot load (no capabilities, no BTF, not Linux)
	// the source logs one line naming the cause and the fix and reports nothing.
	Enabled bool `mapstructure:"enabled"`
	// DeviceTime also measures issue to the driver → completion (disk_health.disk.operation.device.duration),
	// at the cost of a map insert and delete per I/O.
	DeviceTime bool `mapstructure:"device_time"`
	// MaxDevices bounds the whole disks with histograms and sizes the probe's preallocated maps.
	MaxDevices int `mapstructure:"max_devices"`
	// PerCgroup adds latency histograms per owning cgroup (pod, container), off by default.
	PerCgroup PerCgroupConfig `mapstructure:"per_cgroup"`

	// Set by the receiver, never in this section: root_path and metrics from the top-level keys, the
	// device filter and classes from the iostat section, so that latency covers iostat's devices.
	RootPath string `mapstructure:"-"`
	// Status is where the source says what of it cannot run (disk_health.source.status); nil: nowhere.
	Status        *emit.Status  `mapstructure:"-"`
	Devices       match.Config  `mapstructure:"-"`
	DeviceClasses []string      `mapstructure:"-"`
	Metrics       MetricsConfig `mapstructure:"-"`
	// Signs receives the kernel-seen I/O errors of each whole disk, for its SMART verdict; nil: none.
	Signs *signs.Board `mapstructure:"-"`
	// Tick is the receiver's shared /proc/diskstats and identity snapshot, at this source's interval;
	// nil: the source reads its own.
	Tick *tick.Reader `mapstructure:"-"`
}

// PerCgroupConfig is latency.per_cgroup: the per-cgroup probe (a second BPF program, loaded only when
// enabled) and the bound on its series.
type PerCgroupConfig struct {
	// Enabled loads the per-cgroup probe; it needs the latency source enabled.
	Enabled bool `mapstructure:"enabled"`
	// TopN is the most cgroups per device that get their own series: the most active, each keeping its
	// series while idle until a cgroup twice as active needs the slot (see folder). The rest is one
	// "other" series per device.
	TopN int `mapstructure:"top_n"`
	// MaxCgroups sizes the probe's preallocated table (two entries per cgroup: 4.0 KiB of kernel memory
	// and 3.8 KiB of Go heap per cgroup, plus 1.9 MiB); requests of cgroups beyond it count in other.
	MaxCgroups int `mapstructure:"max_cgroups"`
	// NoisyNeighbor is the verdict on who makes a cgroup's I/O wait; on with per_cgroup.
	NoisyNeighbor NoisyNeighborConfig `mapstructure:"noisy_neighbor"`
}

// NoisyNeighborConfig is latency.per_cgroup.noisy_neighbor: a cgroup (the victim) is in an episode
// while its tail latency on a device is at least K times its own baseline, it completed at least
// MinVictimIOs requests there in the interval, and another cgroup held at least Share of the
// device's occupancy.
type NoisyNeighborConfig struct {
	Enabled      bool    `mapstructure:"enabled"`
	K            float64 `mapstructure:"k"`
	Share        float64 `mapstructure:"share"`
	MinVictimIOs int     `mapstructure:"min_victim_ios"`
}

// Bounds of latency.per_cgroup.
const (
	maxTopN       = 1000
	maxCgroupsCap = 65536
	// A k of 1 or less calls every interval above the baseline an episode; beyond 1000 nothing is.
	minK, maxK = 1.1, 1000.0
	// Requests a victim must complete per interval for its tail to be one; beyond 10^6 nothing is judged.
	maxMinVictimIOs = 1_000_000
)

func createDefaultConfig() *Config {
	classes := make([]string, len(blockdev.DefaultClasses))
	for i, c := range blockdev.DefaultClasses {
		classes[i] = string(c)
	}
	return &Config{
		Enabled: true, MaxDevices: 64,
		PerCgroup: PerCgroupConfig{TopN: 10, MaxCgroups: 1024, NoisyNeighbor: NoisyNeighborConfig{
			Enabled: true, K: noisy.DefaultConfig().K, Share: noisy.DefaultConfig().Share,
			MinVictimIOs: int(noisy.DefaultConfig().MinVictimIOs),
		}},
		RootPath: "/", DeviceClasses: classes, Metrics: metadata.DefaultMetricsConfig(),
	}
}

// Validate reports the section's problems, each under its full key below key ("latency"). The device
// filter is the iostat section's and is reported there.
func (c *Config) Validate(key string) error {
	var errs []error
	if c.MaxDevices < 1 || c.MaxDevices > maxDevicesLimit {
		errs = append(errs, fmt.Errorf("%s.max_devices: %d is out of range, want 1 to %d", key, c.MaxDevices, maxDevicesLimit))
	}
	if c.PerCgroup.TopN < 1 || c.PerCgroup.TopN > maxTopN {
		errs = append(errs, fmt.Errorf("%s.per_cgroup.top_n: %d is out of range, want 1 to %d", key, c.PerCgroup.TopN, maxTopN))
	}
	if low := max(1, c.PerCgroup.TopN); c.PerCgroup.MaxCgroups < low || c.PerCgroup.MaxCgroups > maxCgroupsCap {
		errs = append(errs, fmt.Errorf("%s.per_cgroup.max_cgroups: %d is out of range, want top_n (or 1) to %d", key, c.PerCgroup.MaxCgroups, maxCgroupsCap))
	}
	nn := c.PerCgroup.NoisyNeighbor
	if !(nn.K >= minK && nn.K <= maxK) {
		errs = append(errs, fmt.Errorf("%s.per_cgroup.noisy_neighbor.k: %g is out of range, want %g to %g (the victim's latency as a multiple of its baseline)", key, nn.K, minK, maxK))
	}
	if !(nn.Share > 0 && nn.Share <= 1) {
		errs = append(errs, fmt.Errorf("%s.per_cgroup.noisy_neighbor.share: %g is out of range, want more than 0 and at most 1 (a ratio, not a percentage)", key, nn.Share))
	}
	if nn.MinVictimIOs < 1 || nn.MinVictimIOs > maxMinVictimIOs {
		errs = append(errs, fmt.Errorf("%s.per_cgroup.noisy_neighbor.min_victim_ios: %d is out of range, want 1 to %d", key, nn.MinVictimIOs, maxMinVictimIOs))
	}
	if c.Enabled && len(c.DeviceClasses) == 0 {
		errs = append(errs, fmt.Errorf("%s: covers the devices of iostat.device_classes, which is empty: leave that key out for the default, or set %s.enabled: false", key, key))
	}
	return errors.Join(errs...)
}

func (c *Config) filter() (*blockdev.Filter, error) {
	classes := make([]blockdev.Class, len(c.DeviceClasses))
	for i, cl := range c.DeviceClasses {
		classes[i] = blockdev.Class(cl)
	}
	return blockdev.NewFilter(filterSection, c.Devices, classes)
}

// engine is the verdict's configuration: the section's thresholds and the engine's own defaults.
func (c *NoisyNeighborConfig) engine() noisy.Config {
	e := noisy.DefaultConfig()
	e.K, e.Share, e.MinVictimIOs = c.K, c.Share, uint64(c.MinVictimIOs)
	return e
}
