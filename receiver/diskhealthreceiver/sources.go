package diskhealthreceiver // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver"

import (
	"slices"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/scraper"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/signs"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/tick"
)

// source is one data source as the receiver runs it.
type source struct {
	name    string // the config section, and the scraper's type
	enabled bool
	factory scraper.Factory
	cfg     component.Config // the section, with the top-level keys filled in
	// interval replaces collection_interval for a source with its own (see registration.interval).
	interval time.Duration
	events   bool // see registration.events
}

// sources is the table of every source of the registry, each section completed with root_path (its
// part of the metrics and resource_attributes keys is already in it). events receives the health
// events of the sources that send them (nil: none). board is the signs board shared by the sources of
// one receiver that need it (nil: no sharing). snaps is the /proc/diskstats and identity snapshot of one
// receiver: each source that needs it reads it through a reader of its own, at its own interval (nil:
// each reads its own); mounts is the mount snapshot, shared the same way.
func (cfg *Config) sources(events consumer.Logs, board *signs.Board, snaps *tick.Shared, mounts *fsusage.Shared) []source {
	root := cfg.rootPath()
	out := make([]source, 0, len(registry))
	for _, r := range registry {
		var b *signs.Board
		if slices.Contains(r.needs, signsBoard) {
			b = board
		}
		c := completed(cfg.sections[r.name], root, cfg.Conventions, b)
		if r.wire != nil {
			r.wire(c, cfg.sections)
		}
		src := source{name: r.name, enabled: enabled(c), factory: r.factory(events), cfg: c, events: r.events}
		if r.interval != nil {
			src.interval = r.interval(c)
		}
		every := src.interval
		if every == 0 {
			every = cfg.ControllerConfig.CollectionInterval
		}
		if snaps != nil && src.enabled && slices.Contains(r.needs, diskstatsSnapshot) {
			*field(c, tickField).(**tick.Reader) = snaps.Reader(every)
		}
		if mounts != nil && src.enabled && slices.Contains(r.needs, mountsSnapshot) {
			*field(c, mountsField).(**fsusage.Reader) = mounts.Reader(every)
		}
		out = append(out, src)
	}
	return out
}
