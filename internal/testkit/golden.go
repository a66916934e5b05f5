package testkit

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/golden"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// UpdateEnv names the one switch that makes every golden of the project rewrite itself:
// DISKHEALTH_UPDATE_GOLDEN=1 go test ./...
// A rewritten golden compared with itself proves nothing, so the run that rewrites a golden always
// fails it, saying which file to review; the next run, without the switch, is the one that can pass.
const UpdateEnv = "DISKHEALTH_UPDATE_GOLDEN"

// Updating says whether this run rewrites goldens.
func Updating() bool { return os.Getenv(UpdateEnv) != "" }

// rewrite writes data to path, making its directories, and fails the test: see UpdateEnv.
func rewrite(t testing.TB, path string, data []byte) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, data, 0o644))
	rewritten(t, path)
}

// rewritten fails the test whose golden at path was just rewritten.
func rewritten(t testing.TB, path string) {
	t.Helper()
	t.Fatalf("%s rewritten (%s is set): review the diff and run the tests again without it", path, UpdateEnv)
}

// GoldenBytes compares got with the file at path byte for byte.
func GoldenBytes(t testing.TB, path string, got []byte) {
	t.Helper()
	if Updating() {
		rewrite(t, path, got)
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "no golden: run the test once with %s=1", UpdateEnv)
	assert.Equal(t, string(want), string(got), "%s", path)
}

// GoldenJSON compares v, marshalled as indented JSON, with the JSON file at path; the file's layout
// and key order do not matter, its content does.
func GoldenJSON(t testing.TB, path string, v any) {
	t.Helper()
	js, err := json.MarshalIndent(v, "", "  ")
	require.NoError(t, err)
	if Updating() {
		rewrite(t, path, append(js, '\n'))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "no golden: run the test once with %s=1", UpdateEnv)
	assert.JSONEq(t, string(want), string(js), "%s", path)
}

// AssertGolden compares md with testdata/expected_metrics/<name>.yaml, timestamps included unless opts
// say otherwise; the order of resources, metrics and points never matters.
func AssertGolden(t testing.TB, name string, md pmetric.Metrics, opts ...pmetrictest.CompareMetricsOption) {
	t.Helper()
	path := filepath.Join("testdata", "expected_metrics", name+".yaml")
	if Updating() {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, golden.WriteMetricsToFile(path, md, golden.SkipMetricTimestampNormalization()))
		rewritten(t, path)
	}
	want, err := golden.ReadMetrics(path)
	require.NoError(t, err)
	opts = append(opts, pmetrictest.IgnoreScopeVersion(), pmetrictest.IgnoreResourceMetricsOrder(),
		pmetrictest.IgnoreMetricsOrder(), pmetrictest.IgnoreMetricDataPointsOrder())
	require.NoError(t, pmetrictest.CompareMetrics(want, md, opts...))
}

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

// T0 is the fixtures' wall clock at the first scrape.
var T0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
