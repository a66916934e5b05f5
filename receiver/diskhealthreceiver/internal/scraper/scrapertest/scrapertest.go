// Package scrapertest holds what the scrapers' tests share: golden files that cannot bless themselves,
// and walks over emitted metrics. Only _test files import it.
package scrapertest // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/scrapertest"

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/golden"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// UpdateEnv names the variable that makes AssertGolden rewrite the expected files:
// DISKHEALTH_UPDATE_GOLDEN=1 go test ./...
const UpdateEnv = "DISKHEALTH_UPDATE_GOLDEN"

// AssertGolden compares md with testdata/expected_metrics/<name>.yaml, timestamps included unless opts
// say otherwise; the order of resources, metrics and points never matters. In update mode it writes the
// file and then fails the test: a rewritten file compared with itself proves nothing, so the run that
// updates goldens can never be the run that passes.
func AssertGolden(t testing.TB, name string, md pmetric.Metrics, opts ...pmetrictest.CompareMetricsOption) {
	t.Helper()
	path := filepath.Join("testdata", "expected_metrics", name+".yaml")
	if os.Getenv(UpdateEnv) != "" {
		require.NoError(t, golden.WriteMetricsToFile(path, md, golden.SkipMetricTimestampNormalization()))
		t.Fatalf("%s rewritten (%s is set): review the diff and run the tests again without it", path, UpdateEnv)
	}
	want, err := golden.ReadMetrics(path)
	require.NoError(t, err)
	opts = append(opts, pmetrictest.IgnoreScopeVersion(), pmetrictest.IgnoreResourceMetricsOrder(),
		pmetrictest.IgnoreMetricsOrder(), pmetrictest.IgnoreMetricDataPointsOrder())
	require.NoError(t, pmetrictest.CompareMetrics(want, md, opts...))
}

// ForEachMetric calls fn for every metric in md with its resource.
func ForEachMetric(md pmetric.Metrics, fn func(pcommon.Resource, pmetric.Metric)) {
	for i := range md.ResourceMetrics().Len() {
		rm := md.ResourceMetrics().At(i)
		for j := range rm.ScopeMetrics().Len() {
			ms := rm.ScopeMetrics().At(j).Metrics()
			for k := range ms.Len() {
				fn(rm.Resource(), ms.At(k))
			}
		}
	}
}

// NumberPoints returns the points of a sum or gauge; none for other types.
func NumberPoints(m pmetric.Metric) pmetric.NumberDataPointSlice {
	switch m.Type() {
	case pmetric.MetricTypeSum:
		return m.Sum().DataPoints()
	case pmetric.MetricTypeGauge:
		return m.Gauge().DataPoints()
	default:
		return pmetric.NewNumberDataPointSlice()
	}
}

// Devices lists the system.device values in md, each once, in the order they first appear.
func Devices(md pmetric.Metrics) []string {
	seen := map[string]bool{}
	var out []string
	ForEachMetric(md, func(_ pcommon.Resource, m pmetric.Metric) {
		dps := NumberPoints(m)
		for i := range dps.Len() {
			if v, ok := dps.At(i).Attributes().Get("system.device"); ok && !seen[v.Str()] {
				seen[v.Str()] = true
				out = append(out, v.Str())
			}
		}
	})
	return out
}

// T0 is the fixtures' wall clock at the first scrape.
var T0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// AssertSameBytes requires want and got to marshal to identical OTLP protobuf bytes: the same
// resources, metrics, points and attributes in the same order. The direct emitters are held to the
// generated builder's output with it.
func AssertSameBytes(t testing.TB, want, got pmetric.Metrics) {
	t.Helper()
	var m pmetric.ProtoMarshaler
	wb, err := m.MarshalMetrics(want)
	require.NoError(t, err)
	gb, err := m.MarshalMetrics(got)
	require.NoError(t, err)
	require.Equal(t, want.DataPointCount(), got.DataPointCount())
	require.Equal(t, wb, gb)
}
