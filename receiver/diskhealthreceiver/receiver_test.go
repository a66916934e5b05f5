package diskhealthreceiver

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/collector/scraper"
	"go.opentelemetry.io/collector/scraper/scrapertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/sanitize"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/iostatscraper"
)

func TestSharedReceiver(t *testing.T) {
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	require.NoError(t, confmap.NewFromStringMap(Only()).Unmarshal(cfg))
	set := receivertest.NewNopSettings(metadata.Type)
	mr, err := f.CreateMetrics(t.Context(), set, cfg, consumertest.NewNop())
	require.NoError(t, err)
	lr, err := f.CreateLogs(t.Context(), set, cfg, consumertest.NewNop())
	require.NoError(t, err)
	assert.Same(t, mr, lr, "one receiver serves both pipelines")
	require.NoError(t, mr.Start(t.Context(), nil))
	require.NoError(t, lr.Start(t.Context(), nil))
	require.NoError(t, mr.Shutdown(t.Context()))
	require.NoError(t, lr.Shutdown(t.Context()))
	again, err := f.CreateMetrics(t.Context(), set, cfg, consumertest.NewNop())
	require.NoError(t, err)
	assert.NotSame(t, mr, again, "a shut-down receiver is not handed out again")
	require.NoError(t, again.Shutdown(t.Context()))
}

// TestOnePipelineRule: every source follows the same rule. Metrics-only sources run only with a metrics
// pipeline (pressure and cgroups once walked the cgroup tree for a logs pipeline alone); the SMART and
// stack sources, which send events, also run for a logs pipeline alone; a disabled source never runs.
// With a metrics pipeline one more controller runs: disk_health.source.status's.
func TestOnePipelineRule(t *testing.T) {
	set := receivertest.NewNopSettings(metadata.Type)
	var withEvents, withoutEvents []string
	// The sources on by default (netfs is opt-in, as remote filesystems are), with events or not.
	var byDefault, eventsByDefault int
	for _, r := range registry {
		if r.events {
			withEvents = append(withEvents, r.name)
		} else {
			withoutEvents = append(withoutEvents, r.name)
		}
		if *field(r.factory(nil).CreateDefaultConfig(), enabledField).(*bool) {
			byDefault++
			if r.events {
				eventsByDefault++
			}
		}
	}
	require.GreaterOrEqual(t, len(withEvents), 2)
	for _, tc := range []struct {
		name          string
		metrics, logs bool
		only          []string // the sources left on; nil: all
		want          int
	}{
		{name: "metrics", metrics: true, want: byDefault},
		{name: "metrics and logs", metrics: true, logs: true, want: byDefault},
		{name: "logs alone", logs: true, want: eventsByDefault},
		{name: "logs alone, every source on", logs: true, only: append(slices.Clone(withEvents), withoutEvents...), want: len(withEvents)},
		{name: "logs alone, one source with events off", logs: true, only: withEvents[1:], want: len(withEvents) - 1},
		{name: "logs alone, the sources with events off", logs: true, only: withoutEvents, want: 0},
		{name: "metrics, one source without events off", metrics: true, only: append(slices.Clone(withEvents), withoutEvents[1:]...), want: len(registry) - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := createDefaultConfig().(*Config)
			if tc.only != nil {
				require.NoError(t, confmap.NewFromStringMap(Only(tc.only...)).Unmarshal(cfg))
			}
			r := &diskHealthReceiver{set: set, cfg: cfg}
			if tc.metrics {
				r.metrics = consumertest.NewNop()
			}
			if tc.logs {
				r.logs = consumertest.NewNop()
			}
			require.NoError(t, r.build())
			want := tc.want
			if tc.metrics {
				want++ // disk_health.source.status
			}
			assert.Len(t, r.controllers, want)
		})
	}
}

// TestPersistentProblemLoggedOnce runs the receiver on a root whose /proc/diskstats has one bad line:
// the good devices are delivered every scrape and the bad line is logged once, as a warning, not at
// ERROR every scrape by the controller.
func TestPersistentProblemLoggedOnce(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "proc"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "proc", "stat"), []byte("btime 1764396000\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "proc", "diskstats"), []byte(
		"   8       0 sda 10 0 80 5 20 0 160 9 0 14 14\n   8      16 sdb 1x 0 80 5 20 0 160 9 0 14 14\n"), 0o644))
	cfg := createDefaultConfig().(*Config)
	cfg.RootPath = root
	require.NoError(t, confmap.NewFromStringMap(Only("iostat")).Unmarshal(cfg))
	section[iostatscraper.Config](cfg, "iostat").DeviceClasses = []string{"other"} // no sysfs in this root: every device is "other"
	cfg.ControllerConfig.CollectionInterval = 10 * time.Millisecond
	cfg.ControllerConfig.InitialDelay = 0

	core, logs := observer.New(zapcore.DebugLevel)
	set := receivertest.NewNopSettings(metadata.Type)
	set.Logger = zap.New(core)
	sink := &consumertest.MetricsSink{}
	r, err := NewFactory().CreateMetrics(t.Context(), set, cfg, sink)
	require.NoError(t, err)
	require.NoError(t, r.Start(t.Context(), componenttest.NewNopHost()))
	require.Eventually(t, func() bool { return len(sink.AllMetrics()) >= 10 }, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, r.Shutdown(t.Context()))

	for _, md := range sink.AllMetrics() {
		require.Positive(t, md.DataPointCount(), "sda is delivered every scrape")
	}
	var bad []observer.LoggedEntry
	for _, e := range logs.FilterMessageSnippet("Scrape problem").All() {
		if strings.Contains(e.ContextMap()["problem"].(string), "(sdb)") {
			bad = append(bad, e)
		}
	}
	require.Len(t, bad, 1, "one line for the bad line, however many scrapes")
	assert.Equal(t, zapcore.WarnLevel, bad[0].Level)
	assert.Empty(t, logs.FilterLevelExact(zapcore.ErrorLevel).All(), "nothing at ERROR every scrape")
}

// TestReportedBoundsPoints: a source's scrape past max_points_per_scrape is cut to whole resources within
// it, with one WARN naming the key (the 200 000-mount host gave 2.8 M points before).
func TestReportedBoundsPoints(t *testing.T) {
	const mounts, perMount = 20000, 14
	big := scraper.NewFactory(component.MustNewType("big"), func() component.Config { return &struct{}{} },
		scraper.WithMetrics(func(context.Context, scraper.Settings, component.Config) (scraper.Metrics, error) {
			return scraper.NewMetrics(func(context.Context) (pmetric.Metrics, error) {
				md := pmetric.NewMetrics()
				for range mounts {
					dps := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty().SetEmptyGauge().DataPoints()
					for range perMount {
						dps.AppendEmpty().SetIntValue(1)
					}
				}
				return md, nil
			})
		}, component.StabilityLevelDevelopment))
	core, logs := observer.New(zapcore.InfoLevel)
	set := scrapertest.NewNopSettings(big.Type())
	set.Logger = zap.New(core)
	var notes sanitize.Notes
	var problems emit.Problems
	s, err := reported(big, component.ID{}, &notes, &problems, defaultMaxPointsPerScrape, nil).CreateMetrics(t.Context(), set, nil)
	require.NoError(t, err)
	for range 3 {
		md, err := s.ScrapeMetrics(t.Context())
		require.NoError(t, err)
		assert.Equal(t, defaultMaxPointsPerScrape/perMount*perMount, md.DataPointCount())
	}
	// The bound's own lines: sanitize's notes are process-wide and may hold what earlier tests cut.
	warns := logs.FilterLevelExact(zapcore.WarnLevel).Filter(func(e observer.LoggedEntry) bool {
		return e.ContextMap()["key"] == maxPointsKey
	}).All()
	require.Len(t, warns, 1, "once per change, not per scrape")
	assert.EqualValues(t, mounts*perMount, warns[0].ContextMap()["points"])
}
