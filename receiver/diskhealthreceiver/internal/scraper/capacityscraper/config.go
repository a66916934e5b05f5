package capacityscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/capacityscraper"

import (
	"errors"
	"fmt"
	"path/filepath"

	"go.opentelemetry.io/collector/component"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/capacityscraper/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
)

// section is where users write this source's settings.
const section = "capacity"

// MetricsConfig and ResourceAttributesConfig are this source's part of the receiver's metrics: and
// resource_attributes: keys.
type (
	// MetricsConfig is this source's part of the receiver's metrics: key.
	MetricsConfig = metadata.MetricsConfig
	// ResourceAttributesConfig is this source's part of the receiver's resource_attributes: key.
	ResourceAttributesConfig = metadata.ResourceAttributesConfig
)

// Config is the capacity section of the disk_health configuration. Which mounts it sees is the
// filesystem section's to say: the two sources read one snapshot of the mounts.
type Config struct {
	Enabled bool `mapstructure:"enabled"`

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

	// Selection is the filesystem section's choice of mounts and statfs bounds, copied in by the
	// receiver: the source reads it through Mounts, and bounds its own statfs of pods' memory volumes and
	// its quota reads by the same timeouts. Mounts is the receiver's mount snapshot at this source's
	// interval; nil: the source reads its own, of Selection.
	fsusage.Selection `mapstructure:"-"`
	Mounts            *fsusage.Reader `mapstructure:"-"`

	// Set by the receiver from its top-level keys (root_path, metrics, resource_attributes).
	RootPath string `mapstructure:"-"`
	// Status is where the source says what of it cannot run (disk_health.source.status); nil: nowhere.
	Status               *emit.Status                  `mapstructure:"-"`
	MetricsBuilderConfig metadata.MetricsBuilderConfig `mapstructure:"-"`
}

func createDefaultConfig() *Config {
	return &Config{
		Enabled:        true,
		KubeletRootDir: "/var/lib/kubelet",
		PodSHM:         true,
		ImageFSDir:     "/var/lib/containerd",
		ProjectQuotas: ProjectQuotasConfig{
			MaxPerFilesystem: 100, ProjectsFile: "/etc/projects", ProjIDFile: "/etc/projid",
		},
		// The cgroups section's defaults, which the receiver copies in.
		CheckpointWriters: true, CgroupTopN: 10, CgroupMaxDepth: 5,
		// The filesystem section's defaults, which the receiver copies in.
		Selection:            fsusage.DefaultSelection(),
		RootPath:             "/",
		MetricsBuilderConfig: metadata.NewDefaultMetricsBuilderConfig(),
	}
}

// Validate reports every problem of the section, each under its full key below key ("capacity").
func (c *Config) Validate(key string) error {
	var errs []error
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
	return errors.Join(errs...)
}
