package filesystemscraper

import (
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

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

// fakeStatfs answers statfs from a table keyed by the path asked for; a missing path is ENOENT and a
// path in hang blocks until release is closed.
type fakeStatfs struct {
	mu      sync.Mutex
	answers map[string]unix.Statfs_t
	errs    map[string]error
	hang    map[string]bool
	release chan struct{}
}

func (f *fakeStatfs) statfs(path string, st *unix.Statfs_t) error {
	f.mu.Lock()
	hang, err, a, ok := f.hang[path], f.errs[path], f.answers[path], false
	_, ok = f.answers[path]
	f.mu.Unlock()
	if hang {
		<-f.release
	}
	if err != nil {
		return err
	}
	if !ok {
		return syscall.ENOENT
	}
	*st = a
	return nil
}

func ext4Statfs(blocks, bfree, bavail, files, ffree uint64) unix.Statfs_t {
	return unix.Statfs_t{Type: 0xef53, Bsize: 4096, Frsize: 4096, Blocks: blocks, Bfree: bfree, Bavail: bavail, Files: files, Ffree: ffree}
}

// newTestFSScraper makes a filesystem scraper reading root/proc/1/mountinfo with statfs answered by f.
func newTestFSScraper(t *testing.T, root, mountinfo string, f *fakeStatfs, clock *time.Time) *fsScraper {
	t.Helper()
	return newTestFSScraperWith(t, root, mountinfo, f, clock, func(*metadata.MetricsBuilderConfig) {})
}

// newTestFSScraperWith is newTestFSScraper with the metric configuration edited.
func newTestFSScraperWith(t *testing.T, root, mountinfo string, f *fakeStatfs, clock *time.Time, edit func(*metadata.MetricsBuilderConfig)) *fsScraper {
	t.Helper()
	return newTestFSScraperConfig(t, root, mountinfo, f, clock, func(cfg *Config) { edit(&cfg.MetricsBuilderConfig) })
}

// newTestFSScraperConfig is newTestFSScraper with the section edited.
func newTestFSScraperConfig(t *testing.T, root, mountinfo string, f *fakeStatfs, clock *time.Time, edit func(*Config)) *fsScraper {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "proc", "1"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "proc", "1", "mountinfo"), []byte(mountinfo), 0o644))
	cfg := createDefaultConfig()
	cfg.RootPath = root
	cfg.StatfsTimeout = 300 * time.Millisecond
	edit(cfg)
	s, err := newScraper(scrapertest.NewNopSettings(metadata.Type), cfg, nil, func() time.Time { return *clock })
	require.NoError(t, err)
	s.cfg.Prober.Statfs = f.statfs
	t.Cleanup(func() { require.NoError(t, s.shutdown(t.Context())) })
	return s
}

var t0 = dhtest.T0

const hostMountinfo = `25 1 253:0 / / rw,relatime shared:1 - ext4 /dev/mapper/vg0-root rw,errors=remount-ro
26 25 0:23 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
27 25 0:24 / /proc rw,nosuid,nodev,noexec,relatime shared:13 - proc proc rw
30 25 259:2 / /data rw,relatime shared:30 - xfs /dev/nvme0n1p2 rw,attr2,inode64
31 25 259:2 /exports /srv/exports rw,relatime shared:31 - xfs /dev/nvme0n1p2 rw,attr2,inode64
32 25 8:1 / /backup ro,relatime shared:32 - ext4 /dev/sda1 ro
33 25 0:45 / /run/user/1000 rw,nosuid,nodev,relatime shared:33 - tmpfs tmpfs rw,size=1630000k
34 25 7:0 / /snap/core/1 ro,nodev,relatime shared:34 - squashfs /dev/loop0 ro
35 25 8:17 / /mnt/old ro,relatime shared:35 - ext4 /dev/sdb1 rw
`

// hostStatfs answers statfs for hostMountinfo under root: ext4 /, xfs /data, a full ext4 /backup,
// and /mnt/old refusing with EACCES.
func hostStatfs(root string) *fakeStatfs {
	return &fakeStatfs{answers: map[string]unix.Statfs_t{
		filepath.Join(root, "/"):       ext4Statfs(2_500_000, 1_000_000, 875_000, 655_360, 500_000),
		filepath.Join(root, "/data"):   {Type: 0x58465342, Bsize: 4096, Frsize: 4096, Blocks: 100_000_000, Bfree: 40_000_000, Bavail: 40_000_000, Files: 200_000_000, Ffree: 199_000_000},
		filepath.Join(root, "/backup"): ext4Statfs(1_000_000, 0, 0, 65_536, 60_000),
	}, errs: map[string]error{
		filepath.Join(root, "/mnt/old"): syscall.EACCES,
	}}
}

func TestFSScraperGolden(t *testing.T) {
	root := t.TempDir()
	f := hostStatfs(root)
	clock := t0
	s := newTestFSScraper(t, root, hostMountinfo, f, &clock)
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
	f := &fakeStatfs{answers: map[string]unix.Statfs_t{
		filepath.Join(root, "/"):     ext4Statfs(2_500_000, 1_000_000, 875_000, 655_360, 500_000),
		filepath.Join(root, "/data"): {Bsize: 4096, Frsize: 4096, Blocks: 100, Bfree: 40, Bavail: 40},
	}}
	clock := t0
	s := newTestFSScraper(t, root, hostMountinfo, f, &clock)
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
	assert.Equal(t, 0.0, v["disk_health.filesystem.status / timeout"])
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
	f := &fakeStatfs{
		answers: map[string]unix.Statfs_t{
			filepath.Join(root, "/"):     ext4Statfs(100, 50, 40, 10, 5),
			filepath.Join(root, "/data"): ext4Statfs(200, 100, 100, 10, 5),
		},
		hang:    map[string]bool{filepath.Join(root, "/data"): true},
		release: make(chan struct{}),
	}
	clock := t0
	s := newTestFSScraper(t, root, hostMountinfo, f, &clock)
	s.cfg.Prober.ReprobeInterval = 50 * time.Millisecond
	released := false
	defer func() {
		if !released {
			close(f.release)
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
	f.mu.Lock()
	f.hang = nil
	f.mu.Unlock()
	close(f.release)
	released = true
	require.Eventually(t, func() bool {
		md, err := s.scrape(t.Context())
		return err == nil && fsValues(md)["disk_health.filesystem.status /data ok"] == 1
	}, 5*time.Second, 50*time.Millisecond)
}

func TestFSScraperMissingMountTable(t *testing.T) {
	root := t.TempDir()
	cfg := createDefaultConfig()
	cfg.RootPath = root
	s, err := newScraper(scrapertest.NewNopSettings(metadata.Type), cfg, nil, time.Now)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.shutdown(t.Context())) })
	_, err = s.scrape(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Join(root, "proc/1/mountinfo"))
	var pe *os.PathError
	assert.ErrorAs(t, err, &pe)
}
