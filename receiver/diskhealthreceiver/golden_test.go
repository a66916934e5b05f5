package diskhealthreceiver

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/golden"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// updateGolden rewrites the expected files instead of comparing: DISKHEALTH_UPDATE_GOLDEN=1 go test ./...
var updateGolden = os.Getenv("DISKHEALTH_UPDATE_GOLDEN") != ""

// assertGolden compares md with testdata/expected_metrics/<name>.yaml, timestamps included unless opts
// say otherwise; the order of resources, metrics and points never matters.
func assertGolden(t *testing.T, name string, md pmetric.Metrics, opts ...pmetrictest.CompareMetricsOption) {
	t.Helper()
	path := filepath.Join("testdata", "expected_metrics", name+".yaml")
	if updateGolden {
		require.NoError(t, golden.WriteMetricsToFile(path, md, golden.SkipMetricTimestampNormalization()))
	}
	want, err := golden.ReadMetrics(path)
	require.NoError(t, err)
	opts = append(opts, pmetrictest.IgnoreScopeVersion(), pmetrictest.IgnoreResourceMetricsOrder(),
		pmetrictest.IgnoreMetricsOrder(), pmetrictest.IgnoreMetricDataPointsOrder())
	require.NoError(t, pmetrictest.CompareMetrics(want, md, opts...))
}
