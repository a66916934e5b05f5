package diskhealthreceiver // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver"

import (
	"slices"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/scraper"
	"go.uber.org/zap"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/capacityscraper"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/cgroupsscraper"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filelatscraper"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filesystemscraper"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/iostatscraper"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/latencyscraper"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/netfsscraper"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/pressurescraper"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/stackscraper"
)

// registry is every source of the receiver, each declared once, in the order the receiver starts them.
// Everything else that names the sources (the config, its defaults and validation, the controllers,
// the tests, the benchmarks, the QEMU guests) derives from it; TestNoHandWrittenSourceList fails on a
// list written elsewhere.
var registry = register(
	registration{factory: metricsOnly(iostatscraper.NewFactory), needs: []input{diskstatsSnapshot}},
	registration{factory: metricsOnly(filesystemscraper.NewFactory), needs: []input{mountsSnapshot}},
	registration{factory: capacityscraper.NewFactoryWithEvents, events: true, needs: []input{mountsSnapshot}, wire: capacityWiring},
	registration{factory: smartscraper.NewFactoryWithEvents, events: true, needs: []input{signsBoard}, interval: smartInterval},
	registration{factory: metricsOnly(pressurescraper.NewFactory)},
	registration{factory: metricsOnly(cgroupsscraper.NewFactory), needs: []input{diskstatsSnapshot}},
	registration{factory: latencyscraper.NewFactoryWithEvents, events: true, needs: []input{diskstatsSnapshot, signsBoard}, wire: iostatDevices},
	registration{factory: metricsOnly(filelatscraper.NewFactory)}, // off by default: its probe costs every system call
	registration{factory: stackscraper.NewFactoryWithEvents, events: true, needs: []input{signsBoard}},
	registration{factory: netfsscraper.NewFactoryWithEvents, events: true},
)

// capacityWiring: capacity reads the mounts the filesystem section selects (the one snapshot both read),
// and its checkpoint writers read cgroups within the cgroups section's bounds.
func capacityWiring(section component.Config, sections map[string]component.Config) {
	c, fs, cg := section.(*capacityscraper.Config), sections["filesystem"].(*filesystemscraper.Config), sections["cgroups"].(*cgroupsscraper.Config)
	c.Selection = fs.Selection
	c.CgroupTopN, c.CgroupMaxDepth = cg.TopN, cg.MaxDepth
}

// newMounts is the mount snapshot of one receiver's sources, of the mounts the filesystem section
// selects under root; statfs replaces unix.Statfs (nil: none; tests count calls).
func newMounts(sections map[string]component.Config, root string, logger *zap.Logger, statfs fsusage.StatfsFunc) (*fsusage.Shared, error) {
	fs := sections["filesystem"].(*filesystemscraper.Config)
	cfg, err := fs.CollectorConfig("filesystem", root, filesystemscraper.LogStateChange(logger))
	if err != nil {
		return nil, err
	}
	cfg.Prober.Statfs = statfs
	return fsusage.NewShared(cfg, time.Now), nil
}

// smartInterval: SMART reads each disk with its own, longer interval (smart.interval).
func smartInterval(section component.Config) time.Duration {
	return section.(*smartscraper.Config).Interval
}

// iostatDevices: latency covers the devices iostat reports, so the filter is written once, in the
// iostat section.
func iostatDevices(section component.Config, sections map[string]component.Config) {
	lat, io := section.(*latencyscraper.Config), sections["iostat"].(*iostatscraper.Config)
	lat.Devices, lat.DeviceClasses = io.Devices, io.DeviceClasses
}

// input is something a source reads that other sources read too, shared by the sources of one
// receiver.
type input string

const (
	// diskstatsSnapshot: /proc/diskstats and the block devices' identity, read once per tick; the
	// section's Tick field receives a reader of it.
	diskstatsSnapshot input = "diskstats"
	// mountsSnapshot: the mount table and every selected mount's statfs, domain and forecast, read once per
	// tick (fsusage.Shared); the section's Mounts field receives a reader of it.
	mountsSnapshot input = "mounts"
	// signsBoard: the board where stack and latency post each physical disk's error counters and SMART
	// weighs them in that disk's verdict; the section's Signs field receives it.
	signsBoard input = "signs board"
)

// registration declares one source.
type registration struct {
	// name is the source's config key and its scraper's type, taken from the factory.
	name string
	// factory creates the scraper factory; events receives the source's log events (nil: none).
	factory func(events consumer.Logs) scraper.Factory
	// events: the source also sends log events, so it runs for a logs pipeline alone. A metrics-only
	// source never runs without a metrics pipeline.
	events bool
	// needs are the shared inputs the source reads.
	needs []input
	// interval, if set, replaces collection_interval for the source; such a source bounds its own
	// reads, so the receiver's scrape timeout does not apply to it either.
	interval func(section component.Config) time.Duration
	// wire, if set, completes the source's section from the other sections (by name).
	wire func(section component.Config, sections map[string]component.Config)
}

// metricsOnly adapts the factory of a source that sends no events.
func metricsOnly(f func() scraper.Factory) func(consumer.Logs) scraper.Factory {
	return func(consumer.Logs) scraper.Factory { return f() }
}

// register names each registration after its scraper's type.
func register(regs ...registration) []registration {
	for i := range regs {
		regs[i].name = regs[i].factory(nil).Type().String()
	}
	return regs
}

// Sources returns the config keys of the receiver's sources, in the order it starts them.
func Sources() []string {
	names := make([]string, len(registry))
	for i, r := range registry {
		names[i] = r.name
	}
	return names
}

// MountSources returns the config keys of the sources that read the mount snapshot, in the order the
// receiver starts them: together their output is the receiver's for mounts (the filesystem source first,
// the one whose section selects the mounts).
func MountSources() []string {
	var names []string
	for _, r := range registry {
		if slices.Contains(r.needs, mountsSnapshot) {
			names = append(names, r.name)
		}
	}
	return names
}

// Only returns the receiver configuration, as a user writes it, that enables the named sources and
// disables every other one ({"iostat": {"enabled": true}, "smart": {"enabled": false}, …}). A name
// that is no source stays in the map, so that unmarshalling it fails naming it.
func Only(names ...string) map[string]any {
	m := map[string]any{}
	for _, r := range registry {
		m[r.name] = map[string]any{"enabled": false}
	}
	for _, n := range names {
		m[n] = map[string]any{"enabled": true}
	}
	return m
}
