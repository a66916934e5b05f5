package latencyscraper

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper/scrapertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	dhtest "github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/biolat"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/latencyscraper/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/signs"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/tick"
)

// fakeProbe serves fixed snapshots; Forget drops a device's series from what it serves next, as the
// real probe does. collecting, when set, runs as Collect is called: the host going on while the maps
// are read.
type fakeProbe struct {
	started    time.Time
	snap       biolat.Snapshot
	forgotten  []biolat.Dev
	closed     bool
	collecting func()
}

func (p *fakeProbe) Hook() string       { return "block_io_done" }
func (p *fakeProbe) Started() time.Time { return p.started }
func (p *fakeProbe) Close() error       { p.closed = true; return nil }
func (p *fakeProbe) Collect() (biolat.Snapshot, error) {
	if p.collecting != nil {
		p.collecting()
	}
	return p.snap, nil
}
func (p *fakeProbe) Forget(d biolat.Dev) error {
	p.forgotten = append(p.forgotten, d)
	var keep []biolat.Series
	for _, s := range p.snap.Series {
		if s.Dev != d {
			keep = append(keep, s)
		}
	}
	p.snap.Series = keep
	return nil
}

var (
	sda   = biolat.Dev{Major: 8, Minor: 0}
	dm0   = biolat.Dev{Major: 252, Minor: 0}
	loop0 = biolat.Dev{Major: 7, Minor: 0}
	t0    = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
)

// fakeRoot writes a host with sda (a disk with a WWN), sda1, dm-0 and loop0.
func fakeRoot(t *testing.T, devices ...string) string {
	t.Helper()
	root := t.TempDir()
	lines := map[string]string{
		"sda":   "   8       0 sda 10 0 80 5 20 0 160 9 0 14 14 1 0 8 3 2 1",
		"sda1":  "   8       1 sda1 10 0 80 5 20 0 160 9 0 14 14 0 0 0 0 0 0",
		"dm-0":  " 252       0 dm-0 3 0 24 1 0 0 0 0 0 1 1 0 0 0 0 0 0",
		"loop0": "   7       0 loop0 1 0 8 0 0 0 0 0 0 0 0 0 0 0 0 0 0",
	}
	var ds strings.Builder
	for _, d := range devices {
		ds.WriteString(lines[d] + "\n")
	}
	write := func(rel, content string) {
		p := filepath.Join(root, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	write("proc/diskstats", ds.String())
	write("sys/class/block/sda/size", "2097152\n")
	write("sys/class/block/sda/wwid", "naa.5000c500a1b2c3d4\n")
	write("sys/class/block/sda/device/model", "TEST DISK\n")
	write("sys/block/sda/sda1/partition", "1\n")
	require.NoError(t, os.Symlink("../../block/sda/sda1", filepath.Join(root, "sys/class/block/sda1")))
	write("sys/class/block/dm-0/dm/name", "vg-root\n")
	write("sys/class/block/loop0/size", "0\n")
	return root
}

func hist(offset int32, zero uint64, buckets ...uint64) biolat.Histogram {
	h := biolat.Histogram{ZeroCount: zero, Offset: offset, Buckets: buckets, Count: zero}
	for i, n := range buckets {
		h.Count += n
		// A plausible sum: each request at its bucket's upper bound.
		h.Sum += float64(n) * pow2(float64(offset+int32(i)+1)/8)
	}
	return h
}

func pow2(x float64) float64 { return math.Exp2(x) }

func sampleSnapshot() biolat.Snapshot {
	return biolat.Snapshot{
		Series: []biolat.Series{
			{Dev: loop0, Direction: biolat.Read, Kind: biolat.Total, Histogram: hist(-100, 0, 1)},
			{Dev: sda, Direction: biolat.Read, Kind: biolat.Total, Histogram: hist(-110, 0, 3, 0, 5, 2)},
			{Dev: sda, Direction: biolat.Read, Kind: biolat.DeviceTime, Histogram: hist(-112, 0, 6, 4)},
			{Dev: sda, Direction: biolat.Write, Kind: biolat.Total, Histogram: hist(-105, 1, 7, 1, 0, 0, 1)},
			{Dev: sda, Direction: biolat.Write, Kind: biolat.DeviceTime, Histogram: hist(-108, 0, 9, 1)},
			{Dev: sda, Direction: biolat.Discard, Kind: biolat.Total, Histogram: hist(-60, 0, 2)},
			{Dev: sda, Direction: biolat.Flush, Kind: biolat.Total, Histogram: hist(-40, 0, 1, 0, 1)},
			{Dev: dm0, Direction: biolat.Read, Kind: biolat.Total, Histogram: hist(-95, 0, 3)},
		},
		Errors: []biolat.ErrorCount{
			{Dev: loop0, Direction: biolat.Read, Status: "ioerr", Count: 9},
			{Dev: sda, Direction: biolat.Write, Status: "ioerr", Count: 2},
			{Dev: sda, Direction: biolat.Flush, Status: "timeout", Count: 1},
			{Dev: dm0, Direction: biolat.Read, Status: "medium", Count: 4},
		},
		Drops: biolat.Drops{NoStartTime: 5, HistogramsFull: 0, ErrorsFull: 1, NoIssueTime: 7, NotRun: 2},
	}
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newTestScraper(t *testing.T, cfg *Config, open opener, c *clock) (*latencyScraper, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	set := scrapertest.NewNopSettings(metadata.Type)
	set.Logger = zap.New(core)
	s, err := newScraper(set, cfg, open, c.now)
	require.NoError(t, err)
	require.NoError(t, s.start(t.Context(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, s.shutdown(t.Context())) })
	return s, logs
}

func fakeOpener(p *fakeProbe, got *biolat.Options) opener {
	return func(o biolat.Options) (probe, error) {
		*got = o
		return p, nil
	}
}

// TestScrapeGolden: the pdata mapping of a fixed snapshot. Each probe histogram becomes one point of
// its table row, one to one (scale 3, zero threshold 2^-20 s, offset, buckets, count, sum),
// cumulative since the probe attached, with system.device, disk.io.direction where the row has it,
// and hw.id on the whole disk; loop0 (not in iostat's default classes) is left out.
func TestScrapeGolden(t *testing.T) {
	for _, tc := range []struct {
		golden     string
		deviceTime bool
		points     int
	}{
		{"device-time", true, 7},
		// Without device_time the device-time series have no metric (the real probe has none then).
		{"default", false, 5},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			p := &fakeProbe{started: t0, snap: sampleSnapshot()}
			cfg := createDefaultConfig()
			cfg.RootPath = fakeRoot(t, "sda", "sda1", "dm-0", "loop0")
			cfg.DeviceTime = tc.deviceTime
			var opts biolat.Options
			s, logs := newTestScraper(t, cfg, fakeOpener(p, &opts), &clock{t0.Add(time.Minute)})
			assert.Equal(t, biolat.Options{DeviceTime: tc.deviceTime, MaxDevices: 64}, opts)
			require.Equal(t, 1, logs.Len())
			assert.Equal(t, "Block latency probe attached.", logs.All()[0].Message)

			md, err := s.scrape(t.Context())
			require.NoError(t, err)
			dhtest.AssertGolden(t, tc.golden, md)
			assert.Empty(t, p.forgotten)
			assert.Equal(t, tc.points, checkPoints(t, md, p.snap), "every series of sda and dm-0, none of loop0")
			assert.Equal(t, map[string]int64{"no_start_time": 5, "histograms_full": 0, "errors_full": 1, "no_issue_time": 7, "not_run": 2, "uncounted": 0},
				dropped(t, md), "every drop reason, the probe's counts, from its attach")
		})
	}
}

// checkPoints: every exponential histogram point equals its probe series, field by field.
// dropped is disk_health.latency.dropped by reason; each point starts at the probe's attach (t0).
func dropped(t *testing.T, md pmetric.Metrics) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	pdatawalk.ForEachMetric(md, func(_ pcommon.Resource, m pmetric.Metric) {
		if m.Name() != "disk_health.latency.dropped" {
			return
		}
		assert.True(t, m.Sum().IsMonotonic())
		dps := m.Sum().DataPoints()
		for i := range dps.Len() {
			r, _ := dps.At(i).Attributes().Get("latency.drop.reason")
			out[r.Str()] = dps.At(i).IntValue()
			assert.Equal(t, pcommon.NewTimestampFromTime(t0), dps.At(i).StartTimestamp())
		}
	})
	return out
}

func checkPoints(t *testing.T, md pmetric.Metrics, snap biolat.Snapshot) int {
	t.Helper()
	n := 0
	pdatawalk.ForEachMetric(md, func(_ pcommon.Resource, m pmetric.Metric) {
		if m.Type() != pmetric.MetricTypeExponentialHistogram {
			return
		}
		assert.Equal(t, pmetric.AggregationTemporalityCumulative, m.ExponentialHistogram().AggregationTemporality())
		dps := m.ExponentialHistogram().DataPoints()
		for i := range dps.Len() {
			dp := dps.At(i)
			n++
			dev, _ := dp.Attributes().Get("system.device")
			dir, hasDir := dp.Attributes().Get("disk.io.direction")
			found := false
			for _, x := range snap.Series {
				name := map[biolat.Dev]string{sda: "sda", dm0: "dm-0"}[x.Dev]
				row := histograms[histogramFor(x.Kind, x.Direction)]
				if name != dev.Str() || row.name != m.Name() || (hasDir && dir.Str() != x.Direction.String()) {
					continue
				}
				found = true
				h := x.Histogram
				assert.Equal(t, int32(3), dp.Scale())
				assert.Equal(t, h.Count, dp.Count())
				assert.Equal(t, h.ZeroCount, dp.ZeroCount())
				assert.InDelta(t, h.Sum, dp.Sum(), 1e-12)
				assert.Equal(t, h.Offset, dp.Positive().Offset())
				assert.Equal(t, h.Buckets, dp.Positive().BucketCounts().AsRaw())
				total := dp.ZeroCount()
				for _, c := range dp.Positive().BucketCounts().AsRaw() {
					total += c
				}
				assert.Equal(t, dp.Count(), total, "count = zero + buckets")
				assert.InDelta(t, 1.0/(1<<20), dp.ZeroThreshold(), 0)
				assert.Equal(t, pcommon.NewTimestampFromTime(t0), dp.StartTimestamp())
				assert.False(t, dp.HasMin() || dp.HasMax())
				hw, ok := dp.Attributes().Get("hw.id")
				assert.Equal(t, x.Dev == sda, ok, "hw.id on the whole disk only")
				if ok {
					assert.Equal(t, "naa.5000c500a1b2c3d4", hw.Str())
				}
			}
			assert.True(t, found, "%s %v has no probe series", m.Name(), dp.Attributes().AsRaw())
		}
	})
	return n
}

// TestDepartedDeviceRestarts: a device that leaves /proc/diskstats is forgotten in the probe and
// reported no more; when it comes back its series start at the time it was forgotten.
func TestDepartedDeviceRestarts(t *testing.T) {
	p := &fakeProbe{started: t0, snap: sampleSnapshot()}
	cfg := createDefaultConfig()
	cfg.RootPath = fakeRoot(t, "sda", "dm-0")
	c := &clock{t0.Add(time.Minute)}
	var opts biolat.Options
	s, _ := newTestScraper(t, cfg, fakeOpener(p, &opts), c)
	_, err := s.scrape(t.Context())
	require.NoError(t, err)
	// loop0 is in the snapshot but not in this host's diskstats: gone.
	assert.Equal(t, []biolat.Dev{loop0}, p.forgotten)

	// sda leaves.
	require.NoError(t, os.WriteFile(filepath.Join(cfg.RootPath, "proc", "diskstats"), []byte(" 252       0 dm-0 3 0 24 1 0 0 0 0 0 1 1 0 0 0 0 0 0\n"), 0o644))
	c.t = t0.Add(2 * time.Minute)
	md, err := s.scrape(t.Context())
	require.NoError(t, err)
	assert.Contains(t, p.forgotten, sda)
	assert.Empty(t, devicesIn(md)["sda"])

	// sda is back with new I/O.
	p.snap.Series = append(p.snap.Series, biolat.Series{Dev: sda, Direction: biolat.Read, Kind: biolat.Total, Histogram: hist(-100, 0, 1)})
	require.NoError(t, os.WriteFile(filepath.Join(cfg.RootPath, "proc", "diskstats"), []byte("   8       0 sda 1 0 8 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n 252       0 dm-0 3 0 24 1 0 0 0 0 0 1 1 0 0 0 0 0 0\n"), 0o644))
	c.t = t0.Add(3 * time.Minute)
	md, err = s.scrape(t.Context())
	require.NoError(t, err)
	starts := devicesIn(md)
	assert.Equal(t, []pcommon.Timestamp{pcommon.NewTimestampFromTime(t0.Add(2 * time.Minute))}, starts["sda"], "new start: when sda was forgotten")
	assert.Equal(t, pcommon.NewTimestampFromTime(t0), starts["dm-0"][0], "dm-0 still counts from the attach")
}

// devicesIn returns the start times of each device's histogram points.
func devicesIn(md pmetric.Metrics) map[string][]pcommon.Timestamp {
	out := map[string][]pcommon.Timestamp{}
	pdatawalk.ForEachMetric(md, func(_ pcommon.Resource, m pmetric.Metric) {
		if m.Type() != pmetric.MetricTypeExponentialHistogram {
			return
		}
		dps := m.ExponentialHistogram().DataPoints()
		for i := range dps.Len() {
			d, _ := dps.At(i).Attributes().Get("system.device")
			out[d.Str()] = append(out[d.Str()], dps.At(i).StartTimestamp())
		}
	})
	return out
}

// TestFallbackLogsOneLine: where the probe cannot load, start succeeds, exactly one line says why and
// what to do (INFO; WARN for a rejection, which is a bug), and every scrape reports nothing and no error.
// The source's status says the same: off, for the reason the line gives (disk_health.source.status).
func TestFallbackLogsOneLine(t *testing.T) {
	for _, tc := range []struct {
		err    error
		level  zapcore.Level
		cause  string
		want   string
		reason emit.Reason
	}{
		{&biolat.UnavailableError{Cause: biolat.CauseMissingCapabilities, Missing: []string{"CAP_BPF", "CAP_PERFMON"}, Err: syscall.EPERM},
			zapcore.InfoLevel, "missing_capabilities", "lacks CAP_BPF, CAP_PERFMON: grant it (Kubernetes: securityContext.capabilities.add [BPF, PERFMON]",
			emit.ReasonMissingCapability},
		{&biolat.UnavailableError{Cause: biolat.CauseNoBTF}, zapcore.InfoLevel, "no_btf", "CONFIG_DEBUG_INFO_BTF=y", emit.ReasonUnsupportedKernel},
		{&biolat.UnavailableError{Cause: biolat.CauseOldKernel, Detail: "5.4.0"}, zapcore.InfoLevel, "old_kernel", "kernel 5.4.0 has neither", emit.ReasonUnsupportedKernel},
		{&biolat.UnavailableError{Cause: biolat.CauseUnsupportedOS, Detail: "darwin/arm64"}, zapcore.InfoLevel, "unsupported_os", "this is darwin/arm64", emit.ReasonUnsupportedKernel},
		{&biolat.UnavailableError{Cause: biolat.CauseDenied, Detail: "a seccomp filter", Err: syscall.EPERM}, zapcore.InfoLevel, "denied", "seccomp", emit.ReasonSeccomp},
		{&biolat.UnavailableError{Cause: biolat.CauseRejected, Detail: "6.18.0", Err: fmt.Errorf("invalid argument")}, zapcore.WarnLevel, "rejected", "please report it", emit.ReasonError},
	} {
		t.Run(tc.cause, func(t *testing.T) {
			cfg := createDefaultConfig()
			cfg.RootPath = fakeRoot(t, "sda")
			cfg.Status = emit.NewStatus()
			s, logs := newTestScraper(t, cfg, func(biolat.Options) (probe, error) { return nil, tc.err }, &clock{t0})
			for range 3 {
				md, err := s.scrape(t.Context())
				require.NoError(t, err)
				assert.Zero(t, md.DataPointCount())
			}
			require.Equal(t, 1, logs.Len(), "exactly one line")
			e := logs.All()[0]
			assert.Equal(t, tc.level, e.Level)
			assert.Contains(t, e.Message, tc.want)
			assert.Contains(t, e.Message, "The latency source reports nothing; every other source runs on.")
			assert.NotContains(t, e.Message, "\n")
			assert.Equal(t, tc.cause, e.ContextMap()["cause"])
			state, reason := cfg.Status.Get()
			assert.Equal(t, emit.StateOff, state)
			assert.Equal(t, tc.reason, reason)
		})
	}
}

// TestHistogramsDocumented: documentation-extra.md has, for every row of the histogram table, its
// heading, its description verbatim and its unit and type; and no other histogram.
func TestHistogramsDocumented(t *testing.T) {
	data, err := os.ReadFile("documentation-extra.md")
	require.NoError(t, err)
	doc := string(data)
	var headings []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if h, ok := strings.CutPrefix(sc.Text(), "### "); ok {
			headings = append(headings, h)
		}
	}
	var names []string
	for _, h := range histograms {
		names = append(names, h.name)
		block := fmt.Sprintf("### %s\n\n%s\n\n| Unit | Metric Type | Value Type | Aggregation Temporality | Monotonic | Stability |\n"+
			"| ---- | ----------- | ---------- | ----------------------- | --------- | --------- |\n| %s | ExponentialHistogram | Double | Cumulative | - | Development |\n",
			h.name, h.description, h.unit)
		assert.Contains(t, doc, block, h.name)
		at := strings.Index(doc, "### "+h.name)
		require.GreaterOrEqual(t, at, 0, h.name)
		attrs := doc[at:]
		if next := strings.Index(attrs[4:], "\n### "); next >= 0 {
			attrs = attrs[:next+4]
		}
		assert.Equal(t, h.withDirection, strings.Contains(attrs, "| disk.io.direction |"), h.name)
		assert.Contains(t, attrs, "| system.device |", h.name)
		assert.Contains(t, attrs, "| hw.id |", h.name)
	}
	assert.Equal(t, names, headings)
}

// TestRealProbeStartsOrExplains runs start with the real probe on this machine: it either attaches or
// logs the one line; a scrape never fails either way.
func TestRealProbeStartsOrExplains(t *testing.T) {
	cfg := createDefaultConfig()
	s, logs := newTestScraper(t, cfg, openBiolat, &clock{time.Now()})
	require.Equal(t, 1, logs.Len())
	t.Logf("%s: %s", logs.All()[0].Level, logs.All()[0].Message)
	s.now = time.Now
	_, err := s.scrape(t.Context())
	require.NoError(t, err)
}

// TestKernelErrorsReachTheBoard: every whole disk's kernel-seen errors, summed over directions and
// statuses, go to the signs board under its hw.id for the SMART verdict (kernel_io_errors_rising); a
// device without a physical disk behind it (dm-0) or outside iostat's classes (loop0) posts nothing.
func TestKernelErrorsReachTheBoard(t *testing.T) {
	p := &fakeProbe{started: t0, snap: sampleSnapshot()}
	cfg := createDefaultConfig()
	cfg.RootPath = fakeRoot(t, "sda", "sda1", "dm-0", "loop0")
	cfg.Signs = signs.New()
	var opts biolat.Options
	s, _ := newTestScraper(t, cfg, fakeOpener(p, &opts), &clock{t0.Add(time.Minute)})
	md, err := s.scrape(t.Context())
	require.NoError(t, err)

	var sdaID string
	pdatawalk.ForEachMetric(md, func(_ pcommon.Resource, m pmetric.Metric) {
		dps := pdatawalk.NumberPoints(m)
		for i := range dps.Len() {
			if dev, _ := dps.At(i).Attributes().Get("system.device"); dev.Str() == "sda" {
				id, _ := dps.At(i).Attributes().Get("hw.id")
				sdaID = id.Str()
			}
		}
	})
	require.NotEmpty(t, sdaID, "sda's error points carry its hw.id")
	assert.Equal(t, []signs.Counter{{Kind: signs.KernelIOErrors, Subject: "kernel-seen I/O errors of sda", Value: 3}},
		cfg.Signs.Counters(sdaID))
}

// TestDiskWithoutErrorsPostsZero: a whole disk the kernel completed no failed request for posts 0,
// the baseline kernel_io_errors_rising needs: its first errors are then a rise, even when they all
// come between two SMART reads.
func TestDiskWithoutErrorsPostsZero(t *testing.T) {
	snap := sampleSnapshot()
	snap.Errors = nil
	p := &fakeProbe{started: t0, snap: snap}
	cfg := createDefaultConfig()
	cfg.RootPath = fakeRoot(t, "sda", "sda1", "dm-0", "loop0")
	cfg.Signs = signs.New()
	var opts biolat.Options
	s, _ := newTestScraper(t, cfg, fakeOpener(p, &opts), &clock{t0.Add(time.Minute)})
	md, err := s.scrape(t.Context())
	require.NoError(t, err)
	ids := hwIDsIn(md)
	require.Equal(t, []string{"naa.5000c500a1b2c3d4"}, ids)
	assert.Equal(t, []signs.Counter{{Kind: signs.KernelIOErrors, Subject: "kernel-seen I/O errors of sda", Value: 0}},
		cfg.Signs.Counters(ids[0]))
}

// TestSwappedDiskRestarts: a disk swapped under the same name and major:minor (a new diskseq on 5.15+;
// before, counters that went back) is known by its new hw.id at once; what the probe had counted is not
// reported under it: its series start again at the scrape that saw the swap.
func TestSwappedDiskRestarts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		diskseq bool
	}{{"diskseq", true}, {"counters reset", false}} {
		t.Run(tc.name, func(t *testing.T) {
			p := &fakeProbe{started: t0, snap: sampleSnapshot()}
			cfg := createDefaultConfig()
			cfg.RootPath = fakeRoot(t, "sda", "dm-0")
			write := func(rel, content string) {
				require.NoError(t, os.WriteFile(filepath.Join(cfg.RootPath, rel), []byte(content), 0o644))
			}
			if tc.diskseq {
				write("sys/class/block/sda/diskseq", "3\n")
			}
			c := &clock{t0.Add(time.Minute)}
			var opts biolat.Options
			s, _ := newTestScraper(t, cfg, fakeOpener(p, &opts), c)
			md, err := s.scrape(t.Context())
			require.NoError(t, err)
			assert.Equal(t, []string{"naa.5000c500a1b2c3d4"}, hwIDsIn(md))

			// The swap: another WWN; the new disk's counters start from zero (diskseq or not).
			write("sys/class/block/sda/wwid", "naa.5000c500ffffffff\n")
			if tc.diskseq {
				write("sys/class/block/sda/diskseq", "4\n")
			}
			write("proc/diskstats", "   8       0 sda 1 0 8 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n 252       0 dm-0 3 0 24 1 0 0 0 0 0 1 1 0 0 0 0 0 0\n")
			c.t = t0.Add(2 * time.Minute)
			p.forgotten = nil
			md, err = s.scrape(t.Context())
			require.NoError(t, err)
			assert.Contains(t, p.forgotten, sda)
			assert.Empty(t, devicesIn(md)["sda"], "nothing the old disk counted under the new identity")
			assert.NotContains(t, hwIDsIn(md), "naa.5000c500a1b2c3d4")

			p.snap.Series = append(p.snap.Series, biolat.Series{Dev: sda, Direction: biolat.Read, Kind: biolat.Total, Histogram: hist(-100, 0, 1)})
			c.t = t0.Add(3 * time.Minute)
			md, err = s.scrape(t.Context())
			require.NoError(t, err)
			assert.Equal(t, []string{"naa.5000c500ffffffff"}, hwIDsIn(md))
			assert.Equal(t, []pcommon.Timestamp{pcommon.NewTimestampFromTime(t0.Add(2 * time.Minute))}, devicesIn(md)["sda"])
		})
	}
}

// hwIDsIn returns the distinct hw.id values of the histogram points.
func hwIDsIn(md pmetric.Metrics) []string {
	var out []string
	pdatawalk.ForEachMetric(md, func(_ pcommon.Resource, m pmetric.Metric) {
		if m.Type() != pmetric.MetricTypeExponentialHistogram {
			return
		}
		dps := m.ExponentialHistogram().DataPoints()
		for i := range dps.Len() {
			if v, ok := dps.At(i).Attributes().Get("hw.id"); ok && !slices.Contains(out, v.Str()) {
				out = append(out, v.Str())
			}
		}
	})
	return out
}

// TestScrapeSharesTheTick: in a receiver, latency takes its device list from the tick's shared
// /proc/diskstats read; when iostat read it earlier in the tick, latency reuses that read (sda is
// still listed although the file no longer has it).
func TestScrapeSharesTheTick(t *testing.T) {
	p := &fakeProbe{started: t0, snap: sampleSnapshot()}
	cfg := createDefaultConfig()
	cfg.RootPath = fakeRoot(t, "sda")
	c := &clock{t0.Add(time.Minute)}
	shared := tick.New(cfg.RootPath, c.now, nil)
	iostat := shared.Reader(30 * time.Second)
	cfg.Tick = shared.Reader(30 * time.Second)
	var opts biolat.Options
	s, _ := newTestScraper(t, cfg, fakeOpener(p, &opts), c)
	require.NoError(t, iostat.Use(t.Context(), func(sn *tick.Snapshot) error {
		require.Len(t, sn.Stats, 1)
		return nil
	}))
	require.NoError(t, os.WriteFile(filepath.Join(cfg.RootPath, "proc", "diskstats"), []byte(" 252 0 dm-0 3 0 24 1 0 0 0 0 0 1 1 0 0 0 0 0 0\n"), 0o644))
	c.t = c.t.Add(time.Second)
	md, err := s.scrape(t.Context())
	require.NoError(t, err)
	assert.Contains(t, pdatawalk.Devices(md), "sda", "listed by iostat's read of this tick")
	assert.NotContains(t, p.forgotten, sda, "sda has not departed")
}
