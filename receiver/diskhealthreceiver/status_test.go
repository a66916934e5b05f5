package diskhealthreceiver

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
)

// sourceStatuses reads disk_health.source.status out of md: source → "state/reason" of its point at
// 1 (a (state, reason) just left is sent at 0: sourceStatusPoints).
func sourceStatuses(t *testing.T, md pmetric.Metrics) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, points := range sourceStatusPoints(md) {
		for cond, v := range points {
			if v == 1 {
				require.NotContains(t, out, name, "one series at 1 per source")
				out[name] = cond
			}
		}
	}
	return out
}

// sourceStatusPoints reads every point of disk_health.source.status out of md: source → "state/reason"
// → value.
func sourceStatusPoints(md pmetric.Metrics) map[string]map[string]int64 {
	out := map[string]map[string]int64{}
	for _, rm := range md.ResourceMetrics().All() {
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				if m.Name() != "disk_health.source.status" {
					continue
				}
				for _, dp := range m.Sum().DataPoints().All() {
					name, _ := dp.Attributes().Get("disk_health.source.name")
					state, _ := dp.Attributes().Get("disk_health.source.state")
					reason, _ := dp.Attributes().Get("disk_health.source.reason")
					if out[name.Str()] == nil {
						out[name.Str()] = map[string]int64{}
					}
					out[name.Str()][state.Str()+"/"+reason.Str()] = dp.IntValue()
				}
			}
		}
	}
	return out
}

// statusRoot is a host root with one SATA disk (iostat's k4.15-sata fixture) whose kernel has no
// pressure stall information; withSys false leaves its sysfs out.
func statusRoot(t *testing.T, withSys bool) string {
	t.Helper()
	fixture := filepath.Join("internal", "scraper", "iostatscraper", "testdata", "roots", "k4.15-sata")
	root := testkit.NewRoot(t)
	if withSys {
		root.CopyTree(filepath.Join(fixture, "sys"), "sys", nil)
	}
	for src, dst := range map[string]string{"stat": "stat", "diskstats.1": "diskstats"} {
		b, err := os.ReadFile(filepath.Join(fixture, "proc", src))
		require.NoError(t, err)
		root.Write(filepath.Join("proc", dst), string(b))
	}
	return root.Dir
}

// TestSourceStatusThroughScrape runs the receiver with iostat and pressure on, on a root whose kernel
// has no pressure stall information: pressure cannot run and says so as data (off/unsupported_kernel,
// from the start that logs it), every source disabled in the config is off/not_configured, and iostat
// is ok, or degraded when its scrapes report a problem (the root without sysfs): one series for each
// source of the registry, every collection_interval.
func TestSourceStatusThroughScrape(t *testing.T) {
	for _, tc := range []struct {
		name    string
		withSys bool
		iostat  string
	}{
		{"sysfs", true, "ok/none"},
		{"no sysfs: a scrape problem", false, "degraded/error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := createDefaultConfig().(*Config)
			cfg.RootPath = statusRoot(t, tc.withSys)
			require.NoError(t, confmap.NewFromStringMap(Only("iostat", "pressure")).Unmarshal(cfg))
			cfg.ControllerConfig.CollectionInterval = 10 * time.Millisecond
			cfg.ControllerConfig.InitialDelay = 0

			sink := &consumertest.MetricsSink{}
			r, err := NewFactory().CreateMetrics(t.Context(), receivertest.NewNopSettings(metadata.Type), cfg, sink)
			require.NoError(t, err)
			require.NoError(t, r.Start(t.Context(), componenttest.NewNopHost()))
			want := map[string]string{}
			for _, name := range Sources() {
				want[name] = "off/not_configured"
			}
			want["iostat"] = tc.iostat
			want["pressure"] = "off/unsupported_kernel"
			var got map[string]string
			// The status of a tick before iostat's first scrape is ok: wait for the one after.
			for end := time.Now().Add(10 * time.Second); time.Now().Before(end) && !assert.ObjectsAreEqual(want, got); time.Sleep(10 * time.Millisecond) {
				for _, md := range sink.AllMetrics() {
					if s := sourceStatuses(t, md); len(s) > 0 {
						got = s
					}
				}
			}
			require.NoError(t, r.Shutdown(t.Context()))
			assert.Equal(t, want, got)
		})
	}
}

// TestSourceStatusSwitchedByMetricsKey: the receiver's own metric is switched by the metrics: key like
// the sources' metrics, and written back by Marshal.
func TestSourceStatusSwitchedByMetricsKey(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	assert.True(t, cfg.status.Metrics.DiskHealthSourceStatus.Enabled, "on by default")
	require.NoError(t, confmap.NewFromStringMap(map[string]any{
		"metrics": map[string]any{"disk_health.source.status": map[string]any{"enabled": false}},
	}).Unmarshal(cfg))
	assert.False(t, cfg.status.Metrics.DiskHealthSourceStatus.Enabled)
	out := confmap.New()
	require.NoError(t, cfg.Marshal(out))
	assert.Equal(t, false, out.Get("metrics::disk_health.source.status::enabled"))
}

// TestSourceStatusSendsTheConditionLeftOnce: a source's current (state, reason) is sent at 1 every
// tick; at the tick it changes, the one it left is sent at 0, once, so the backend's last value of the
// old series is 0 and an alert on it resolves at the change; a source that stays costs one point.
func TestSourceStatusSendsTheConditionLeftOnce(t *testing.T) {
	st := emit.NewStatus()
	sc := statusScraper(receivertest.NewNopSettings(metadata.Type), metadata.NewDefaultMetricsBuilderConfig(),
		[]sourceStatus{{name: "iostat", running: true, status: st}, {name: "smart"}})
	scrape := func() map[string]map[string]int64 {
		md, err := sc.ScrapeMetrics(t.Context())
		require.NoError(t, err)
		return sourceStatusPoints(md)
	}
	off := map[string]int64{"off/not_configured": 1}

	assert.Equal(t, map[string]map[string]int64{"iostat": {"ok/none": 1}, "smart": off}, scrape())
	recordScrape(st, errors.New("read /proc/diskstats: short read"))
	assert.Equal(t, map[string]map[string]int64{"iostat": {"degraded/error": 1, "ok/none": 0}, "smart": off}, scrape())
	assert.Equal(t, map[string]map[string]int64{"iostat": {"degraded/error": 1}, "smart": off}, scrape(), "the state left is sent once")
	st.Set("probe", emit.StateOff, emit.ReasonSeccomp)
	assert.Equal(t, map[string]map[string]int64{"iostat": {"off/seccomp": 1, "degraded/error": 0}, "smart": off}, scrape(),
		"a new worst part: the (state, reason) left at 0")
	st.Clear("probe")
	recordScrape(st, nil)
	assert.Equal(t, map[string]map[string]int64{"iostat": {"ok/none": 1, "off/seccomp": 0}, "smart": off}, scrape())
}
