package diskhealthreceiver // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver"

import (
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/scraper"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/cgroupsscraper"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filesystemscraper"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/iostatscraper"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/latencyscraper"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/pressurescraper"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/stackscraper"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/signs"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/tick"
)

// source is one data source as the receiver runs it.
type source struct {
	name     string // the config section, and the scraper's type
	enabled  bool
	validate func(key string) error
	factory  scraper.Factory
	cfg      component.Config // the section, with the top-level keys filled in
	// interval replaces collection_interval for a source with its own (SMART); such a source bounds
	// its own reads, so the receiver's scrape timeout does not apply to it either.
	interval time.Duration
	// events: the source also sends log events, so it runs for a logs pipeline alone. A metrics-only
	// source never runs without a metrics pipeline.
	events bool
}

// sources is the table of every source, each section completed with root_path and its part of the
// metrics and resource_attributes keys. events receives the health events of SMART and stack (nil:
// none). board is the signs board shared by the sources of one receiver: stack posts each physical
// disk's kernel and filesystem error counters on it, SMART weighs them in that disk's verdict (nil: no
// sharing, as for validation). snaps is the /proc/diskstats and identity snapshot shared by iostat,
// latency and cgroups, each through its own reader at its own interval (nil: each reads its own).
func (cfg *Config) sources(events consumer.Logs, board *signs.Board, snaps *tick.Shared) []source {
	root := cfg.rootPath()
	interval := cfg.ControllerConfig.CollectionInterval

	io := cfg.IOStat
	io.RootPath = root
	io.MetricsBuilderConfig.Metrics, io.MetricsBuilderConfig.ResourceAttributes = cfg.Metrics.IOStat, cfg.ResourceAttributes.IOStat
	io.Tick = snaps.Reader(interval)

	fs := cfg.Filesystem
	fs.RootPath = root
	fs.MetricsBuilderConfig.Metrics, fs.MetricsBuilderConfig.ResourceAttributes = cfg.Metrics.Filesystem, cfg.ResourceAttributes.Filesystem

	sm := cfg.SMART
	sm.RootPath = root
	sm.MetricsBuilderConfig.Metrics, sm.MetricsBuilderConfig.ResourceAttributes = cfg.Metrics.SMART, cfg.ResourceAttributes.SMART
	sm.Signs = board

	ps := cfg.Pressure
	ps.RootPath = root
	ps.Metrics = cfg.Metrics.Pressure

	cg := cfg.Cgroups
	cg.RootPath = root
	cg.MetricsBuilderConfig.Metrics, cg.MetricsBuilderConfig.ResourceAttributes = cfg.Metrics.Cgroups, cfg.ResourceAttributes.Cgroups
	cg.Tick = snaps.Reader(interval)

	lat := cfg.Latency
	lat.RootPath = root
	lat.Metrics = cfg.Metrics.Latency
	// Latency covers the devices iostat reports: the filter is written once, in the iostat section.
	lat.Devices, lat.DeviceClasses = cfg.IOStat.Devices, cfg.IOStat.DeviceClasses
	lat.Signs = board
	lat.Tick = snaps.Reader(interval)

	st := cfg.Stack
	st.RootPath = root
	st.MetricsBuilderConfig.Metrics = cfg.Metrics.Stack
	st.Signs = board

	return []source{
		{name: "iostat", enabled: io.Enabled, validate: io.Validate, factory: iostatscraper.NewFactory(), cfg: &io},
		{name: "filesystem", enabled: fs.Enabled, validate: fs.Validate, factory: filesystemscraper.NewFactory(), cfg: &fs},
		{name: "smart", enabled: sm.Enabled, validate: sm.Validate, factory: smartscraper.NewFactoryWithEvents(events), cfg: &sm,
			interval: sm.Interval, events: true},
		{name: "pressure", enabled: ps.Enabled, validate: ps.Validate, factory: pressurescraper.NewFactory(), cfg: &ps},
		{name: "cgroups", enabled: cg.Enabled, validate: cg.Validate, factory: cgroupsscraper.NewFactory(), cfg: &cg},
		{name: "latency", enabled: lat.Enabled, validate: lat.Validate, factory: latencyscraper.NewFactory(), cfg: &lat},
		{name: "stack", enabled: st.Enabled, validate: st.Validate, factory: stackscraper.NewFactoryWithEvents(events), cfg: &st, events: true},
	}
}

// defaultSections fills the receiver's defaults from each source's own.
func defaultSections(cfg *Config) {
	cfg.IOStat = *iostatscraper.NewFactory().CreateDefaultConfig().(*iostatscraper.Config)
	cfg.Filesystem = *filesystemscraper.NewFactory().CreateDefaultConfig().(*filesystemscraper.Config)
	cfg.SMART = *smartscraper.NewFactory().CreateDefaultConfig().(*smartscraper.Config)
	cfg.Pressure = *pressurescraper.NewFactory().CreateDefaultConfig().(*pressurescraper.Config)
	cfg.Cgroups = *cgroupsscraper.NewFactory().CreateDefaultConfig().(*cgroupsscraper.Config)
	cfg.Latency = *latencyscraper.NewFactory().CreateDefaultConfig().(*latencyscraper.Config)
	cfg.Stack = *stackscraper.NewFactory().CreateDefaultConfig().(*stackscraper.Config)
	cfg.Metrics = MetricsConfig{
		IOStat: cfg.IOStat.MetricsBuilderConfig.Metrics, Filesystem: cfg.Filesystem.MetricsBuilderConfig.Metrics,
		SMART: cfg.SMART.MetricsBuilderConfig.Metrics, Pressure: cfg.Pressure.Metrics, Cgroups: cfg.Cgroups.MetricsBuilderConfig.Metrics,
		Latency: cfg.Latency.Metrics, Stack: cfg.Stack.MetricsBuilderConfig.Metrics,
	}
	cfg.ResourceAttributes = ResourceAttributesConfig{
		IOStat: cfg.IOStat.MetricsBuilderConfig.ResourceAttributes, Filesystem: cfg.Filesystem.MetricsBuilderConfig.ResourceAttributes,
		SMART: cfg.SMART.MetricsBuilderConfig.ResourceAttributes, Cgroups: cfg.Cgroups.MetricsBuilderConfig.ResourceAttributes,
	}
}
