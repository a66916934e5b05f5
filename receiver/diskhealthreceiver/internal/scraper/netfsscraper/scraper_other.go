//go:build !linux

package netfsscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/netfsscraper"

import (
	"errors"
	"time"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/scraper"
)

// newScraper fails off Linux: the mount table, mountstats, fusectl and the statfs prober are Linux's.
func newScraper(scraper.Settings, *Config, consumer.Logs, func() time.Time) (scraper.Metrics, error) {
	return nil, errors.New("netfs: the NFS and FUSE client statistics are Linux's")
}
