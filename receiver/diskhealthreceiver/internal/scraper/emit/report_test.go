package emit

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestReporterLogsOncePerChange(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	r := NewReporter(zap.New(core))
	bad := errors.New("diskstats line 3 (sdb): field 8 \"12x3444\": invalid syntax")
	other := errors.New("diskstats line 9 (sdc): 5 fields, want at least 14")

	for range 100 {
		require.NoError(t, r.Report(scrapererror.NewPartialScrapeError(errors.Join(bad), 1)))
	}
	require.Equal(t, 1, logs.Len(), "a persistent problem is logged once")
	assert.Equal(t, zapcore.WarnLevel, logs.All()[0].Level)
	assert.Equal(t, bad.Error(), logs.All()[0].ContextMap()["problem"])

	require.NoError(t, r.Report(scrapererror.NewPartialScrapeError(errors.Join(bad, other), 2)))
	require.Equal(t, 2, logs.Len(), "only the new problem is logged")
	assert.Equal(t, other.Error(), logs.All()[1].ContextMap()["problem"])

	require.NoError(t, r.Report(nil))
	require.Equal(t, 4, logs.Len(), "each problem's end is logged")
	for _, e := range logs.All()[2:] {
		assert.Equal(t, zapcore.InfoLevel, e.Level)
	}
	require.NoError(t, r.Report(nil))
	assert.Equal(t, 4, logs.Len())
}

func TestReporterBoundsAFlood(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	r := NewReporter(zap.New(core))
	var errs []error
	for i := range 5000 {
		errs = append(errs, fmt.Errorf("diskstats line %d: garbage", i+1))
	}
	require.NoError(t, r.Report(errors.Join(errs...)))
	assert.Equal(t, maxLoggedPerChange+1, logs.Len())
	assert.Equal(t, int64(5000-maxLoggedPerChange), logs.All()[maxLoggedPerChange].ContextMap()["not_logged"])
}

func TestProblems(t *testing.T) {
	a, b := errors.New("a"), errors.New("b")
	assert.Equal(t, []string{"a", "b"}, problems(scrapererror.NewPartialScrapeError(errors.Join(a, b), 2)))
	assert.Equal(t, []string{"file: a"}, problems(fmt.Errorf("file: %w", a)))
	assert.Equal(t, []string{"a", "b", "c"}, problems(errors.New("a; b\nc")))
	assert.Empty(t, problems(nil))
}
