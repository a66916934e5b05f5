package cgroupsscraper

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.opentelemetry.io/collector/scraper/scrapertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	dhtest "github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/cgroupsscraper/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/tick"
)

// cgroupRoot is a root_path whose sys is a symlink to one snapshot of a cgroupio fixture tree, so a test
// moves the whole hierarchy forward in time between two scrapes.
type cgroupRoot struct {
	t    *testing.T
	root string
	tree string
}

func newCgroupRoot(t *testing.T, tree string) *cgroupRoot {
	t.Helper()
	r := &cgroupRoot{t: t, root: t.TempDir(), tree: tree}
	require.NoError(t, os.MkdirAll(filepath.Join(r.root, "proc"), 0o755))
	// Boot at 06:00 on the day of t0.
	require.NoError(t, os.WriteFile(filepath.Join(r.root, "proc", "stat"), []byte("cpu  1 2 3\nbtime 1795932000\n"), 0o644))
	r.moveTo("t1")
	return r
}

func (r *cgroupRoot) moveTo(snap string) {
	r.t.Helper()
	src, err := filepath.Abs(filepath.Join("..", "..", "cgroupio", "testdata", r.tree, snap))
	require.NoError(r.t, err)
	link := filepath.Join(r.root, "sys")
	_ = os.Remove(link)
	require.NoError(r.t, os.Symlink(filepath.Join(src, "sys"), link))
	data, err := os.ReadFile(filepath.Join(src, "proc", "diskstats"))
	require.NoError(r.t, err)
	require.NoError(r.t, os.WriteFile(filepath.Join(r.root, "proc", "diskstats"), data, 0o644))
}

func newTestCgroupScraper(t *testing.T, cfg *Config, clock *time.Time) (*cgroupScraper, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zap.InfoLevel)
	set := scrapertest.NewNopSettings(metadata.Type)
	set.Logger = zap.New(core)
	s, err := newScraper(set, cfg, func() time.Time { return *clock })
	require.NoError(t, err)
	require.NoError(t, s.start(t.Context(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, s.shutdown(t.Context())) })
	return s, logs
}

func TestCgroupScraperGolden(t *testing.T) {
	for _, tc := range []struct {
		tree   string
		topN   int
		golden string
		enable []string // metrics off by default switched on
	}{
		{tree: "v2-k8s-containerd", topN: 3, golden: "cgroups-v2-k8s-containerd"},
		{tree: "v2-k8s-crio", topN: 10, golden: "cgroups-v2-k8s-crio", enable: []string{"10s", "1m", "5m"}},
		{tree: "v2-docker", topN: 10, golden: "cgroups-v2-docker"},
		{tree: "v2-systemd", topN: 10, golden: "cgroups-v2-systemd"},
		{tree: "v1-blkio", topN: 10, golden: "cgroups-v1-blkio"},
	} {
		{
			t.Run(tc.golden, func(t *testing.T) {
				r := newCgroupRoot(t, tc.tree)
				cfg := testConfig(r.root)
				cfg.TopN = tc.topN
				cfg.MaxDepth = 4
				for _, w := range tc.enable {
					switch w {
					case "10s":
						cfg.MetricsBuilderConfig.Metrics.DiskHealthContainerIoLinuxPressure10s.Enabled = true
					case "1m":
						cfg.MetricsBuilderConfig.Metrics.DiskHealthContainerIoLinuxPressure1m.Enabled = true
					case "5m":
						cfg.MetricsBuilderConfig.Metrics.DiskHealthContainerIoLinuxPressure5m.Enabled = true
					}
				}
				clock := t0
				s, logs := newTestCgroupScraper(t, cfg, &clock)
				require.Equal(t, 1, logs.Len())
				assert.Equal(t, "Per-cgroup I/O", logs.All()[0].Message)

				first, err := s.scrape(t.Context())
				require.NoError(t, err)
				assert.Zero(t, first.MetricCount(), "the first scrape is a baseline")

				clock = t0.Add(30 * time.Second)
				r.moveTo("t2")
				second, err := s.scrape(t.Context())
				require.NoError(t, err)
				assert.LessOrEqual(t, second.ResourceMetrics().Len(), tc.topN)

				dhtest.AssertGolden(t, tc.golden, second)
			})
		}
	}
}

// TestCgroupScraperDeviceNamesAndFilter: devices carry the kernel names of /proc/diskstats, a device
// missing there its major:minor, and cgroups.devices keeps only the matching ones (a cgroup left without
// a device is not reported).
func TestCgroupScraperDeviceNamesAndFilter(t *testing.T) {
	r := newCgroupRoot(t, "v2-k8s-crio")
	cfg := testConfig(r.root)
	cfg.Devices.Include = []string{"sda", "253:0"}
	clock := t0
	s, _ := newTestCgroupScraper(t, cfg, &clock)
	_, err := s.scrape(t.Context())
	require.NoError(t, err)
	r.moveTo("t2")
	// dm-0 (253:0) is gone from /proc/diskstats: its lines are named by number.
	require.NoError(t, os.WriteFile(filepath.Join(r.root, "proc", "diskstats"),
		[]byte("   8       0 sda 1 0 8 1 1 0 8 1 0 1 1 0 0 0 0 0 0\n"), 0o644))
	clock = t0.Add(30 * time.Second)
	md, err := s.scrape(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, md.ResourceMetrics().Len(), "only the besteffort pod used sda and dm-0")
	res := md.ResourceMetrics().At(0).Resource().Attributes()
	qos, _ := res.Get("disk_health.k8s.pod.qos_class")
	assert.Equal(t, "besteffort", qos.Str())
	assert.ElementsMatch(t, []string{"sda", "253:0"}, pdatawalk.Devices(md))
}

// TestCgroupScraperNoAccounting: a host without cgroup I/O accounting is logged once at start; scrapes
// report nothing and no error; the source's status says it is off, the kernel (as booted) lacking it.
func TestCgroupScraperNoAccounting(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "sys", "fs", "cgroup", "unified"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "sys", "fs", "cgroup", "unified", "cgroup.controllers"), []byte("memory\n"), 0o644))
	clock := t0
	cfg := testConfig(root)
	cfg.Status = emit.NewStatus()
	s, logs := newTestCgroupScraper(t, cfg, &clock)
	state, reason := cfg.Status.Get()
	assert.Equal(t, emit.StateOff, state)
	assert.Equal(t, emit.ReasonUnsupportedKernel, reason)
	for range 3 {
		md, err := s.scrape(t.Context())
		require.NoError(t, err)
		assert.Zero(t, md.MetricCount())
	}
	require.Equal(t, 1, logs.Len())
	assert.Contains(t, logs.All()[0].Message, "No per-cgroup I/O accounting")
}

// TestCgroupScraperMissingProc: a root_path with a cgroup hierarchy but no /proc fails each scrape,
// naming the path, and not the collector's start.
func TestCgroupScraperMissingProc(t *testing.T) {
	r := newCgroupRoot(t, "v2-docker")
	require.NoError(t, os.Remove(filepath.Join(r.root, "proc", "stat")))
	clock := t0
	s, _ := newTestCgroupScraper(t, testConfig(r.root), &clock)
	_, err := s.scrape(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Join(r.root, "proc", "stat"))
}

var t0 = dhtest.T0

func testConfig(root string) *Config {
	cfg := createDefaultConfig()
	cfg.RootPath = root
	return cfg
}

// TestCgroupScraperDiskstatsFailureIsPartial: /proc/diskstats is read only for device names, so a
// malformed line in it, or its absence, is a partial error: every cgroup's I/O is still reported, the
// devices the file did not name by major:minor.
func TestCgroupScraperDiskstatsFailureIsPartial(t *testing.T) {
	for _, tc := range []struct {
		name      string
		diskstats string // "" removes the file
		want      []string
	}{
		{name: "malformed line", diskstats: "   8       0 sda 1 0 8 1 1 0 8 1 0 1 1 0 0 0 0 0 0\n 253 0 dm-0 x\n",
			want: []string{"sda", "253:0"}},
		{name: "missing file", want: []string{"8:0", "253:0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newCgroupRoot(t, "v2-k8s-crio")
			cfg := testConfig(r.root)
			cfg.Devices.Include = []string{"sda", "8:0", "253:0"}
			clock := t0
			s, _ := newTestCgroupScraper(t, cfg, &clock)
			_, err := s.scrape(t.Context())
			require.NoError(t, err)
			r.moveTo("t2")
			path := filepath.Join(r.root, "proc", "diskstats")
			if tc.diskstats == "" {
				require.NoError(t, os.Remove(path))
			} else {
				require.NoError(t, os.WriteFile(path, []byte(tc.diskstats), 0o644))
			}
			clock = t0.Add(30 * time.Second)
			md, err := s.scrape(t.Context())
			require.Error(t, err)
			assert.True(t, scrapererror.IsPartialScrapeError(err), "a diskstats failure costs device names, not the scrape: %v", err)
			assert.Contains(t, err.Error(), "device names")
			require.Equal(t, 1, md.ResourceMetrics().Len())
			assert.ElementsMatch(t, tc.want, pdatawalk.Devices(md))
		})
	}
}

// TestCgroupScraperSharesTheTick: in a receiver, cgroups names devices from the tick's shared
// /proc/diskstats read. When another source (iostat) read it earlier in the tick, cgroups reuses that
// read: a file changed since is not read again.
func TestCgroupScraperSharesTheTick(t *testing.T) {
	r := newCgroupRoot(t, "v2-k8s-crio")
	cfg := testConfig(r.root)
	clock := t0
	now := func() time.Time { return clock }
	shared := tick.New(r.root, now, nil)
	iostat := shared.Reader(30 * time.Second)
	cfg.Tick = shared.Reader(30 * time.Second)
	s, _ := newTestCgroupScraper(t, cfg, &clock)
	_, err := s.scrape(t.Context())
	require.NoError(t, err)

	r.moveTo("t2")
	clock = t0.Add(30 * time.Second)
	require.NoError(t, iostat.Use(t.Context(), func(sn *tick.Snapshot) error {
		assert.Equal(t, "nvme0n1", sn.Stats[0].DeviceName)
		return nil
	}))
	// After iostat's read, sda is renamed: a second read would name its cgroup I/O sdz.
	require.NoError(t, os.WriteFile(filepath.Join(r.root, "proc", "diskstats"),
		[]byte("   8       0 sdz 1 0 8 1 1 0 8 1 0 1 1 0 0 0 0 0 0\n"), 0o644))
	clock = clock.Add(time.Second)
	md, err := s.scrape(t.Context())
	require.NoError(t, err)
	devs := pdatawalk.Devices(md)
	assert.Contains(t, devs, "sda", "named from iostat's read of this tick")
	assert.NotContains(t, devs, "sdz")
}
