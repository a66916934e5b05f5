package iostatscraper

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/filter"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/iostatscraper/internal/metadata"
)

// twoScrapes scrapes the k5.4-nvme fixture twice (the second with gauges) under cfg's edits.
func twoScrapes(t *testing.T, edit func(*Config)) pmetric.Metrics {
	t.Helper()
	f := newFixtureRoot(t, "k5.4-nvme")
	cfg := testConfig(f.root)
	edit(cfg)
	clock := t0
	s := newTestIOScraper(t, cfg, &clock)
	f.copyProc("diskstats.1", "diskstats")
	_, err := s.scrape(t.Context())
	require.NoError(t, err)
	clock = t0.Add(10 * time.Second)
	f.copyProc("diskstats.2", "diskstats")
	md, err := s.scrape(t.Context())
	require.NoError(t, err)
	return md
}

// The generated emitter is the only emission path, so what only the builder used to do is done by it
// for the scraper: an attribute switched off aggregates (read + write in one point), a resource
// attribute filter drops resources. (generated_emitter_test.go proves the bytes equal the builder's.)
func TestIOScraperAggregatesAndFilters(t *testing.T) {
	all := twoScrapes(t, func(*Config) {})
	devices := pdatawalk.Devices(all)
	require.NotEmpty(t, devices)

	summed := twoScrapes(t, func(c *Config) {
		c.MetricsBuilderConfig.Metrics.SystemDiskOperations.EnabledAttributes = []metadata.SystemDiskOperationsMetricAttributeKey{
			metadata.SystemDiskOperationsMetricAttributeKeySystemDevice,
		}
	})
	for _, dev := range devices {
		var got int64
		points := 0
		pdatawalk.ForEachMetric(summed, func(_ pcommon.Resource, m pmetric.Metric) {
			dps := pdatawalk.NumberPoints(m)
			for i := range dps.Len() {
				if d, _ := dps.At(i).Attributes().Get("system.device"); m.Name() == "system.disk.operations" && d.Str() == dev {
					got += dps.At(i).IntValue()
					points++
				}
			}
		})
		assert.Equal(t, 1, points, dev)
		assert.Equal(t, opsOf(all, dev, "read")+opsOf(all, dev, "write"), got, dev)
	}

	filtered := twoScrapes(t, func(c *Config) {
		c.MetricsBuilderConfig.ResourceAttributes.DiskHealthDiskClass.MetricsExclude = []filter.Config{{Strict: "disk"}}
	})
	assert.Less(t, filtered.ResourceMetrics().Len(), all.ResourceMetrics().Len())
	for i := range filtered.ResourceMetrics().Len() {
		c, _ := filtered.ResourceMetrics().At(i).Resource().Attributes().Get("disk_health.disk.class")
		assert.NotEqual(t, "disk", c.Str())
	}
}

// TestCountersPastSignedRangeNeverNegative: u64 counters at and past 2^63 and sectors whose bytes pass
// 2^64 reach the int64 points clamped (system.disk.operations was -9.22e18, system.disk.io -512).
func TestCountersPastSignedRangeNeverNegative(t *testing.T) {
	f := newFixtureRoot(t, "k5.4-nvme")
	cfg := testConfig(f.root)
	clock := t0
	s := newTestIOScraper(t, cfg, &clock)
	for i, line := range []string{
		" 259 0 nvme0n1 9223372036854775808 18446744073709551615 36028797018963969 1 9223372036854775807 0 18014398509481984 1 0 1 1 18446744073709551615 0 36028797018963968 0 9223372036854775809 0\n",
		" 259 0 nvme0n1 9223372036854775809 18446744073709551615 36028797018963970 2 9223372036854775808 0 18014398509481985 2 0 2 2 18446744073709551615 0 36028797018963969 0 9223372036854775810 0\n",
	} {
		clock = t0.Add(time.Duration(i) * 10 * time.Second)
		f.writeProc("diskstats", line)
		got, err := s.scrape(t.Context())
		require.NoError(t, err)
		require.Positive(t, got.DataPointCount())
		pdatawalk.ForEachMetric(got, func(_ pcommon.Resource, m pmetric.Metric) {
			dps := pdatawalk.NumberPoints(m)
			for j := range dps.Len() {
				if dp := dps.At(j); dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
					assert.GreaterOrEqual(t, dp.IntValue(), int64(0), "%s", m.Name())
				}
			}
		})
	}
}
