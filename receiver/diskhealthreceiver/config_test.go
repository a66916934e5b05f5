package diskhealthreceiver

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/match"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/cgroupsscraper"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filesystemscraper"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/iostatscraper"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/latencyscraper"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/pressurescraper"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/stackscraper"
)

func loadConfig(t *testing.T, name string) *Config {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	sub, err := cm.Sub(component.NewIDWithName(metadata.Type, name).String())
	require.NoError(t, err)
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	require.NoError(t, sub.Unmarshal(cfg))
	return cfg
}

func TestConfigDefault(t *testing.T) {
	cfg := loadConfig(t, "")
	assert.Equal(t, NewFactory().CreateDefaultConfig(), cfg)
	require.NoError(t, confmap.Validate(cfg))
	assert.Equal(t, 30*time.Second, cfg.ControllerConfig.CollectionInterval)
	assert.True(t, cfg.IOStat.Enabled)
	assert.Equal(t, []string{"disk", "dm", "md"}, cfg.IOStat.DeviceClasses)
	assert.True(t, cfg.SMART.Enabled)
	assert.Equal(t, 5*time.Minute, cfg.SMART.Interval)
	assert.Equal(t, "standby", cfg.SMART.Standby)
	assert.Equal(t, 10*time.Second, cfg.SMART.Timeout)
	assert.Empty(t, cfg.SMART.Devices)
}

func TestConfigCustom(t *testing.T) {
	cfg := loadConfig(t, "custom")
	require.NoError(t, confmap.Validate(cfg))
	assert.Equal(t, 15*time.Second, cfg.ControllerConfig.CollectionInterval)
	assert.Equal(t, "/", cfg.RootPath)
	assert.Equal(t, []string{"sd[a-z]+", "nvme[0-9]+n[0-9]+"}, cfg.IOStat.Devices.Include)
	assert.Equal(t, []string{"disk", "partition"}, cfg.IOStat.DeviceClasses)
	assert.Equal(t, time.Hour, cfg.SMART.Interval)
	assert.Equal(t, "idle", cfg.SMART.Standby)
	assert.Equal(t, 3*time.Second, cfg.SMART.Timeout)
	assert.Equal(t, match.Config{Exclude: []string{"sdz"}}, cfg.SMART.Devices)
}

// TestConfigLatency: latency is on by default (it reports nothing where BPF cannot load), and its
// devices are iostat's: the filter and classes of the iostat section reach it.
func TestConfigLatency(t *testing.T) {
	def := loadConfig(t, "")
	assert.True(t, def.Latency.Enabled)
	assert.False(t, def.Latency.DeviceTime)
	assert.Equal(t, 64, def.Latency.MaxDevices)

	cfg := loadConfig(t, "latency")
	require.NoError(t, confmap.Validate(cfg))
	var lat *latencyscraper.Config
	for _, s := range cfg.sources(nil, nil, nil) {
		if s.name == "latency" {
			lat = s.cfg.(*latencyscraper.Config)
		}
	}
	require.NotNil(t, lat)
	assert.True(t, lat.DeviceTime)
	assert.Equal(t, 8, lat.MaxDevices)
	assert.Equal(t, match.Config{Include: []string{"nvme[0-9]+n[0-9]+", "loop[0-9]+"}}, lat.Devices)
	assert.Equal(t, []string{"disk", "loop"}, lat.DeviceClasses)
	assert.Equal(t, "/", lat.RootPath)

	err := confmap.Validate(loadConfig(t, "bad_latency"))
	require.ErrorContains(t, err, "latency.max_devices: 0 is out of range, want 1 to 1024")
}

func TestConfigFilesystem(t *testing.T) {
	cfg := loadConfig(t, "filesystem")
	require.NoError(t, confmap.Validate(cfg))
	fs := cfg.Filesystem
	assert.True(t, fs.Enabled)
	assert.Equal(t, []string{"/", "/data(/.*)?"}, fs.MountPoints.Include)
	assert.Equal(t, fsusage.DefaultExcludeMountPoints(), fs.MountPoints.Exclude, "an include list keeps the default excludes")
	assert.True(t, fs.IncludeMemory)
	assert.True(t, fs.IncludeRemote)
	assert.Equal(t, "keep", fs.Duplicates)
	assert.Equal(t, 500*time.Millisecond, fs.StatfsTimeout)
	assert.Equal(t, 3*time.Second, fs.RemoteStatfsTimeout)
	assert.Equal(t, 24*time.Hour, fs.ForecastWindow)
	assert.Equal(t, 10, fs.MountTableRereadScrapes)
}

func TestConfigInvalid(t *testing.T) {
	for name, want := range map[string]string{
		"bad_regexp":        `iostat.devices.include[0]: invalid regular expression "sd[a-"`,
		"bad_class":         `iostat.device_classes[1]: unknown device class "floppy"`,
		"negative_interval": `collection_interval`,
		"bad_filesystem":    `filesystem.`,
		"missing_root":      `root_path: "/nonexistent/hostfs": stat /nonexistent/hostfs: no such file or directory`,
		// Every error of a section carries its full key, not only the first.
		"bad_smart": "smart.interval: must be positive, got 0s\nsmart.timeout: must be positive, got -1s\nsmart.standby: standby \"sleep\": want never, standby or idle\n" +
			`smart.devices.include[0]: invalid regular expression "nvme("`,
	} {
		t.Run(name, func(t *testing.T) {
			err := confmap.Validate(loadConfig(t, name))
			require.Error(t, err)
			assert.Contains(t, err.Error(), want)
		})
	}
}

func TestConfigInvalidFilesystemNamesEverySetting(t *testing.T) {
	err := confmap.Validate(loadConfig(t, "bad_filesystem"))
	require.Error(t, err)
	for _, want := range []string{`filesystem.mount_points.exclude[0]: invalid regular expression "(/proc"`, `filesystem.duplicates: "sometimes"`,
		"filesystem.statfs_timeout: must be positive", "filesystem.mount_table_reread_scrapes: must be at least 1"} {
		assert.Contains(t, err.Error(), want)
	}
}

func TestConfigRootPathNotDir(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.RootPath = filepath.Join("testdata", "config.yaml")
	err := confmap.Validate(cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "root_path: ")
	assert.Contains(t, err.Error(), "not a directory")
}

func TestConfigCgroups(t *testing.T) {
	def := NewFactory().CreateDefaultConfig().(*Config)
	assert.True(t, def.Pressure.Enabled)
	assert.True(t, def.Cgroups.Enabled)
	assert.Equal(t, 10, def.Cgroups.TopN)
	assert.Equal(t, 5, def.Cgroups.MaxDepth)

	cfg := loadConfig(t, "cgroups")
	require.NoError(t, confmap.Validate(cfg))
	assert.False(t, cfg.Pressure.Enabled)
	assert.Equal(t, 3, cfg.Cgroups.TopN)
	assert.Equal(t, 4, cfg.Cgroups.MaxDepth)
	assert.Equal(t, match.Config{Include: []string{"nvme[0-9]+n[0-9]+", "loop[0-9]+"}}, cfg.Cgroups.Devices)
}

func TestConfigInvalidCgroupsNamesEverySetting(t *testing.T) {
	err := confmap.Validate(loadConfig(t, "bad_cgroups"))
	require.Error(t, err)
	for _, want := range []string{"cgroups.top_n: must be between 1 and 1000, got 0", "cgroups.max_depth: must be between 1 and 32, got 33",
		`cgroups.devices.exclude[0]: invalid regular expression "sd("`} {
		assert.Contains(t, err.Error(), want)
	}
}

// TestConfigMetricsReachEverySource: the one metrics: and resource_attributes: key switches each
// source's metrics, and a resource attribute two sources set is switched for both.
func TestConfigMetricsReachEverySource(t *testing.T) {
	cfg := loadConfig(t, "metrics")
	require.NoError(t, confmap.Validate(cfg))
	byName := map[string]source{}
	for _, s := range cfg.sources(nil, nil, nil) {
		byName[s.name] = s
	}
	io := byName["iostat"].cfg.(*iostatscraper.Config).MetricsBuilderConfig
	assert.True(t, io.Metrics.SystemDiskMergedRatio.Enabled)
	assert.False(t, io.ResourceAttributes.HwModel.Enabled)
	assert.True(t, io.ResourceAttributes.HwSerialNumber.Enabled)
	assert.False(t, byName["filesystem"].cfg.(*filesystemscraper.Config).MetricsBuilderConfig.Metrics.SystemFilesystemTimeToFull.Enabled)
	sm := byName["smart"].cfg.(*smartscraper.Config).MetricsBuilderConfig
	assert.False(t, sm.Metrics.HwTemperature.Enabled)
	assert.False(t, sm.ResourceAttributes.HwModel.Enabled)
	assert.False(t, byName["pressure"].cfg.(*pressurescraper.Config).Metrics.SystemIoLinuxPressure5m.Enabled)
	assert.False(t, byName["cgroups"].cfg.(*cgroupsscraper.Config).MetricsBuilderConfig.Metrics.ContainerDiskOperations.Enabled)
	assert.False(t, byName["latency"].cfg.(*latencyscraper.Config).Metrics.SystemDiskKernelErrors.Enabled)
	st := byName["stack"].cfg.(*stackscraper.Config)
	assert.False(t, st.MetricsBuilderConfig.Metrics.HwLogicalDiskMdSyncSpeed.Enabled)
	// hw.errors is one key for the two sources that emit it.
	assert.False(t, st.MetricsBuilderConfig.Metrics.HwErrors.Enabled)
	assert.False(t, sm.Metrics.HwErrors.Enabled)
	assert.True(t, st.MetricsBuilderConfig.Metrics.HwStatus.Enabled)
	assert.Nil(t, st.Signs, "validation builds the table without a board")
	for _, s := range byName {
		assert.Equal(t, "/", rootOf(s.cfg), s.name)
	}

	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	sub, err := cm.Sub("disk_health/unknown_metric")
	require.NoError(t, err)
	err = sub.Unmarshal(NewFactory().CreateDefaultConfig())
	require.ErrorContains(t, err, "system.disk.no_such_thing")
}

// rootOf returns the root_path a source's section was handed.
func rootOf(c any) string {
	switch s := c.(type) {
	case *iostatscraper.Config:
		return s.RootPath
	case *filesystemscraper.Config:
		return s.RootPath
	case *smartscraper.Config:
		return s.RootPath
	case *pressurescraper.Config:
		return s.RootPath
	case *cgroupsscraper.Config:
		return s.RootPath
	case *latencyscraper.Config:
		return s.RootPath
	case *stackscraper.Config:
		return s.RootPath
	}
	return ""
}

// TestConfigEmptyPatternsRejected (issue 14, item 7): an empty pattern (`include: [""]`) validated and
// matched nothing; every source's filter now rejects one, naming the full key as the user wrote it.
func TestConfigEmptyPatternsRejected(t *testing.T) {
	cm := confmap.NewFromStringMap(map[string]any{
		"iostat":     map[string]any{"devices": map[string]any{"include": []any{""}}},
		"filesystem": map[string]any{"mount_points": map[string]any{"exclude": []any{"/proc", ""}}},
		"smart":      map[string]any{"devices": map[string]any{"exclude": []any{""}}},
		"cgroups":    map[string]any{"devices": map[string]any{"include": []any{""}}},
	})
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	require.NoError(t, cm.Unmarshal(cfg))
	err := confmap.Validate(cfg)
	require.Error(t, err)
	for _, key := range []string{"iostat.devices.include[0]", "filesystem.mount_points.exclude[1]", "smart.devices.exclude[0]", "cgroups.devices.include[0]"} {
		assert.Contains(t, err.Error(), key+": empty pattern")
	}
}
