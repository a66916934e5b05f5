package iostatscraper

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	dhtest "github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/iostatscraper/internal/metadata"
)

// The direct emitter writes exactly what the generated builder writes: same bytes, for every fixture
// root and for configurations that switch metrics and resource attributes off.
func TestDirectMatchesBuilder(t *testing.T) {
	allClasses := []string{"disk", "partition", "dm", "md", "loop", "ram", "other"}
	configs := map[string]func(*Config){
		"default":     func(*Config) {},
		"all-classes": func(c *Config) { c.DeviceClasses = allClasses },
		"no-gauges": func(c *Config) {
			m := &c.MetricsBuilderConfig.Metrics
			m.SystemDiskIoRate.Enabled, m.SystemDiskMergedRate.Enabled, m.SystemDiskMergedRatio.Enabled = false, false, false
			m.SystemDiskOperationAverageSize.Enabled, m.SystemDiskOperationAverageTime.Enabled = false, false
			m.SystemDiskOperationRate.Enabled, m.SystemDiskQueueLength.Enabled, m.SystemDiskUtilization.Enabled = false, false, false
		},
		"some-off": func(c *Config) {
			m := &c.MetricsBuilderConfig.Metrics
			m.SystemDiskIo.Enabled, m.SystemDiskDiscardOperations.Enabled, m.SystemDiskFlushOperations.Enabled = false, false, false
			m.SystemDiskOperationAverageTime.Enabled, m.SystemDiskLimit.Enabled, m.SystemDiskUtilization.Enabled = false, false, false
			c.MetricsBuilderConfig.ResourceAttributes.DiskMajorMinor.Enabled = false
			c.MetricsBuilderConfig.ResourceAttributes.HwSerialNumber.Enabled = false
			c.DeviceClasses = allClasses
		},
		"only-discard": func(c *Config) {
			c.MetricsBuilderConfig.Metrics = metadata.MetricsConfig{}
			c.MetricsBuilderConfig.Metrics.SystemDiskDiscardIo = metadata.DefaultMetricsConfig().SystemDiskDiscardIo
			c.DeviceClasses = allClasses
		},
	}
	for _, root := range []string{"k4.15-sata", "k5.4-nvme", "k6.8-nvme-raid"} {
		for name, edit := range configs {
			t.Run(root+"/"+name, func(t *testing.T) {
				f := newFixtureRoot(t, root)
				cfg := testConfig(f.root)
				edit(cfg)
				clock := t0
				direct, builder := newTestIOScraper(t, cfg, &clock), newTestIOScraper(t, cfg, &clock)
				require.NotNil(t, direct.direct)
				builder.direct = nil
				for i, stats := range []string{"diskstats.1", "diskstats.2", "diskstats.2"} {
					clock = t0.Add(time.Duration(i) * 10 * time.Second)
					f.copyProc(stats, "diskstats")
					want, err := builder.scrape(t.Context())
					require.NoError(t, err)
					got, err := direct.scrape(t.Context())
					require.NoError(t, err)
					dhtest.AssertSameBytes(t, want, got)
				}
			})
		}
	}
}

// Where the builder aggregates (an attribute switched off) or filters resources, the scraper uses it.
func TestDirectOnlyWhereExact(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.MetricsBuilderConfig.Metrics.SystemDiskIo.EnabledAttributes = []metadata.SystemDiskIoMetricAttributeKey{metadata.SystemDiskIoMetricAttributeKeySystemDevice}
	clock := t0
	assert.Nil(t, newTestIOScraper(t, cfg, &clock).direct)
	cfg.MetricsBuilderConfig.Metrics.SystemDiskIo.Enabled = false
	assert.NotNil(t, newTestIOScraper(t, cfg, &clock).direct)
}

// TestCountersPastSignedRangeNeverNegative: u64 counters at and past 2^63 and sectors whose bytes pass
// 2^64 reach the int64 points clamped (system.disk.operations was -9.22e18, system.disk.io -512), in the
// direct emitter and the builder alike.
func TestCountersPastSignedRangeNeverNegative(t *testing.T) {
	f := newFixtureRoot(t, "k5.4-nvme")
	cfg := testConfig(f.root)
	clock := t0
	direct, builder := newTestIOScraper(t, cfg, &clock), newTestIOScraper(t, cfg, &clock)
	builder.direct = nil
	for i, line := range []string{
		" 259 0 nvme0n1 9223372036854775808 18446744073709551615 36028797018963969 1 9223372036854775807 0 18014398509481984 1 0 1 1 18446744073709551615 0 36028797018963968 0 9223372036854775809 0\n",
		" 259 0 nvme0n1 9223372036854775809 18446744073709551615 36028797018963970 2 9223372036854775808 0 18014398509481985 2 0 2 2 18446744073709551615 0 36028797018963969 0 9223372036854775810 0\n",
	} {
		clock = t0.Add(time.Duration(i) * 10 * time.Second)
		f.writeProc("diskstats", line)
		want, err := builder.scrape(t.Context())
		require.NoError(t, err)
		got, err := direct.scrape(t.Context())
		require.NoError(t, err)
		dhtest.AssertSameBytes(t, want, got)
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
