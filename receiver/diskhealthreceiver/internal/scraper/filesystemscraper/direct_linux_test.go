package filesystemscraper

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper/scrapertest"
	"golang.org/x/sys/unix"

	dhtest "github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filesystemscraper/internal/metadata"
)

// The direct emitter writes exactly what the generated builder writes: same bytes (start timestamps
// aside: each builder takes its own at creation, and the direct emitter reads its scraper's), for
// configurations that switch metrics and resource attributes off.
func TestDirectMatchesBuilder(t *testing.T) {
	configs := map[string]func(*metadata.MetricsBuilderConfig){
		"default": func(*metadata.MetricsBuilderConfig) {},
		"all-on": func(c *metadata.MetricsBuilderConfig) {
			c.Metrics.SystemFilesystemTimeToFull.Enabled = true
			c.Metrics.SystemFilesystemUtilization.Enabled = true
			c.Metrics.SystemFilesystemInodesUtilization.Enabled = true
		},
		"some-off": func(c *metadata.MetricsBuilderConfig) {
			c.Metrics.SystemFilesystemStatus.Enabled = false
			c.Metrics.SystemFilesystemLimit.Enabled = false
			c.ResourceAttributes.DiskMajorMinor.Enabled = false
		},
		"only-status": func(c *metadata.MetricsBuilderConfig) {
			c.Metrics = metadata.MetricsConfig{SystemFilesystemStatus: metadata.DefaultMetricsConfig().SystemFilesystemStatus}
		},
	}
	for name, edit := range configs {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			f := hostStatfs(root)
			clock := t0
			newTestFSScraper(t, root, hostMountinfo, f, &clock) // writes the mount table
			mk := func() *fsScraper {
				cfg := createDefaultConfig()
				edit(&cfg.MetricsBuilderConfig)
				cfg.RootPath = root
				cfg.StatfsTimeout = 300 * time.Millisecond
				s2, err := newScraper(scrapertest.NewNopSettings(metadata.Type), cfg, func() time.Time { return clock })
				require.NoError(t, err)
				s2.cfg.Prober.Statfs = f.statfs
				t.Cleanup(func() { require.NoError(t, s2.shutdown(t.Context())) })
				return s2
			}
			direct, builder := mk(), mk()
			require.NotNil(t, direct.direct)
			builder.direct = nil
			for i := range 4 {
				clock = t0.Add(time.Duration(i) * time.Hour)
				f.mu.Lock()
				f.answers[filepath.Join(root, "/data")] = unix.Statfs_t{Type: 0x58465342, Bsize: 4096, Frsize: 4096, Blocks: 100_000_000,
					Bfree: 40_000_000 - uint64(i)*1_000_000, Bavail: 40_000_000 - uint64(i)*1_000_000, Files: 200_000_000, Ffree: 199_000_000}
				f.mu.Unlock()
				want, err := builder.scrape(t.Context())
				require.NoError(t, err)
				got, err := direct.scrape(t.Context())
				require.NoError(t, err)
				dhtest.AssertSameBytes(t, zeroStart(want), zeroStart(got))
			}
		})
	}
}

// zeroStart clears every point's start time: each builder takes its own at creation.
func zeroStart(md pmetric.Metrics) pmetric.Metrics {
	pdatawalk.ForEachMetric(md, func(_ pcommon.Resource, m pmetric.Metric) {
		dps := pdatawalk.NumberPoints(m)
		for k := range dps.Len() {
			dps.At(k).SetStartTimestamp(0)
		}
	})
	return md
}

// Where the builder aggregates (an attribute switched off), the scraper uses it.
func TestDirectOnlyWhereExact(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.RootPath = t.TempDir()
	cfg.MetricsBuilderConfig.Metrics.SystemFilesystemUsage.EnabledAttributes = []metadata.SystemFilesystemUsageMetricAttributeKey{metadata.SystemFilesystemUsageMetricAttributeKeySystemDevice}
	s, err := newScraper(scrapertest.NewNopSettings(metadata.Type), cfg, time.Now)
	require.NoError(t, err)
	assert.Nil(t, s.direct)
}
