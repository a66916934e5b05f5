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
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/metadata"
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
	assert.Equal(t, SMARTConfig{Enabled: true, Interval: 5 * time.Minute, Standby: "standby", Timeout: 10 * time.Second}, cfg.SMART)
}

func TestConfigCustom(t *testing.T) {
	cfg := loadConfig(t, "custom")
	require.NoError(t, confmap.Validate(cfg))
	assert.Equal(t, 15*time.Second, cfg.ControllerConfig.CollectionInterval)
	assert.Equal(t, "/", cfg.RootPath)
	assert.Equal(t, []string{"sd[a-z]+", "nvme[0-9]+n[0-9]+"}, cfg.IOStat.Devices.Include)
	assert.Equal(t, []string{"disk", "partition"}, cfg.IOStat.DeviceClasses)
	assert.Equal(t, SMARTConfig{Enabled: true, Interval: time.Hour, Standby: "idle", Timeout: 3 * time.Second,
		Devices: MatchConfig{Exclude: []string{"sdz"}}}, cfg.SMART)
	match, err := cfg.SMART.match()
	require.NoError(t, err)
	assert.True(t, match("sda"))
	assert.False(t, match("sdz"))
}

func TestConfigSMARTMatch(t *testing.T) {
	c := SMARTConfig{Devices: MatchConfig{Include: []string{"sd[a-c]", "nvme[0-9]+"}, Exclude: []string{"sdb"}}}
	match, err := c.match()
	require.NoError(t, err)
	for name, want := range map[string]bool{"sda": true, "sdb": false, "sdc": true, "sdd": false, "nvme0": true, "nvme0n1": false} {
		assert.Equal(t, want, match(name), name)
	}
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
		"bad_regexp":        `iostat: include: invalid regular expression "sd[a-"`,
		"bad_class":         `iostat: unknown device class "floppy"`,
		"negative_interval": `collection_interval`,
		"bad_filesystem":    `filesystem: `,
		"missing_root":      `root_path "/nonexistent/hostfs": stat /nonexistent/hostfs: no such file or directory`,
		"bad_smart": "smart: interval must be positive, got 0s\ntimeout must be positive, got -1s\nstandby \"sleep\": want never, standby or idle\n" +
			`devices: include: invalid regular expression "nvme("`,
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
	require.ErrorIs(t, err, errFilesystem)
	for _, want := range []string{`"(/proc"`, `duplicates: "sometimes"`, "statfs_timeout must be positive", "mount_table_reread_scrapes must be at least 1"} {
		assert.Contains(t, err.Error(), want)
	}
}

func TestConfigRootPathNotDir(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.RootPath = filepath.Join("testdata", "config.yaml")
	err := confmap.Validate(cfg)
	require.ErrorIs(t, err, errRootPath)
	assert.Contains(t, err.Error(), "not a directory")
}

func TestConfigCgroups(t *testing.T) {
	def := NewFactory().CreateDefaultConfig().(*Config)
	assert.True(t, def.Pressure.Enabled)
	assert.Equal(t, CgroupsConfig{Enabled: true, TopN: 10, MaxDepth: 5}, def.Cgroups)

	cfg := loadConfig(t, "cgroups")
	require.NoError(t, confmap.Validate(cfg))
	assert.False(t, cfg.Pressure.Enabled)
	assert.Equal(t, CgroupsConfig{
		Enabled: true, TopN: 3, MaxDepth: 4,
		Devices: MatchConfig{Include: []string{"nvme[0-9]+n[0-9]+", "loop[0-9]+"}},
	}, cfg.Cgroups)
}

func TestConfigInvalidCgroupsNamesEverySetting(t *testing.T) {
	err := confmap.Validate(loadConfig(t, "bad_cgroups"))
	require.ErrorIs(t, err, errCgroups)
	for _, want := range []string{"top_n must be between 1 and 1000, got 0", "max_depth must be between 1 and 32, got 33", `devices: exclude: invalid regular expression "sd("`} {
		assert.Contains(t, err.Error(), want)
	}
}
