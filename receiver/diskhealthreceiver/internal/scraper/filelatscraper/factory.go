package filelatscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filelatscraper"

import (
	"context"
	"path/filepath"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/scraper"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/cgroupio"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/filelat"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filelatscraper/internal/metadata"
)

// NewFactory creates the filelat scraper factory.
func NewFactory() scraper.Factory {
	return scraper.NewFactory(metadata.Type, func() component.Config { return createDefaultConfig() },
		scraper.WithMetrics(func(_ context.Context, set scraper.Settings, cfg component.Config) (scraper.Metrics, error) {
			c := cfg.(*Config)
			s := newScraper(set, c, openFilelat, func() ([]byte, fsusage.View, error) { return fsusage.ReadHostMountInfo(c.RootPath) }, hostCgroups, time.Now)
			return scraper.NewMetrics(s.scrape, scraper.WithStart(s.start), scraper.WithShutdown(s.shutdown))
		}, metadata.MetricsStability))
}

// openFilelat opens the real probe.
func openFilelat(opts filelat.Options) (probe, error) {
	p, err := filelat.Open(opts)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// hostCgroups finds the io/blkio hierarchy under root (the one the probe charges calls in: io on v2,
// blkio on v1 and hybrid hosts) and reads its cgroups by id, as the latency source's per-cgroup probe.
func hostCgroups(root string) (func() (map[uint64]string, error), error) {
	h, err := cgroupio.Detect(filepath.Join(root, "sys", "fs", "cgroup"))
	if err != nil {
		return nil, err
	}
	return func() (map[uint64]string, error) { return cgroupio.IDs(h.Dir) }, nil
}
