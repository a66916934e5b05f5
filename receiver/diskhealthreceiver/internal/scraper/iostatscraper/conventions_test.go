package iostatscraper

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	dhtest "github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
)

// hostmetricsKeys are hostmetrics' disk attribute keys and ours for the same thing.
var hostmetricsKeys = map[string]string{"device": "system.device", "direction": "disk.io.direction"}

// hostmetricsDiskNames are the metrics of hostmetricsreceiver v0.165.1's disk scraper (its
// metadata.yaml), every one enabled by default.
var hostmetricsDiskNames = []string{
	"system.disk.io", "system.disk.io_time", "system.disk.merged", "system.disk.operation_time",
	"system.disk.operations", "system.disk.pending_operations", "system.disk.weighted_io_time",
}

// TestHostmetricsConventions: under conventions: hostmetrics the disk scraper's metrics come out with
// hostmetrics' names, attributes, units and instruments, from the same counters as the default
// conventions' metrics of those names or of their names in hostmetricsOurs (equal values), which are then not emitted; the rest is as by
// default. The golden holds the whole output.
func TestHostmetricsConventions(t *testing.T) {
	sc := twoScrapes(t, func(*Config) {})
	hm := twoScrapes(t, func(c *Config) { c.Conventions = emit.ConventionsHostmetrics })

	n := dhtest.AssertHostmetricsAgrees(t, sc, hm, hostmetricsDiskNames, hostmetricsKeys, hostmetricsOurs)
	// 11 points per device (4 with read and write, 3 without a direction).
	assert.Equal(t, 11*len(pdatawalk.Devices(sc)), n)
	units := map[string]string{}
	pdatawalk.ForEachMetric(hm, func(res pcommon.Resource, m pmetric.Metric) {
		if res.Attributes().Len() > 0 {
			return
		}
		units[m.Name()] = m.Unit()
		assert.Equal(t, pmetric.MetricTypeSum, m.Type(), m.Name())
		assert.Equal(t, m.Name() != "system.disk.pending_operations", m.Sum().IsMonotonic(), m.Name())
	})
	assert.Equal(t, map[string]string{
		"system.disk.io": "By", "system.disk.io_time": "s", "system.disk.merged": "{operations}", "system.disk.operation_time": "s",
		"system.disk.operations": "{operations}", "system.disk.pending_operations": "{operations}", "system.disk.weighted_io_time": "s",
	}, units)
	dhtest.AssertGolden(t, "k5.4-nvme-hostmetrics", hm)
}

// TestHostmetricsConventionsSwitchedOff: the metrics: key switches a metric of the hostmetrics set
// off as it does the source's own.
func TestHostmetricsConventionsSwitchedOff(t *testing.T) {
	md := twoScrapes(t, func(c *Config) {
		c.Conventions = emit.ConventionsHostmetrics
		c.Hostmetrics.Metrics.SystemDiskMerged.Enabled = false
	})
	names := map[string]bool{}
	pdatawalk.ForEachMetric(md, func(res pcommon.Resource, m pmetric.Metric) {
		if res.Attributes().Len() == 0 {
			names[m.Name()] = true
		}
	})
	assert.Len(t, names, len(hostmetricsDiskNames)-1)
	assert.NotContains(t, names, "system.disk.merged")
	assert.Contains(t, names, "system.disk.io")
}
