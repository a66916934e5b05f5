package fsusage // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"

import (
	"fmt"
	"time"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/match"
)

// Selection is what the user says of which mounts are measured and how: the keys of the filesystem
// section that configure the one mount snapshot (Shared) the filesystem and capacity sources read.
type Selection struct {
	// MountPoints, FSTypes and Devices (mount sources) filter with full-match regular expressions; a mount
	// is kept when it passes all three. The default excludes container, kubelet and kernel trees.
	MountPoints match.Config `mapstructure:"mount_points"`
	FSTypes     match.Config `mapstructure:"fs_types"`
	Devices     match.Config `mapstructure:"devices"`
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

// duplicateModes maps the duplicates values to the dedupe modes named after them.
var duplicateModes = map[string]DedupeMode{
	"drop":       DedupeDrop,
	"keep_binds": DedupeKeepBinds,
	"keep":       DedupeKeep,
}

// DefaultSelection is the selection when nothing is configured.
func DefaultSelection() Selection {
	return Selection{
		MountPoints:             match.Config{Exclude: DefaultExcludeMountPoints()},
		Duplicates:              "drop",
		StatfsTimeout:           DefaultTimeout,
		RemoteStatfsTimeout:     DefaultRemoteTimeout,
		ForecastWindow:          6 * time.Hour,
		MountTableRereadScrapes: DefaultRereadEvery,
	}
}

// Validate reports every problem of the selection, each under its full key below key ("filesystem").
func (s *Selection) Validate(key string) []error {
	var errs []error
	if _, err := s.Filter(key); err != nil {
		errs = append(errs, err)
	}
	if _, ok := duplicateModes[s.Duplicates]; !ok {
		errs = append(errs, fmt.Errorf("%s.duplicates: %q is not one of drop, keep_binds, keep", key, s.Duplicates))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"statfs_timeout", s.StatfsTimeout}, {"remote_statfs_timeout", s.RemoteStatfsTimeout}, {"forecast_window", s.ForecastWindow}} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("%s.%s: must be positive, got %v", key, d.name, d.v))
		}
	}
	if s.MountTableRereadScrapes < 1 {
		errs = append(errs, fmt.Errorf("%s.mount_table_reread_scrapes: must be at least 1, got %d", key, s.MountTableRereadScrapes))
	}
	return errs
}

// Filter compiles the selection's filter; an error names the list and pattern under key.
func (s *Selection) Filter(key string) (*Filter, error) {
	return NewFilter(key, FilterConfig{
		MountPoints: s.MountPoints, FSTypes: s.FSTypes, Devices: s.Devices,
		IncludeMemory: s.IncludeMemory, IncludeRemote: s.IncludeRemote,
	})
}

// ProberConfig is the statfs bound of the selection, for a prober of other paths (pod memory volumes)
// that follows the same timeouts.
func (s *Selection) ProberConfig() ProberConfig {
	return ProberConfig{Timeout: s.StatfsTimeout, RemoteTimeout: s.RemoteStatfsTimeout}
}

// CollectorConfig is the Collector configuration of the selection for the tree at root. key names the section
// in a filter error.
func (s *Selection) CollectorConfig(key, root string, onStateChange func(StateChange)) (Config, error) {
	filter, err := s.Filter(key)
	if err != nil {
		return Config{}, err
	}
	pc := s.ProberConfig()
	pc.OnStateChange = onStateChange
	return Config{
		RootPath:    root,
		Filter:      filter,
		Dedupe:      duplicateModes[s.Duplicates],
		RereadEvery: s.MountTableRereadScrapes,
		Prober:      pc,
		Forecast:    ForecastConfig{Window: s.ForecastWindow},
	}, nil
}
