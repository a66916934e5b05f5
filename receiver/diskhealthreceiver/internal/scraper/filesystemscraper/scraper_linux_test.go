package filesystemscraper

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage/fsusagetest"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
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

// newTestFSScraper makes a filesystem scraper reading root/proc/1/mountinfo with statfs answered by f.
func newTestFSScraper(t *testing.T, root, mountinfo string, f *fsusagetest.Statfs, clock *time.Time) *fsScraper {
	t.Helper()
	return newTestFSScraperWith(t, root, mountinfo, f, clock, func(*metadata.MetricsBuilderConfig) {})
}

// newTestFSScraperWith is newTestFSScraper with the metric configuration edited.
func newTestFSScraperWith(t *testing.T, root, mountinfo string, f *fsusagetest.Statfs, clock *time.Time, edit func(*metadata.MetricsBuilderConfig)) *fsScraper {
	t.Helper()
	return newTestFSScraperConfig(t, root, mountinfo, f, clock, func(cfg *Config) { edit(&cfg.MetricsBuilderConfig) })
}

// newTestFSScraperConfig is newTestFSScraper with the section edited.
func newTestFSScraperConfig(t *testing.T, root, mountinfo string, f *fsusagetest.Statfs, clock *time.Time, edit func(*Config)) *fsScraper {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "proc", "1"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "proc", "1", "mountinfo"), []byte(mountinfo), 0o644))
	cfg := createDefaultConfig()
	cfg.RootPath = root
	cfg.StatfsTimeout = 300 * time.Millisecond
	edit(cfg)
	s, err := newScraper(scrapertest.NewNopSettings(metadata.Type), cfg, func() time.Time { return *clock })
	require.NoError(t, err)
	s.cfg.Prober.Statfs = f.Statfs
	t.Cleanup(func() { require.NoError(t, s.shutdown(t.Context())) })
	return s
}

var t0 = dhtest.T0

func TestFSScraperGolden(t *testing.T) {
	root := t.TempDir()
	f := fsusagetest.HostStatfs(root)
	clock := t0
	s := newTestFSScraper(t, root, fsusagetest.HostMountinfo, f, &clock)
	md, err := s.scrape(t.Context())
	require.NoError(t, err)

	dhtest.AssertGolden(t, "filesystem-host", md, pmetrictest.IgnoreStartTimestamp())
}

// fsValues flattens md to "metric mountpoint [state]" → value, for assertions that read like df.
func fsValues(md pmetric.Metrics) map[string]float64 {
	out := map[string]float64{}
	pdatawalk.ForEachMetric(md, func(_ pcommon.Resource, m pmetric.Metric) {
		var dps pmetric.NumberDataPointSlice
		switch m.Type() {
		case pmetric.MetricTypeSum:
			dps = m.Sum().DataPoints()
		case pmetric.MetricTypeGauge:
			dps = m.Gauge().DataPoints()
		default:
			return
		}
		for i := range dps.Len() {
			dp := dps.At(i)
			key := m.Name()
			if mp, ok := dp.Attributes().Get("system.filesystem.mountpoint"); ok {
				key += " " + mp.Str()
			}
			for _, a := range []string{"system.filesystem.state", "status"} {
				if v, ok := dp.Attributes().Get(a); ok {
					key += " " + v.Str()
				}
			}
			v := dp.DoubleValue()
			if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
				v = float64(dp.IntValue())
			}
			out[key] = v
		}
	})
	return out
}

func TestFSScraperValues(t *testing.T) {
	root := t.TempDir()
	f := &fsusagetest.Statfs{Answers: map[string]unix.Statfs_t{
		filepath.Join(root, "/"):     fsusagetest.Ext4(2_500_000, 1_000_000, 875_000, 655_360, 500_000),
		filepath.Join(root, "/data"): {Bsize: 4096, Frsize: 4096, Blocks: 100, Bfree: 40, Bavail: 40},
	}}
	clock := t0
	s := newTestFSScraper(t, root, fsusagetest.HostMountinfo, f, &clock)
	md, err := s.scrape(t.Context())
	require.NoError(t, err)
	v := fsValues(md)
	// df -B1: Size = blocks, Used = blocks - bfree, Avail = bavail; used + avail + reserved = size.
	assert.Equal(t, float64(2_500_000*4096), v["system.filesystem.limit /"])
	assert.Equal(t, float64(1_500_000*4096), v["system.filesystem.usage / used"])
	assert.Equal(t, float64(875_000*4096), v["system.filesystem.usage / free"])
	assert.Equal(t, float64(125_000*4096), v["system.filesystem.usage / reserved"])
	assert.InDelta(t, 1_500_000.0/2_375_000.0, v["system.filesystem.utilization /"], 1e-12) // df Use% 64 %
	assert.Equal(t, float64(155_360), v["disk_health.filesystem.inodes.usage / used"])
	assert.Equal(t, float64(500_000), v["disk_health.filesystem.inodes.usage / free"])
	assert.Equal(t, 1.0, v["disk_health.filesystem.status / ok"])
	// The current status only: a status the mount never had is not sent.
	_, hasTimeout := v["disk_health.filesystem.status / timeout"]
	assert.False(t, hasTimeout)
	// A filesystem without an inode table reports no inode numbers.
	_, hasInodes := v["disk_health.filesystem.inodes.usage /data used"]
	assert.False(t, hasInodes)
	// Defaults: no pseudo filesystems, no tmpfs, no squashfs, and the bind of /data's subtree once only.
	for key := range v {
		for _, mp := range []string{" /sys", " /proc", " /run/user/1000", " /snap/core/1", " /srv/exports"} {
			assert.NotContains(t, key+" ", mp+" ", "unexpected mount in %q", key)
		}
	}
}

// TestFSScraperStuckMount: a hung statfs costs one scrape at most statfs_timeout, never every scrape, and
// never the other mounts; the mount comes back only after a successful statfs.
func TestFSScraperStuckMount(t *testing.T) {
	root := t.TempDir()
	f := &fsusagetest.Statfs{
		Answers: map[string]unix.Statfs_t{
			filepath.Join(root, "/"):     fsusagetest.Ext4(100, 50, 40, 10, 5),
			filepath.Join(root, "/data"): fsusagetest.Ext4(200, 100, 100, 10, 5),
		},
		Hang:    map[string]bool{filepath.Join(root, "/data"): true},
		Release: make(chan struct{}),
	}
	clock := t0
	s := newTestFSScraper(t, root, fsusagetest.HostMountinfo, f, &clock)
	s.cfg.Prober.ReprobeInterval = 50 * time.Millisecond
	released := false
	defer func() {
		if !released {
			close(f.Release)
		}
	}()
	for i := range 3 {
		begin := time.Now()
		md, err := s.scrape(t.Context())
		took := time.Since(begin)
		require.NoError(t, err)
		assert.Less(t, took, 300*time.Millisecond+250*time.Millisecond, "scrape %d waited for the hung mount", i)
		v := fsValues(md)
		assert.Equal(t, 1.0, v["disk_health.filesystem.status /data timeout"], "scrape %d", i)
		assert.Equal(t, 1.0, v["disk_health.filesystem.status / ok"], "scrape %d", i)
		assert.Equal(t, float64(100*4096), v["system.filesystem.limit /"], "scrape %d", i)
	}
	// The server answers again: the background re-probe succeeds and the mount is reported again.
	f.Mu.Lock()
	f.Hang = nil
	f.Mu.Unlock()
	close(f.Release)
	released = true
	var back map[string]float64
	require.Eventually(t, func() bool {
		md, err := s.scrape(t.Context())
		back = fsValues(md)
		return err == nil && back["disk_health.filesystem.status /data ok"] == 1
	}, 5*time.Second, 50*time.Millisecond)
	// The status left is sent at 0 once, so an alert on it resolves; then only the current one.
	left, sent := back["disk_health.filesystem.status /data timeout"]
	assert.True(t, sent && left == 0, "timeout at 0 when left")
	md, err := s.scrape(t.Context())
	require.NoError(t, err)
	_, sent = fsValues(md)["disk_health.filesystem.status /data timeout"]
	assert.False(t, sent, "the state left is sent once")
}

func TestFSScraperMissingMountTable(t *testing.T) {
	root := t.TempDir()
	cfg := createDefaultConfig()
	cfg.RootPath = root
	s, err := newScraper(scrapertest.NewNopSettings(metadata.Type), cfg, time.Now)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.shutdown(t.Context())) })
	_, err = s.scrape(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Join(root, "proc/1/mountinfo"))
	var pe *os.PathError
	assert.ErrorAs(t, err, &pe)
}
