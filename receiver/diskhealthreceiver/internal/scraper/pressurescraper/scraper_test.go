package pressurescraper

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper/scrapertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/boottime"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/pressure"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/pressurescraper/internal/metadata"
)

func newTestPressureScraper(t *testing.T, root string) (*pressureScraper, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zap.InfoLevel)
	set := scrapertest.NewNopSettings(metadata.Type)
	set.Logger = zap.New(core)
	cfg := createDefaultConfig()
	cfg.RootPath = root
	s := newScraper(set, cfg, time.Now)
	require.NoError(t, s.start(t.Context(), componenttest.NewNopHost()))
	return s, logs
}

// pressurePoints returns the scraped value of each PSI metric by stall type.
func pressurePoints(t *testing.T, md pmetric.Metrics) map[string]map[string]pmetric.NumberDataPoint {
	t.Helper()
	out := map[string]map[string]pmetric.NumberDataPoint{}
	pdatawalk.ForEachMetric(md, func(_ pcommon.Resource, m pmetric.Metric) {
		dps := pdatawalk.NumberPoints(m)
		for i := range dps.Len() {
			dp := dps.At(i)
			kind, ok := dp.Attributes().Get("disk_health.linux.pressure.stall_type")
			require.True(t, ok)
			if out[m.Name()] == nil {
				out[m.Name()] = map[string]pmetric.NumberDataPoint{}
			}
			out[m.Name()][kind.Str()] = dp
		}
	})
	return out
}

// TestPressureScraperAgreesWithKernel reads this machine's /proc/pressure/io just before and just after
// a scrape: each scraped total lies between the two, and each average is one of the two readings.
func TestPressureScraperAgreesWithKernel(t *testing.T) {
	if _, err := pressure.Read("/proc/pressure/io"); pressure.Unavailable(err) {
		t.Skip("kernel without PSI")
	}
	s, logs := newTestPressureScraper(t, "/")
	assert.Zero(t, logs.Len())
	for range 3 {
		before, err := pressure.Read("/proc/pressure/io")
		require.NoError(t, err)
		md, err := s.scrape(t.Context())
		require.NoError(t, err)
		after, err := pressure.Read("/proc/pressure/io")
		require.NoError(t, err)

		got := pressurePoints(t, md)
		require.Len(t, got, 4)
		for kind, pair := range map[string][2]pressure.Stall{"some": {before.Some, after.Some}, "full": {before.Full, after.Full}} {
			total := got["disk_health.io.linux.pressure.total"][kind]
			assert.GreaterOrEqual(t, total.DoubleValue(), pair[0].TotalSeconds(), kind)
			assert.LessOrEqual(t, total.DoubleValue(), pair[1].TotalSeconds(), kind)
			boot, err := boottime.Read("/proc", time.Now())
			require.NoError(t, err)
			assert.Equal(t, pcommon.NewTimestampFromTime(boot), total.StartTimestamp())
			for name, avg := range map[string][2]float64{
				"disk_health.io.linux.pressure.10s": {pair[0].Avg10, pair[1].Avg10},
				"disk_health.io.linux.pressure.1m":  {pair[0].Avg60, pair[1].Avg60},
				"disk_health.io.linux.pressure.5m":  {pair[0].Avg300, pair[1].Avg300},
			} {
				assert.Contains(t, avg, got[name][kind].DoubleValue(), "%s %s", name, kind)
			}
		}
		time.Sleep(1100 * time.Millisecond) // the kernel updates the averages every 2 s
	}
}

// TestPressureScraperWithoutPSI: a kernel without /proc/pressure is logged once at start; scrapes report
// nothing and no error.
func TestPressureScraperWithoutPSI(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "proc"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "proc", "stat"), []byte("btime 1764396000\n"), 0o644))
	s, logs := newTestPressureScraper(t, root)
	for range 5 {
		md, err := s.scrape(t.Context())
		require.NoError(t, err)
		assert.Zero(t, md.MetricCount())
	}
	require.Equal(t, 1, logs.Len(), "reported once, at start")
	entry := logs.All()[0]
	assert.Contains(t, entry.Message, "no I/O pressure stall information")
	assert.Equal(t, filepath.Join(root, "proc", "pressure", "io"), entry.ContextMap()["path"])
}

// TestPressureScraperMalformed: a file the parser cannot trust is an error of that scrape, naming the
// file and the field, and not the "no PSI" case.
func TestPressureScraperMalformed(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "proc", "pressure"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "proc", "stat"), []byte("btime 1764396000\n"), 0o644))
	path := filepath.Join(root, "proc", "pressure", "io")
	require.NoError(t, os.WriteFile(path, []byte("some avg10=0.10 avg60=0.20 avg300=0.30 total=100\nfull avg10=0.10 avg60=x avg300=0.30 total=50\n"), 0o644))
	s, logs := newTestPressureScraper(t, root)
	assert.Zero(t, logs.Len())
	md, err := s.scrape(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), path+": pressure line 2: field avg60 \"x\": invalid syntax")
	assert.Zero(t, md.MetricCount())

	// Fixed: the next scrape reports, with the totals in seconds and the averages as ratios.
	require.NoError(t, os.WriteFile(path, []byte("some avg10=12.50 avg60=0.20 avg300=0.30 total=2500000\nfull avg10=0.10 avg60=0.00 avg300=0.30 total=500000\n"), 0o644))
	md, err = s.scrape(t.Context())
	require.NoError(t, err)
	got := pressurePoints(t, md)
	assert.InDelta(t, 2.5, got["disk_health.io.linux.pressure.total"]["some"].DoubleValue(), 1e-12)
	assert.InDelta(t, 0.5, got["disk_health.io.linux.pressure.total"]["full"].DoubleValue(), 1e-12)
	assert.InDelta(t, 0.125, got["disk_health.io.linux.pressure.10s"]["some"].DoubleValue(), 1e-12)
	assert.Equal(t, pcommon.NewTimestampFromTime(time.Unix(1764396000, 0)), got["disk_health.io.linux.pressure.total"]["some"].StartTimestamp())
}

// TestPressureScraperTotalGoingBackStartsANewSeries: the kernel's totals never fall, but a replaced or
// garbage file can make them; the cumulative series then starts again at the previous scrape instead of
// falling within one series.
func TestPressureScraperTotalGoingBackStartsANewSeries(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "proc", "pressure"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "proc", "stat"), []byte("btime 1764396000\n"), 0o644))
	path := filepath.Join(root, "proc", "pressure", "io")
	write := func(some, full int) {
		require.NoError(t, os.WriteFile(path, fmt.Appendf(nil, "some avg10=0.10 avg60=0.20 avg300=0.30 total=%d\nfull avg10=0.10 avg60=0.20 avg300=0.30 total=%d\n", some, full), 0o644))
	}
	write(1, 1)
	s, _ := newTestPressureScraper(t, root)
	boot := pcommon.NewTimestampFromTime(time.Unix(1764396000, 0))
	var starts []pcommon.Timestamp
	var times []pcommon.Timestamp
	for _, v := range [][2]int{{2000000, 500000}, {3000000, 600000}, {3000000, 100}, {3500000, 200}} {
		write(v[0], v[1])
		md, err := s.scrape(t.Context())
		require.NoError(t, err)
		dp := pressurePoints(t, md)["disk_health.io.linux.pressure.total"]["full"]
		starts, times = append(starts, dp.StartTimestamp()), append(times, dp.Timestamp())
	}
	assert.Equal(t, []pcommon.Timestamp{boot, boot, times[1], times[1]}, starts)
}
