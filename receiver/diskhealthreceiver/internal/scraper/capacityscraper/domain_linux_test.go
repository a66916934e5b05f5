package capacityscraper

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage/fsusagetest"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper/scrapertest"
	"golang.org/x/sys/unix"

	dhtest "github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/match"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/capacityscraper/internal/metadata"
)

// bindsRoot copies the k6.18-binds root: /data (nvme1n1, ext4) shown again by five bind mounts and a
// kubelet hostPath subpath, the root filesystem and a /dev/shm tmpfs. statfs of every mount of
// /data answers the same numbers, as the kernel does.
func bindsRoot(t *testing.T, duplicates string) (*capScraper, *fsusagetest.Statfs) {
	t.Helper()
	clock := t0
	return bindsRootWith(t, duplicates, &clock, nil, nil)
}

// bindsRootWith is bindsRoot read at *clock, sending events to sink; prep, if not nil, may add to the
// root and change the configuration.
func bindsRootWith(t *testing.T, duplicates string, clock *time.Time, sink consumer.Logs, prep func(*dhtest.Root, *Config)) (*capScraper, *fsusagetest.Statfs) {
	t.Helper()
	root := dhtest.NewRoot(t)
	root.CopyTree(filepath.Join("testdata", "roots", "k6.18-binds"), ".", nil)
	data := fsusagetest.Ext4(1_000_000, 400_000, 350_000, 65_536, 60_000)
	f := &fsusagetest.Statfs{Answers: map[string]unix.Statfs_t{
		root.Path("/"):        fsusagetest.Ext4(2_500_000, 1_000_000, 875_000, 655_360, 500_000),
		root.Path("/dev/shm"): {Type: 0x01021994, Bsize: 4096, Frsize: 4096, Blocks: 407_500, Bfree: 407_000, Bavail: 407_000, Files: 100, Ffree: 99},
	}}
	for _, mp := range []string{"/data", "/mnt/ckpt", "/srv/ckpt", "/home/alice/ckpt", "/srv/train", "/opt/out",
		"/var/lib/kubelet/pods/6f1c0e52-0000-4000-8000-000000000001/volume-subpaths/ckpt/trainer/0"} {
		f.Answers[root.Path(mp)] = data
	}
	cfg := testConfig()
	cfg.RootPath = root.Dir
	cfg.Duplicates = duplicates
	cfg.IncludeMemory = true
	cfg.MountPoints = match.Config{} // the kubelet tree too
	if prep != nil {
		prep(root, cfg)
	}
	s, err := newScraper(scrapertest.NewNopSettings(metadata.Type), cfg, sink, func() time.Time { return *clock })
	require.NoError(t, err)
	s.cfg.Prober.Statfs = f.Statfs
	t.Cleanup(func() { require.NoError(t, s.shutdown(t.Context())) })
	return s, f
}

// domainPoints counts metric name's points per disk_health.filesystem.domain, with their uuid.
func domainPoints(md pmetric.Metrics, name string) (count map[string]int, uuid map[string]string) {
	count, uuid = map[string]int{}, map[string]string{}
	// Keyed by every attribute a point of these metrics can have, so that none is merged.
	for k, dp := range pointsBy(md, name, "disk_health.filesystem.domain", "system.filesystem.mountpoint", "system.filesystem.state",
		"status", "disk_health.filesystem.checkpoint.state", "disk_health.filesystem.limit.name") {
		d := strings.SplitN(k, " ", 2)[0]
		u, _ := dp.Attributes().Get("disk_health.filesystem.uuid")
		count[d]++
		uuid[d] = u.Str()
	}
	return count, uuid
}

// TestFSScraperOneDomainForBinds: five bind mounts and a hostPath on one filesystem are seven mounts
// but one capacity domain: each mount's points name it (major:minor and UUID), and the domain's own
// series are emitted once, in one resource.
func TestFSScraperOneDomainForBinds(t *testing.T) {
	s, _ := bindsRoot(t, "keep")
	md, err := withFilesystem(t, s)()
	require.NoError(t, err)
	dhtest.AssertGolden(t, "capacity-binds", md, pmetrictest.IgnoreStartTimestamp())

	limits, uuids := domainPoints(md, "system.filesystem.limit")
	assert.Equal(t, map[string]int{"259:2": 1, "259:5": 7, "0:45": 1}, limits, "one point per mount, each naming its domain")
	assert.Equal(t, map[string]string{"259:2": "0d4e5f6a-1b2c-4d3e-9f8a-7b6c5d4e3f2a", "259:5": "3c9d1f2e-5a6b-4c7d-8e9f-0a1b2c3d4e5f", "0:45": ""}, uuids)

	domLimits, _ := domainPoints(md, "disk_health.filesystem.domain.limit")
	assert.Equal(t, map[string]int{"259:2": 1, "259:5": 1, "0:45": 1}, domLimits, "one domain series per filesystem")
	used, _ := domainPoints(md, "disk_health.filesystem.domain.usage")
	assert.Equal(t, 3, used["259:5"], "used, free, reserved once")
	mounts, _ := domainValue(md, "disk_health.filesystem.domain.mounts", "259:5")
	assert.Equal(t, int64(7), mounts)
	size, _ := domainValue(md, "disk_health.filesystem.domain.limit", "259:5")
	assert.Equal(t, int64(1_000_000*4096), size)

	// One resource per domain, whatever the number of its mounts (in each source's batch).
	assert.Equal(t, 3, distinctResources(md))

	// With the default duplicates (drop) the binds are not reported; the domain is the same.
	d, _ := bindsRoot(t, "drop")
	md, err = withFilesystem(t, d)()
	require.NoError(t, err)
	limits, _ = domainPoints(md, "system.filesystem.limit")
	assert.Equal(t, map[string]int{"259:2": 1, "259:5": 1, "0:45": 1}, limits)
	domLimits, _ = domainPoints(md, "disk_health.filesystem.domain.limit")
	assert.Equal(t, map[string]int{"259:2": 1, "259:5": 1, "0:45": 1}, domLimits)
}

// domainValue is the value of metric name's point for domain dom (the first, for a metric with states).
func domainValue(md pmetric.Metrics, name, dom string) (v int64, found bool) {
	pdatawalk.ForEachMetric(md, func(_ pcommon.Resource, m pmetric.Metric) {
		if m.Name() != name {
			return
		}
		dps := pdatawalk.NumberPoints(m)
		for i := range dps.Len() {
			if d, _ := dps.At(i).Attributes().Get("disk_health.filesystem.domain"); d.Str() == dom && !found {
				v, found = dps.At(i).IntValue(), true
			}
		}
	})
	return v, found
}
