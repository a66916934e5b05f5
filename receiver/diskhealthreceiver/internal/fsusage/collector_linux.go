package fsusage // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"

import (
	"context"
	"time"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/bounded"
)

// Collector is the whole filesystem-usage source: it lists mounts from the
// cached mount table, statfs's them with deadlines, finds the domain each
// lands on and forecasts time to full. Collect is meant to be called by one scraper, not concurrently.
type Collector struct {
	table      *MountTable
	prober     *Prober
	forecaster *Forecaster[MountKey]
	uuids      *UUIDIndex
}

// NewCollector opens the mount table and starts nothing else: the prober
// runs goroutines only during a scrape and for stuck mounts.
func NewCollector(cfg Config) (*Collector, error) {
	forecaster, err := NewForecaster[MountKey](cfg.Forecast)
	if err != nil {
		return nil, err
	}
	prober, err := NewProber(cfg.Prober)
	if err != nil {
		return nil, err
	}
	table, err := OpenMountTable(TableConfig{
		RootPath:    cfg.RootPath,
		Filter:      cfg.Filter,
		Dedupe:      cfg.Dedupe,
		RereadEvery: cfg.RereadEvery,
		OnReload:    cfg.OnTableReload,
	})
	if err != nil {
		prober.Close()
		return nil, err
	}
	root := cfg.RootPath
	if root == "" {
		root = "/"
	}
	uuids := NewUUIDIndex(bounded.NewDirFS(root, bounded.Attr))
	return &Collector{table: table, prober: prober, forecaster: forecaster, uuids: uuids}, nil
}

// Collect returns one Result per selected mount. A mount that cannot be
// measured (hung, gone, forbidden) is a Result with that status, never an
// error. The error is the mount table's: when it cannot be read the last
// good table is used, and with none there are no results.
func (c *Collector) Collect(ctx context.Context, now time.Time) ([]Result, error) {
	mounts, err := c.table.Mounts()
	results := c.prober.Probe(ctx, mounts)
	c.uuids.Refresh()
	for i := range results {
		r := &results[i]
		r.Domain = c.uuids.Domain(r.Mount)
		if r.Status == StatusOK && r.Usage.Limit > 0 {
			r.Forecast = c.forecaster.Observe(r.Mount.Key(), now, r.Usage.Free, r.Usage.Limit)
		}
	}
	c.forecaster.Prune(now)
	return results, err
}

// Close closes the mount table and stops background re-probes.
func (c *Collector) Close() error {
	c.prober.Close()
	return c.table.Close()
}
