package diskhealthreceiver

import (
	"maps"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
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
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/signs"
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

// section returns cfg's section of the named source, as its type.
func section[T any](cfg *Config, name string) *T { return cfg.sections[name].(*T) }

func TestConfigDefault(t *testing.T) {
	cfg := loadConfig(t, "")
	assert.Equal(t, NewFactory().CreateDefaultConfig(), cfg)
	require.NoError(t, confmap.Validate(cfg))
	assert.Equal(t, 30*time.Second, cfg.ControllerConfig.CollectionInterval)
	assert.Equal(t, 250000, cfg.MaxPointsPerScrape)
	io := section[iostatscraper.Config](cfg, "iostat")
	assert.True(t, io.Enabled)
	assert.Equal(t, []string{"disk", "dm", "md"}, io.DeviceClasses)
	sm := section[smartscraper.Config](cfg, "smart")
	assert.True(t, sm.Enabled)
	assert.Equal(t, 5*time.Minute, sm.Interval)
	assert.Equal(t, "standby", sm.Standby)
	assert.Equal(t, 10*time.Second, sm.Timeout)
	assert.Empty(t, sm.Devices)
	assert.Empty(t, sm.CloudLimits)
	assert.InDelta(t, 0.9, sm.CloudNear, 0, "near a limit from 90 % of it")
}

func TestConfigCustom(t *testing.T) {
	cfg := loadConfig(t, "custom")
	require.NoError(t, confmap.Validate(cfg))
	assert.Equal(t, 15*time.Second, cfg.ControllerConfig.CollectionInterval)
	assert.Equal(t, "/", cfg.RootPath)
	assert.Equal(t, 5000, cfg.MaxPointsPerScrape)
	io := section[iostatscraper.Config](cfg, "iostat")
	assert.Equal(t, []string{"sd[a-z]+", "nvme[0-9]+n[0-9]+"}, io.Devices.Include)
	assert.Equal(t, []string{"disk", "partition"}, io.DeviceClasses)
	sm := section[smartscraper.Config](cfg, "smart")
	assert.Equal(t, time.Hour, sm.Interval)
	assert.Equal(t, "idle", sm.Standby)
	assert.Equal(t, 3*time.Second, sm.Timeout)
	assert.Equal(t, "/etc/otelcol-diskhealth/drivedb.h", sm.DriveDB)
	assert.Equal(t, match.Config{Exclude: []string{"sdz"}}, sm.Devices)
	assert.InDelta(t, 0.8, sm.CloudNear, 0)
	assert.Equal(t, []smartscraper.CloudLimit{{Serial: "vol-0123456789abcdef0", IOPS: 3000, Throughput: 131072000}, {Device: "nvme2", IOPS: 16000}}, sm.CloudLimits)
}

// TestConfigRoundTrip: Marshal writes the keys Unmarshal reads, the shared metrics: and
// resource_attributes: keys included.
func TestConfigRoundTrip(t *testing.T) {
	for _, name := range []string{"custom", "metrics", "filesystem"} {
		cfg := loadConfig(t, name)
		conf := confmap.New()
		require.NoError(t, cfg.Marshal(conf))
		back := createDefaultConfig().(*Config)
		require.NoError(t, conf.Unmarshal(back))
		assert.Equal(t, cfg.ControllerConfig, back.ControllerConfig)
		for _, r := range registry {
			for _, part := range []func(*Config) any{
				func(c *Config) any { return c.sections[r.name] },
				func(c *Config) any { return sharedPart(c.sections[r.name], metricsKey) },
				func(c *Config) any { return sharedPart(c.sections[r.name], resourceAttributesKey) },
			} {
				if part(cfg) == nil {
					continue
				}
				want, err := marshalled(part(cfg))
				require.NoError(t, err)
				got, err := marshalled(part(back))
				require.NoError(t, err)
				assert.Equal(t, want, got, "%s: %s", name, r.name)
			}
		}
	}
}

// TestConfigLatency: latency is on by default (it reports nothing where BPF cannot load), per cgroup
// off, and its devices are iostat's: the filter and classes of the iostat section reach it.
func TestConfigLatency(t *testing.T) {
	def := section[latencyscraper.Config](loadConfig(t, ""), "latency")
	assert.True(t, def.Enabled)
	assert.False(t, def.DeviceTime)
	assert.Equal(t, 64, def.MaxDevices)
	assert.Equal(t, latencyscraper.PerCgroupConfig{TopN: 10, MaxCgroups: 1024, NoisyNeighbor: latencyscraper.NoisyNeighborConfig{
		Enabled: true, K: 3, Share: 0.5, MinVictimIOs: 20}}, def.PerCgroup)

	cfg := loadConfig(t, "latency")
	require.NoError(t, confmap.Validate(cfg))
	var lat *latencyscraper.Config
	for _, s := range cfg.sources(nil, nil, nil, nil) {
		if s.name == "latency" {
			lat = s.cfg.(*latencyscraper.Config)
		}
	}
	require.NotNil(t, lat)
	assert.True(t, lat.DeviceTime)
	assert.Equal(t, 8, lat.MaxDevices)
	assert.Equal(t, latencyscraper.PerCgroupConfig{Enabled: true, TopN: 5, MaxCgroups: 1024, NoisyNeighbor: latencyscraper.NoisyNeighborConfig{
		Enabled: true, K: 4, Share: 0.7, MinVictimIOs: 20}}, lat.PerCgroup)
	assert.Equal(t, match.Config{Include: []string{"nvme[0-9]+n[0-9]+", "loop[0-9]+"}}, lat.Devices)
	assert.Equal(t, []string{"disk", "loop"}, lat.DeviceClasses)
	assert.Equal(t, "/", lat.RootPath)

	err := confmap.Validate(loadConfig(t, "bad_latency"))
	require.ErrorContains(t, err, "latency.max_devices: 0 is out of range, want 1 to 1024")
}

func TestConfigFilesystem(t *testing.T) {
	cfg := loadConfig(t, "filesystem")
	require.NoError(t, confmap.Validate(cfg))
	fs := section[filesystemscraper.Config](cfg, "filesystem")
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
		"bad_regexp":          `iostat.devices.include[0]: invalid regular expression "sd[a-"`,
		"bad_class":           `iostat.device_classes[1]: unknown device class "floppy"`,
		"negative_interval":   `collection_interval`,
		"bad_filesystem":      `filesystem.`,
		"negative_max_points": `max_points_per_scrape: -1 data points: want 0 (no bound) or more`,
		"missing_root":        `root_path: "/nonexistent/hostfs": stat /nonexistent/hostfs: no such file or directory`,
		// Every error of a section carries its full key, not only the first.
		"bad_smart": "smart.interval: 0s (0 ns) is below the minimum of 100ms; a number without a unit is read as nanoseconds: write the unit, e.g. 30s\nsmart.timeout: must be positive, got -1s\nsmart.standby: standby \"sleep\": want never, standby or idle\n" +
			`smart.devices.include[0]: invalid regular expression "nvme("`,
		// A volume's limits: each entry's problems under its index; an EBS volume id with or without its dash is one volume.
		"bad_cloud_limits": "smart.cloud_near: 1.5: want a share of the limit above 0 and at most 1 (default 0.9)" +
			"\nsmart.cloud_limits[0]: names no volume: set serial (the EBS volume id, vol-…) or device (the NVMe controller, nvme1)" +
			"\nsmart.cloud_limits[1]: iops -1, throughput 0: a limit is a finite number, not negative" +
			"\nsmart.cloud_limits[2]: no limit: set iops (operations/s) or throughput (bytes/s)" +
			"\nsmart.cloud_limits[2]: the same volume as smart.cloud_limits[1]; only the first would be used" +
			"\nsmart.cloud_limits[3]: iops 0, throughput NaN: a limit is a finite number, not negative",
	} {
		t.Run(name, func(t *testing.T) {
			err := confmap.Validate(loadConfig(t, name))
			require.Error(t, err)
			assert.Contains(t, err.Error(), want)
		})
	}
}

// TestConfigRefusesWhatCannotBeMeant: a bare number read as nanoseconds, an interval below the minimum,
// an empty device_classes while a source uses it, every source off: each refused under its key.
func TestConfigRefusesWhatCannotBeMeant(t *testing.T) {
	for name, want := range map[string]string{
		"bare_interval":         "collection_interval: 30ns (30 ns) is below the minimum of 100ms; a number without a unit is read as nanoseconds: write the unit, e.g. 30s",
		"nanosecond_smart":      "smart.interval: 1ns (1 ns) is below the minimum of 100ms",
		"empty_classes":         "iostat.device_classes: empty, so no device would be reported: leave the key out for the default (disk, dm, md), or set iostat.enabled: false",
		"empty_classes_latency": "latency: covers the devices of iostat.device_classes, which is empty",
	} {
		t.Run(name, func(t *testing.T) {
			err := confmap.Validate(loadConfig(t, name))
			require.Error(t, err)
			assert.Contains(t, err.Error(), want)
		})
	}
	// Every source off, written as a user would: each source's enabled key named in the refusal.
	allOff := NewFactory().CreateDefaultConfig().(*Config)
	require.NoError(t, confmap.NewFromStringMap(Only()).Unmarshal(allOff))
	keys := make([]string, 0, len(registry))
	for _, name := range Sources() {
		keys = append(keys, name+".enabled")
	}
	require.ErrorContains(t, confmap.Validate(allOff), "every source is off ("+strings.Join(keys, ", ")+": all false): the receiver would collect nothing")
	// Nothing uses an empty class list when iostat and latency are both off; the minimum itself is valid.
	require.NoError(t, confmap.Validate(loadConfig(t, "empty_classes_off")))
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.ControllerConfig.CollectionInterval = 100 * time.Millisecond
	section[smartscraper.Config](cfg, "smart").Interval = 100 * time.Millisecond
	require.NoError(t, confmap.Validate(cfg))
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
	assert.True(t, enabled(def.sections["pressure"]))
	cg := section[cgroupsscraper.Config](def, "cgroups")
	assert.True(t, cg.Enabled)
	assert.Equal(t, 10, cg.TopN)
	assert.Equal(t, 5, cg.MaxDepth)

	cfg := loadConfig(t, "cgroups")
	require.NoError(t, confmap.Validate(cfg))
	assert.False(t, enabled(cfg.sections["pressure"]))
	cg = section[cgroupsscraper.Config](cfg, "cgroups")
	assert.Equal(t, 3, cg.TopN)
	assert.Equal(t, 4, cg.MaxDepth)
	assert.Equal(t, match.Config{Include: []string{"nvme[0-9]+n[0-9]+", "loop[0-9]+"}}, cg.Devices)
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
// source's metrics and resource attributes, and a name two sources know (hw.errors) switches both.
func TestConfigMetricsReachEverySource(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	sub, err := cm.Sub("disk_health/metrics")
	require.NoError(t, err)
	reached := checkShared(t, sub)
	assert.Equal(t, 2, reached["hw.errors"], "hw.errors is one key for the two sources that emit it")

	// Every source's first metric, switched from its default: each reaches its source.
	def := createDefaultConfig().(*Config)
	given := map[string]any{}
	for _, r := range registry {
		part := sharedPart(def.sections[r.name], metricsKey)
		require.NotNil(t, part, r.name)
		names := sortedNames(part)
		m, err := marshalled(part)
		require.NoError(t, err)
		given[names[0]] = map[string]any{"enabled": !m[names[0]].(map[string]any)["enabled"].(bool)}
	}
	checkShared(t, confmap.NewFromStringMap(map[string]any{metricsKey: given}))

	for _, s := range loadConfig(t, "metrics").sources(nil, nil, nil, nil) {
		assert.Equal(t, "/", *field(s.cfg, rootPathField).(*string), s.name)
		if p, ok := field(s.cfg, signsField).(**signs.Board); ok {
			assert.Nil(t, *p, "a table built without a board hands none")
		}
	}

	sub, err = cm.Sub("disk_health/unknown_metric")
	require.NoError(t, err)
	err = sub.Unmarshal(NewFactory().CreateDefaultConfig())
	require.ErrorContains(t, err, "system.disk.no_such_thing")
}

// checkShared unmarshals conf and checks that every source's metrics and resource attributes are its
// defaults but for the names conf sets, which are as conf sets them; every name conf sets reaches a
// source. It returns how many sources each name reached.
func checkShared(t *testing.T, conf *confmap.Conf) map[string]int {
	t.Helper()
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, conf.Unmarshal(cfg))
	require.NoError(t, confmap.Validate(cfg))
	def := createDefaultConfig().(*Config)
	reached := map[string]int{}
	for _, key := range []string{metricsKey, resourceAttributesKey} {
		given, err := conf.Sub(key)
		require.NoError(t, err)
		for _, r := range registry {
			part := sharedPart(cfg.sections[r.name], key)
			if part == nil {
				continue
			}
			got, err := marshalled(part)
			require.NoError(t, err)
			want, err := marshalled(sharedPart(def.sections[r.name], key))
			require.NoError(t, err)
			for name, v := range given.ToStringMap() {
				if w, ok := want[name].(map[string]any); ok {
					maps.Copy(w, v.(map[string]any))
					reached[name]++
				}
			}
			assert.Equal(t, want, got, "%s of %s", key, r.name)
		}
		for name := range given.ToStringMap() {
			assert.Positive(t, reached[name], "%s.%s reached no source", key, name)
		}
	}
	return reached
}

func sortedNames(part any) []string {
	var names []string
	for n := range settingNames(part) {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// TestConfigEmptyPatternsRejected (issue 14, item 7): an empty pattern (`include: [""]`) validated and
// matched nothing; every filter of every source now rejects one, naming the full key as the user wrote it.
func TestConfigEmptyPatternsRejected(t *testing.T) {
	given := map[string]any{}
	var keys []string
	for _, r := range registry {
		t := reflect.TypeOf(createDefaultConfig().(*Config).sections[r.name]).Elem()
		filters := map[string]any{}
		for i := range t.NumField() {
			if name := t.Field(i).Tag.Get("mapstructure"); t.Field(i).Type == reflect.TypeFor[match.Config]() && name != "-" {
				filters[name] = map[string]any{"include": []any{""}}
				keys = append(keys, r.name+"."+name+".include[0]")
			}
		}
		if len(filters) > 0 {
			given[r.name] = filters
		}
	}
	require.GreaterOrEqual(t, len(given), 4, "the sources with a filter: %v", keys)
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	require.NoError(t, confmap.NewFromStringMap(given).Unmarshal(cfg))
	err := confmap.Validate(cfg)
	require.Error(t, err)
	for _, key := range keys {
		assert.Contains(t, err.Error(), key+": empty pattern")
	}
}
