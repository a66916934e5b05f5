//go:build !linux

package capacityscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/capacityscraper"

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.uber.org/zap"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
)

// podSHM: pods' memory emptyDirs and memory cgroups exist on Linux only, where the receiver runs; the
// module still builds elsewhere.
type podSHM struct{}

func openPodSHM(*zap.Logger, *Config, fsusage.ProberConfig) (*podSHM, error) {
	return nil, errors.ErrUnsupported
}

func (*podSHM) close() error { return nil }

func (*capScraper) scrapePodSHM(context.Context, pcommon.Timestamp, time.Time) error { return nil }
