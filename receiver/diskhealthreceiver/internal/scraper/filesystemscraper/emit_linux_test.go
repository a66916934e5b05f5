package filesystemscraper

import (
	"testing"

	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage/fsusagetest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/filter"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filesystemscraper/internal/metadata"
)

// scrapeHost scrapes the fsusagetest.HostMountinfo table once under the metric configuration's edits.
func scrapeHost(t *testing.T, edit func(*metadata.MetricsBuilderConfig)) pmetric.Metrics {
	t.Helper()
	return scrapeHostConfig(t, func(cfg *Config) { edit(&cfg.MetricsBuilderConfig) })
}

// scrapeHostConfig scrapes the fsusagetest.HostMountinfo table once under the section's edits.
func scrapeHostConfig(t *testing.T, edit func(*Config)) pmetric.Metrics {
	t.Helper()
	root := t.TempDir()
	clock := t0
	md, err := newTestFSScraperConfig(t, root, fsusagetest.HostMountinfo, fsusagetest.HostStatfs(root), &clock, edit).scrape(t.Context())
	require.NoError(t, err)
	return md
}

// points returns metric name's points by mount point.

// The generated emitter is the only emission path, so what only the builder used to do is done by it
// for the scraper: an attribute switched off aggregates (used + free + reserved in one point per mount,
// the size), a resource attribute filter drops resources. (generated_emitter_test.go proves the bytes
// equal the builder's for every configuration.)
func TestFSScraperAggregatesAndFilters(t *testing.T) {
	all := scrapeHost(t, func(*metadata.MetricsBuilderConfig) {})
	limits := pdatawalk.ByMountPoint(all, "system.filesystem.limit")
	require.NotEmpty(t, limits)

	summed := pdatawalk.ByMountPoint(scrapeHost(t, func(c *metadata.MetricsBuilderConfig) {
		c.Metrics.SystemFilesystemUsage.EnabledAttributes = []metadata.SystemFilesystemUsageMetricAttributeKey{
			metadata.SystemFilesystemUsageMetricAttributeKeySystemFilesystemMountpoint,
		}
	}), "system.filesystem.usage")
	assert.Len(t, summed, len(limits))
	for mp, limit := range limits {
		require.Len(t, summed[mp], 1, mp)
		assert.Equal(t, limit[0].IntValue(), summed[mp][0].IntValue(), "%s: used + free + reserved is the size", mp)
		assert.Equal(t, 1, summed[mp][0].Attributes().Len())
	}

	filtered := scrapeHost(t, func(c *metadata.MetricsBuilderConfig) {
		c.ResourceAttributes.DiskHealthDiskMajorMinor.MetricsInclude = []filter.Config{{Strict: "259:2"}}
	})
	require.Positive(t, filtered.ResourceMetrics().Len())
	assert.Less(t, filtered.ResourceMetrics().Len(), all.ResourceMetrics().Len())
	for i := range filtered.ResourceMetrics().Len() {
		mm, _ := filtered.ResourceMetrics().At(i).Resource().Attributes().Get("disk_health.disk.major_minor")
		assert.Equal(t, "259:2", mm.Str())
	}
}
