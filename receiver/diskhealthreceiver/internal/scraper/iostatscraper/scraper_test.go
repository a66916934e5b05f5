package iostatscraper

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.opentelemetry.io/collector/scraper/scrapertest"

	dhtest "github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/iostatscraper/internal/metadata"
)

// fixtureRoot makes a root_path whose sys is a private copy of the committed fixture tree and whose proc/diskstats the test
// rewrites in place between scrapes (the reader keeps the file open, as it does with the real /proc).
type fixtureRoot struct {
	t      *testing.T
	root   string
	source string
}

func newFixtureRoot(t *testing.T, name string) *fixtureRoot {
	t.Helper()
	src, err := filepath.Abs(filepath.Join("testdata", "roots", name))
	require.NoError(t, err)
	root := t.TempDir()
	dhtest.RootAt(t, root).CopyTree(filepath.Join(src, "sys"), "sys", nil)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "proc"), 0o755))
	f := &fixtureRoot{t: t, root: root, source: src}
	f.copyProc("stat", "stat")
	return f
}

func (f *fixtureRoot) copyProc(from, to string) {
	f.t.Helper()
	data, err := os.ReadFile(filepath.Join(f.source, "proc", from))
	require.NoError(f.t, err)
	f.writeProc(to, string(data))
}

func (f *fixtureRoot) writeProc(name, content string) {
	f.t.Helper()
	require.NoError(f.t, os.WriteFile(filepath.Join(f.root, "proc", name), []byte(content), 0o644))
}

// newTestIOScraper starts an iostat scraper on root with a clock the test advances.
func newTestIOScraper(t testing.TB, cfg *Config, clock *time.Time) *ioScraper {
	t.Helper()
	s, err := newScraper(scrapertest.NewNopSettings(metadata.Type), cfg, func() time.Time { return *clock })
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.shutdown(t.Context())) })
	return s
}

func testConfig(root string) *Config {
	cfg := createDefaultConfig()
	cfg.RootPath = root
	return cfg
}

var t0 = dhtest.T0

func TestIOScraperGolden(t *testing.T) {
	for _, tc := range []struct {
		root    string
		classes []string // nil: the default
		golden  string
	}{
		{root: "k4.15-sata", golden: "k4.15-sata-default"},
		{root: "k5.4-nvme", golden: "k5.4-nvme-default"},
		{root: "k6.8-nvme-raid", golden: "k6.8-nvme-raid-default"},
		{root: "k5.4-nvme", classes: []string{"disk", "partition", "dm", "md", "loop", "ram", "other"}, golden: "k5.4-nvme-all-classes"},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			f := newFixtureRoot(t, tc.root)
			cfg := testConfig(f.root)
			if tc.classes != nil {
				cfg.DeviceClasses = tc.classes
			}
			clock := t0
			s := newTestIOScraper(t, cfg, &clock)

			f.copyProc("diskstats.1", "diskstats")
			first, err := s.scrape(t.Context())
			require.NoError(t, err)
			assertNoGauges(t, first)

			clock = t0.Add(10 * time.Second)
			f.copyProc("diskstats.2", "diskstats")
			second, err := s.scrape(t.Context())
			require.NoError(t, err)

			dhtest.AssertGolden(t, tc.golden, second)
		})
	}
}

func assertNoGauges(t *testing.T, md pmetric.Metrics) {
	t.Helper()
	pdatawalk.ForEachMetric(md, func(_ pcommon.Resource, m pmetric.Metric) {
		assert.NotEqual(t, pmetric.MetricTypeGauge, m.Type(), "%s: no gauge on a device's first read", m.Name())
	})
}

func TestIOScraperDefaultFilterNeverDoubleCounts(t *testing.T) {
	for _, root := range []string{"k4.15-sata", "k5.4-nvme", "k6.8-nvme-raid"} {
		t.Run(root, func(t *testing.T) {
			f := newFixtureRoot(t, root)
			clock := t0
			s := newTestIOScraper(t, testConfig(f.root), &clock)
			f.copyProc("diskstats.1", "diskstats")
			md, err := s.scrape(t.Context())
			require.NoError(t, err)
			got := pdatawalk.Devices(md)
			require.NotEmpty(t, got)
			for i := range md.ResourceMetrics().Len() {
				res := md.ResourceMetrics().At(i).Resource().Attributes()
				class, ok := res.Get("disk_health.disk.class")
				require.True(t, ok)
				assert.Contains(t, []string{"disk", "dm", "md"}, class.Str())
				_, hasParent := res.Get("disk_health.disk.parent")
				assert.False(t, hasParent, "a partition was emitted by default")
			}
		})
	}
}

// TestIOScraperBadInput: each kind of bad input names the device or path and costs no other device.
func TestIOScraperBadInput(t *testing.T) {
	t.Run("malformed and truncated lines", func(t *testing.T) {
		f := newFixtureRoot(t, "k4.15-sata")
		clock := t0
		s := newTestIOScraper(t, testConfig(f.root), &clock)
		good, err := os.ReadFile(filepath.Join(f.source, "proc", "diskstats.1"))
		require.NoError(t, err)
		lines := strings.Split(strings.TrimSuffix(string(good), "\n"), "\n")
		// sdb gets a non-number; the file ends in a truncated dm-0 line, as a torn read would.
		lines[3] = strings.Replace(lines[3], " 1203444 ", " 12x3444 ", 1)
		require.Contains(t, lines[6], " dm-0 ")
		lines[6] = lines[6][:len(lines[6])/2]
		f.writeProc("diskstats", strings.Join(lines[:7], "\n"))
		md, err := s.scrape(t.Context())
		require.Error(t, err)
		assert.True(t, scrapererror.IsPartialScrapeError(err))
		assert.Contains(t, err.Error(), `(sdb): field 8 "12x3444"`)
		assert.Contains(t, err.Error(), "(dm-0)")
		got := pdatawalk.Devices(md)
		assert.ElementsMatch(t, []string{"sda", "sr0", "md0"}, got)
	})
	t.Run("unreadable sysfs attribute", func(t *testing.T) {
		f := newFixtureRoot(t, "k4.15-sata")
		// The root's sys is a private copy: sda's rotational flag made garbage there.
		rot := filepath.Join(f.root, "sys", "block", "sda", "queue", "rotational")
		require.NoError(t, os.WriteFile(rot, []byte("banana\n"), 0o644))
		clock := t0
		s := newTestIOScraper(t, testConfig(f.root), &clock)
		f.copyProc("diskstats.1", "diskstats")
		md, err := s.scrape(t.Context())
		require.Error(t, err)
		assert.True(t, scrapererror.IsPartialScrapeError(err), "a plain error would make the controller drop every device")
		assert.Contains(t, err.Error(), "device sda")
		assert.Contains(t, err.Error(), "rotational")
		// sda is still reported, with every other identity attribute.
		assert.ElementsMatch(t, []string{"sda", "sdb", "sr0", "md0", "dm-0"}, pdatawalk.Devices(md))
	})
	t.Run("missing proc", func(t *testing.T) {
		root := t.TempDir()
		clock := t0
		s := newTestIOScraper(t, testConfig(root), &clock)
		for range 2 {
			md, err := s.scrape(t.Context())
			require.Error(t, err)
			assert.Contains(t, err.Error(), filepath.Join(root, "proc", "stat"))
			assert.Zero(t, md.DataPointCount())
		}
	})
	t.Run("missing diskstats", func(t *testing.T) {
		f := newFixtureRoot(t, "k4.15-sata")
		clock := t0
		s := newTestIOScraper(t, testConfig(f.root), &clock)
		_, err := s.scrape(t.Context())
		require.Error(t, err)
		assert.Contains(t, err.Error(), filepath.Join(f.root, "proc", "diskstats"))
	})
}

// TestIOScraperSaysWhyNothingIsReported: an empty /proc/diskstats, a removed one and one replaced by
// rename each give a clear outcome: the first two an error saying there is no device I/O and why, the
// renamed file is read afresh (its values do not freeze on the old inode).
func TestIOScraperSaysWhyNothingIsReported(t *testing.T) {
	f := newFixtureRoot(t, "k5.4-nvme")
	clock := t0
	s := newTestIOScraper(t, testConfig(f.root), &clock)
	path := filepath.Join(f.root, "proc", "diskstats")

	f.writeProc("diskstats", "")
	md, err := s.scrape(t.Context())
	require.Error(t, err)
	assert.Equal(t, "no device I/O: "+path+" is empty", err.Error())
	assert.Zero(t, md.MetricCount())

	f.copyProc("diskstats.1", "diskstats")
	_, err = s.scrape(t.Context())
	require.NoError(t, err)

	// Replaced by rename: a new inode at the path, read within a few scrapes.
	next, err := os.ReadFile(filepath.Join(f.source, "proc", "diskstats.2"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path+".tmp", next, 0o644))
	require.NoError(t, os.Rename(path+".tmp", path))
	moved := false
	for i := range 8 {
		clock = t0.Add(time.Duration(i+1) * 10 * time.Second)
		md, err = s.scrape(t.Context())
		require.NoError(t, err)
		if opsOf(md, "nvme0n1", "read") != 812345 {
			moved = true
			break
		}
	}
	assert.True(t, moved, "the renamed file's values are read")

	require.NoError(t, os.Remove(path))
	for range 8 {
		if _, err = s.scrape(t.Context()); err != nil {
			break
		}
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no device I/O: ")
	assert.Contains(t, err.Error(), path)
}

// TestIOScraperSaysWhenADeviceIsDropped: a device whose sysfs entry cannot be read has no class (other)
// and drops out of the default device classes; the scrape says so, naming the device, every scrape
// while it lasts (the reporter logs it once). With other in device_classes it is reported.
func TestIOScraperSaysWhenADeviceIsDropped(t *testing.T) {
	f := newFixtureRoot(t, "k5.4-nvme")
	data, err := os.ReadFile(filepath.Join(f.source, "proc", "diskstats.1"))
	require.NoError(t, err)
	f.writeProc("diskstats", string(data)+" 8 0 sdz 1 0 8 1 1 0 8 1 0 1 1 0 0 0 0 0 0\n")
	clock := t0
	s := newTestIOScraper(t, testConfig(f.root), &clock)
	for range 2 {
		md, err := s.scrape(t.Context())
		require.Error(t, err)
		assert.True(t, scrapererror.IsPartialScrapeError(err))
		assert.Contains(t, err.Error(), "device sdz dropped from I/O metrics: its sysfs identity could not be read, so its class falls back to other, which iostat.device_classes does not include")
		assert.Contains(t, err.Error(), filepath.Join(f.root, "sys", "class", "block", "sdz"))
		assert.NotContains(t, pdatawalk.Devices(md), "sdz")
		assert.Contains(t, pdatawalk.Devices(md), "nvme0n1")
	}

	cfg := testConfig(f.root)
	cfg.DeviceClasses = []string{"disk", "other"}
	all := newTestIOScraper(t, cfg, &clock)
	md, err := all.scrape(t.Context())
	require.Error(t, err, "the unreadable identity is still reported once")
	assert.NotContains(t, err.Error(), "dropped")
	assert.Contains(t, pdatawalk.Devices(md), "sdz")
}

// opsOf is the read (or write) operations of a device in md, -1 if absent.
func opsOf(md pmetric.Metrics, dev, dir string) int64 {
	v := int64(-1)
	pdatawalk.ForEachMetric(md, func(_ pcommon.Resource, m pmetric.Metric) {
		if m.Name() != "system.disk.operations" {
			return
		}
		dps := m.Sum().DataPoints()
		for i := range dps.Len() {
			a := dps.At(i).Attributes()
			d, _ := a.Get("system.device")
			io, _ := a.Get("disk.io.direction")
			if d.Str() == dev && io.Str() == dir {
				v = dps.At(i).IntValue()
			}
		}
	})
	return v
}
