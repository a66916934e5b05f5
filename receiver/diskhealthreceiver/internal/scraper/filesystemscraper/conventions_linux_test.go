package filesystemscraper

import (
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	dhtest "github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
)

// hostmetricsKeys are hostmetrics' filesystem attribute keys and ours for the same thing.
var hostmetricsKeys = map[string]string{
	"device": "system.device", "mode": "system.filesystem.mode", "mountpoint": "system.filesystem.mountpoint",
	"type": "system.filesystem.type", "state": "system.filesystem.state",
}

// hostmetricsFilesystemNames are the metrics of hostmetricsreceiver v0.165.1's filesystem scraper (its
// metadata.yaml); system.filesystem.utilization is off by default there.
var hostmetricsFilesystemNames = []string{"system.filesystem.inodes.usage", "system.filesystem.usage", "system.filesystem.utilization"}

// TestHostmetricsConventions: under conventions: hostmetrics the filesystem scraper's metrics come out
// with hostmetrics' names, attributes, units and instruments, from the same statfs as the default
// conventions' metrics of those names or of their names in hostmetricsOurs (equal values), which are then not emitted; the rest is as by
// default; hostmetrics' optional utilization only when switched on. The golden holds the whole output.
func TestHostmetricsConventions(t *testing.T) {
	sc := scrapeHostConfig(t, func(*Config) {})
	hm := scrapeHostConfig(t, func(cfg *Config) {
		cfg.Conventions = emit.ConventionsHostmetrics
		cfg.Hostmetrics.Metrics.SystemFilesystemUtilization.Enabled = true
	})
	// Three mounts answer statfs (/, /data, /backup): 2 inode points, 3 usage points, 1 utilization each.
	assert.Equal(t, 3*6, dhtest.AssertHostmetricsAgrees(t, sc, hm, hostmetricsFilesystemNames, hostmetricsKeys, hostmetricsOurs))
	units := map[string]string{}
	pdatawalk.ForEachMetric(hm, func(res pcommon.Resource, m pmetric.Metric) {
		if res.Attributes().Len() == 0 {
			units[m.Name()] = m.Unit()
		}
	})
	assert.Equal(t, map[string]string{"system.filesystem.inodes.usage": "{inodes}", "system.filesystem.usage": "By", "system.filesystem.utilization": "1"}, units)
	dhtest.AssertGolden(t, "filesystem-host-hostmetrics", hm, pmetrictest.IgnoreStartTimestamp())

	byDefault := scrapeHostConfig(t, func(cfg *Config) { cfg.Conventions = emit.ConventionsHostmetrics })
	pdatawalk.ForEachMetric(byDefault, func(_ pcommon.Resource, m pmetric.Metric) {
		assert.NotEqual(t, "system.filesystem.utilization", m.Name(), "optional in hostmetrics, and ours is replaced")
	})
}
