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
	r := NewReporter(zap.New(core), nil)
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
	r := NewReporter(zap.New(core), nil)
	var errs []error
	for i := range 5000 {
		errs = append(errs, fmt.Errorf("diskstats line %d (loop%d): garbage", i+1, i))
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

// TestReportersShareProblems: a problem two sources meet is logged once, when the first reports it, and
// cleared once, when the last one stops.
func TestReportersShareProblems(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	var shared Problems
	iostat, latency := NewReporter(zap.New(core), &shared), NewReporter(zap.New(core), &shared)
	bad := errors.New("diskstats line 4 (sdd): field 6 \"x\": invalid syntax")
	for range 10 {
		require.NoError(t, iostat.Report(bad))
		require.NoError(t, latency.Report(bad))
	}
	require.Equal(t, 1, logs.Len(), "one WARN for both sources")
	require.NoError(t, iostat.Report(nil))
	assert.Equal(t, 1, logs.Len(), "latency still has it")
	require.NoError(t, latency.Report(nil))
	require.Equal(t, 2, logs.Len())
	assert.Equal(t, zapcore.InfoLevel, logs.All()[1].Level)
}

// TestProblemMovingLinesIsOneProblem: a bad line whose number moves (devices come and go before it) is the
// same problem, logged once and cleared once; the text logged is the one it had when it appeared.
func TestProblemMovingLinesIsOneProblem(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	r := NewReporter(zap.New(core), nil)
	for i := range 20 {
		require.NoError(t, r.Report(fmt.Errorf("diskstats line %d (sdb): field 4 \"1x\": invalid syntax", 3+i%7)))
	}
	require.Equal(t, 1, logs.Len())
	assert.Equal(t, `diskstats line 3 (sdb): field 4 "1x": invalid syntax`, logs.All()[0].ContextMap()["problem"])
	require.NoError(t, r.Report(errors.New(`diskstats line 3 (sdc): field 4 "1x": invalid syntax`)))
	require.Equal(t, 3, logs.Len(), "another device's bad line is another problem, and sdb's cleared")
	assert.Equal(t, "mountinfo line # \"x\": too few fields; no line here", problemKey(`mountinfo line 27 "x": too few fields; no line here`))
	assert.Equal(t, "online 5", problemKey("online 5"), "a word ending in line is not a line number")
}
