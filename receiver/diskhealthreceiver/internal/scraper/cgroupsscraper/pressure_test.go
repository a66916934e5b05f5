package cgroupsscraper

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
)

// TestCgroupPressureTotalWentBack: a cgroup's disk_health.container.io.linux.pressure.total that goes back while its
// I/O counters do not is a new series (a start time of its own, the previous reading), never a fall
// within one; the I/O counters keep theirs.
func TestCgroupPressureTotalWentBack(t *testing.T) {
	root := t.TempDir()
	cg := filepath.Join(root, "sys", "fs", "cgroup")
	app := filepath.Join(cg, "app.slice")
	require.NoError(t, os.MkdirAll(app, 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "proc"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(cg, "cgroup.controllers"), []byte("cpu io memory\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "proc", "stat"), []byte("cpu  1 2 3\nbtime 1795932000\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "proc", "diskstats"), []byte("   8       0 sda 1 0 8 1 1 0 8 1 0 1 1 0 0 0 0 0 0\n"), 0o644))
	write := func(rbytes, some uint64) {
		require.NoError(t, os.WriteFile(filepath.Join(app, "io.stat"), fmt.Appendf(nil, "8:0 rbytes=%d wbytes=0 rios=%d wios=0 dbytes=0 dios=0\n", rbytes, rbytes/4096), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(app, "io.pressure"), fmt.Appendf(nil,
			"some avg10=0.00 avg60=0.00 avg300=0.00 total=%d\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=%d\n", some, some/2), 0o644))
	}
	clock := t0
	s, _ := newTestCgroupScraper(t, testConfig(root), &clock)
	starts := func(md pmetric.Metrics) (psi, io time.Time) {
		pdatawalk.ForEachMetric(md, func(_ pcommon.Resource, m pmetric.Metric) {
			switch m.Name() {
			case "disk_health.container.io.linux.pressure.total":
				psi = m.Sum().DataPoints().At(0).StartTimestamp().AsTime()
			case "container.disk.io":
				io = m.Sum().DataPoints().At(0).StartTimestamp().AsTime()
			}
		})
		return psi, io
	}
	var psiStarts, ioStarts []time.Time
	for i, st := range []struct{ rbytes, some uint64 }{{4096, 2e6}, {8192, 3e6}, {12288, 1e6}, {16384, 1.5e6}} {
		clock = t0.Add(time.Duration(i) * 30 * time.Second)
		write(st.rbytes, st.some)
		md, err := s.scrape(t.Context())
		require.NoError(t, err)
		if i == 0 {
			continue // the baseline
		}
		psi, io := starts(md)
		psiStarts, ioStarts = append(psiStarts, psi), append(ioStarts, io)
	}
	boot := time.Unix(1795932000, 0).UTC()
	assert.Equal(t, []time.Time{boot, boot, boot}, ioStarts, "the I/O counters never went back")
	assert.Equal(t, []time.Time{boot, t0.Add(30 * time.Second), t0.Add(30 * time.Second)}, psiStarts,
		"3 s → 1 s of stall: a new series from the previous reading, which goes on")
}
