package filesystemscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filesystemscraper"

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"go.opentelemetry.io/collector/component"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/match"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filesystemscraper/internal/hostmetrics"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filesystemscraper/internal/metadata"
)

// section is where users write this source's settings.
const section = "filesystem"

// MetricsConfig and ResourceAttributesConfig are this source's part of the receiver's metrics: and
// resource_attributes: keys.
type (
	// MetricsConfig is this source's part of the receiver's metrics: key.
	MetricsConfig = metadata.MetricsConfig
	// ResourceAttributesConfig is this source's part of the receiver's resource_attributes: key.
	ResourceAttributesConfig = metadata.ResourceAttributesConfig
)

// Config is the filesystem section of the disk_health configuration: which mounts, and the bound on
// every statfs.
type Config struct {
	Enabled bool `mapstructure:"enabled"`
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

	// KubeletConfigFile is the kubelet's configuration file (a host path, read under root_path) whose
	// eviction thresholds limit what the kubelet's filesystems can take; empty: the kubelet's defaults.
	// KubeletRootDir and ImageFSDir find the nodefs and imagefs; the thresholds apply only where
	// KubeletRootDir exists (a Kubernetes node).
	KubeletConfigFile string `mapstructure:"kubelet_config_file"`
	// PodSHM reports each pod's memory-backed emptyDir (its /dev/shm) against its memory limit.
	PodSHM         bool   `mapstructure:"pod_shm"`
	KubeletRootDir string `mapstructure:"kubelet_root_dir"`
	ImageFSDir     string `mapstructure:"image_fs_dir"`

	// ProjectQuotas reports per-directory usage from filesystem project quotas (off by default).
	ProjectQuotas ProjectQuotasConfig `mapstructure:"project_quotas"`

	// CheckpointWriters names the cgroup (pod, container) that wrote each domain's checkpoint saves, from
	// the per-cgroup I/O counters; CgroupTopN and CgroupMaxDepth bound the cgroups it reads, taken from
	// the cgroups section (cgroups.top_n, cgroups.max_depth) by the receiver.
	CheckpointWriters bool `mapstructure:"checkpoint_writers"`
	CgroupTopN        int  `mapstructure:"-"`
	CgroupMaxDepth    int  `mapstructure:"-"`

	// Storage names a storage extension (file_storage) that keeps what the checkpoint learners learned
	// across collector restarts, so a restart predicts again from its first scrape instead of three saves
	// later. Unset: nothing is written anywhere.
	Storage *component.ID `mapstructure:"storage"`

	// Set by the receiver from its top-level keys (root_path, conventions, metrics, resource_attributes).
	RootPath string `mapstructure:"-"`
	// Status is where the source says what of it cannot run (disk_health.source.status); nil: nowhere.
	Status               *emit.Status                  `mapstructure:"-"`
	Conventions          emit.Conventions              `mapstructure:"-"`
	MetricsBuilderConfig metadata.MetricsBuilderConfig `mapstructure:"-"`
	// Hostmetrics is the hostmetrics-compatible set (hostmetrics.yaml), emitted under conventions:
	// hostmetrics; the metrics: key switches its metrics as it does the source's own.
	Hostmetrics hostmetrics.MetricsBuilderConfig `mapstructure:"-"`
}

// duplicateModes maps the duplicates values to the dedupe modes named after them.
var duplicateModes = map[string]fsusage.DedupeMode{
	"drop":       fsusage.DedupeDrop,
	"keep_binds": fsusage.DedupeKeepBinds,
	"keep":       fsusage.DedupeKeep,
}

func createDefaultConfig() *Config {
	return &Config{
		Enabled:                 true,
		MountPoints:             match.Config{Exclude: fsusage.DefaultExcludeMountPoints()},
		Duplicates:              "drop",
		StatfsTimeout:           fsusage.DefaultTimeout,
		RemoteStatfsTimeout:     fsusage.DefaultRemoteTimeout,
		ForecastWindow:          6 * time.Hour,
		MountTableRereadScrapes: fsusage.DefaultRereadEvery,
		KubeletRootDir:          "/var/lib/kubelet",
		PodSHM:                  true,
		ImageFSDir:              "/var/lib/containerd",
		ProjectQuotas: ProjectQuotasConfig{
			MaxPerFilesystem: 100, ProjectsFile: "/etc/projects", ProjIDFile: "/etc/projid",
		},
		// The cgroups section's defaults, which the receiver copies in.
		CheckpointWriters: true, CgroupTopN: 10, CgroupMaxDepth: 5,
		RootPath:             "/",
		Conventions:          emit.ConventionsSemconv,
		MetricsBuilderConfig: metadata.NewDefaultMetricsBuilderConfig(),
		Hostmetrics:          hostmetrics.NewDefaultMetricsBuilderConfig(),
	}
}

// Validate reports every problem of the section, each under its full key below key ("filesystem").
func (c *Config) Validate(key string) error {
	var errs []error
	if _, err := c.filter(key); err != nil {
		errs = append(errs, err)
	}
	if _, ok := duplicateModes[c.Duplicates]; !ok {
		errs = append(errs, fmt.Errorf("%s.duplicates: %q is not one of drop, keep_binds, keep", key, c.Duplicates))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"statfs_timeout", c.StatfsTimeout}, {"remote_statfs_timeout", c.RemoteStatfsTimeout}, {"forecast_window", c.ForecastWindow}} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("%s.%s: must be positive, got %v", key, d.name, d.v))
		}
	}
	for _, p := range []struct{ name, v string }{
		{"kubelet_config_file", c.KubeletConfigFile}, {"kubelet_root_dir", c.KubeletRootDir}, {"image_fs_dir", c.ImageFSDir},
		{"project_quotas.projects_file", c.ProjectQuotas.ProjectsFile}, {"project_quotas.projid_file", c.ProjectQuotas.ProjIDFile},
	} {
		if p.v != "" && !filepath.IsAbs(p.v) {
			errs = append(errs, fmt.Errorf("%s.%s: must be an absolute path (as on the host), got %q", key, p.name, p.v))
		}
	}
	if _, err := c.ProjectQuotas.MountPoints.Compile(key + ".project_quotas.mount_points"); err != nil {
		errs = append(errs, err)
	}
	if c.ProjectQuotas.MaxPerFilesystem < 1 {
		errs = append(errs, fmt.Errorf("%s.project_quotas.max_per_filesystem: must be at least 1, got %d", key, c.ProjectQuotas.MaxPerFilesystem))
	}
	if c.MountTableRereadScrapes < 1 {
		errs = append(errs, fmt.Errorf("%s.mount_table_reread_scrapes: must be at least 1, got %d", key, c.MountTableRereadScrapes))
	}
	return errors.Join(errs...)
}

func (c *Config) filter(key string) (*fsusage.Filter, error) {
	return fsusage.NewFilter(key, fsusage.FilterConfig{
		MountPoints: c.MountPoints, FSTypes: c.FSTypes, Devices: c.Devices,
		IncludeMemory: c.IncludeMemory, IncludeRemote: c.IncludeRemote,
	})
}
