package capacityscraper

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper/scrapertest"

	dhtest "github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage/fsusagetest"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/capacityscraper/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filesystemscraper"
)

// testConfig is the default configuration with the domain series the default leaves to the mounts'
// (domain limit, usage, time to full, the free_blocks headroom) enabled: these tests check them.
func testConfig() *Config {
	cfg := createDefaultConfig()
	m := &cfg.MetricsBuilderConfig.Metrics
	m.DiskHealthFilesystemDomainLimit.Enabled = true
	m.DiskHealthFilesystemDomainUsage.Enabled = true
	m.DiskHealthFilesystemDomainTimeToFull.Enabled = true
	return cfg
}

// newTestCapScraper makes a capacity scraper reading root/proc/1/mountinfo with statfs answered by f.
func newTestCapScraper(t *testing.T, root, mountinfo string, f *fsusagetest.Statfs, clock *time.Time) *capScraper {
	t.Helper()
	return newTestCapScraperWith(t, root, mountinfo, f, clock, func(*metadata.MetricsBuilderConfig) {})
}

// newTestCapScraperWith is newTestCapScraper with the metric configuration edited.
func newTestCapScraperWith(t *testing.T, root, mountinfo string, f *fsusagetest.Statfs, clock *time.Time, edit func(*metadata.MetricsBuilderConfig)) *capScraper {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "proc", "1"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "proc", "1", "mountinfo"), []byte(mountinfo), 0o644))
	cfg := testConfig()
	cfg.RootPath = root
	cfg.StatfsTimeout = 300 * time.Millisecond
	edit(&cfg.MetricsBuilderConfig)
	s, err := newScraper(scrapertest.NewNopSettings(metadata.Type), cfg, nil, func() time.Time { return *clock })
	require.NoError(t, err)
	s.cfg.Prober.Statfs = f.Statfs
	t.Cleanup(func() { require.NoError(t, s.shutdown(t.Context())) })
	return s
}

var t0 = dhtest.T0

// withFilesystem gives s and a filesystem source one mount snapshot, of s's mounts, as the receiver
// does, and returns a scrape of both: the mounts' points (filesystem) and the domains' (capacity) of one
// read. Call it before s's first scrape.
func withFilesystem(t *testing.T, s *capScraper) func() (pmetric.Metrics, error) {
	t.Helper()
	// A minute: both readers take the one read of a tick, even on the wall clock.
	sh := fsusage.NewShared(s.cfg, s.now)
	fcfg := filesystemscraper.NewFactory().CreateDefaultConfig().(*filesystemscraper.Config)
	fcfg.Mounts = sh.Reader(time.Minute)
	fs, err := filesystemscraper.NewFactory().CreateMetrics(t.Context(), scrapertest.NewNopSettings(filesystemscraper.NewFactory().Type()), fcfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, fs.Shutdown(t.Context())) })
	s.snap = sh.Reader(time.Minute)
	return func() (pmetric.Metrics, error) {
		md, err := fs.ScrapeMetrics(t.Context())
		cap, cerr := s.scrape(t.Context())
		cap.ResourceMetrics().MoveAndAppendTo(md.ResourceMetrics())
		return md, errors.Join(err, cerr)
	}
}

// distinctResources counts md's resources by their attributes: each source's batch has its own.
func distinctResources(md pmetric.Metrics) int {
	seen := map[string]bool{}
	for i := range md.ResourceMetrics().Len() {
		seen[fmt.Sprint(md.ResourceMetrics().At(i).Resource().Attributes().AsRaw())] = true
	}
	return len(seen)
}
