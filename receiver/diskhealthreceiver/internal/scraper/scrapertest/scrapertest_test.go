package scrapertest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// recorder is a testing.TB that records a failure instead of ending the outer test.
type recorder struct {
	testing.TB
	failed bool
	msg    string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.failed = true
	r.msg = format
}
func (r *recorder) FailNow() { r.failed = true; panic(r) }
func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = format
	r.FailNow()
}

func run(r *recorder, fn func()) {
	defer func() {
		if p := recover(); p != nil && p != r {
			panic(p)
		}
	}()
	fn()
}

func sample() pmetric.Metrics {
	md := pmetric.NewMetrics()
	m := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName("system.disk.io")
	m.SetEmptySum().DataPoints().AppendEmpty().SetIntValue(42)
	return md
}

// TestUpdateModeFailsAfterWriting: with the update variable set, AssertGolden writes the file and then
// fails; without it the same file passes.
func TestUpdateModeFailsAfterWriting(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	require.NoError(t, os.MkdirAll(filepath.Join("testdata", "expected_metrics"), 0o755))

	t.Setenv(UpdateEnv, "1")
	r := &recorder{TB: t}
	run(r, func() { AssertGolden(r, "sample", sample()) })
	assert.True(t, r.failed, "update mode must fail the test")
	assert.Contains(t, r.msg, "rewritten")
	_, err := os.Stat(filepath.Join("testdata", "expected_metrics", "sample.yaml"))
	require.NoError(t, err, "the file was written")

	t.Setenv(UpdateEnv, "")
	r = &recorder{TB: t}
	run(r, func() { AssertGolden(r, "sample", sample()) })
	assert.False(t, r.failed, "the written file compares equal")

	other := sample()
	other.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Sum().DataPoints().At(0).SetIntValue(43)
	r = &recorder{TB: t}
	run(r, func() { AssertGolden(r, "sample", other) })
	assert.True(t, r.failed, "a different value fails")
}
