package cgroupio

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPressureTotalWentBackStartsSeries: a cgroup's io.pressure totals count since its creation; when
// they go back while its I/O counters do not (re-created between readings that are collections apart:
// io.pressure is read only for the busiest cgroups), the totals start a new series at the previous
// reading instead of falling within one.
func TestPressureTotalWentBackStartsSeries(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "app.slice")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	write := func(rbytes, some, full uint64) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "io.stat"), fmt.Appendf(nil, "8:0 rbytes=%d wbytes=0 rios=%d wios=0 dbytes=0 dios=0\n", rbytes, rbytes/4096), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "io.pressure"), fmt.Appendf(nil,
			"some avg10=0.00 avg60=0.00 avg300=0.00 total=%d\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=%d\n", some, full), 0o644))
	}
	boot := time.Date(2026, 5, 4, 11, 0, 0, 0, time.UTC)
	fsys := NewDirFS(root)
	c, err := NewCollector(fsys, Config{Version: V2, TopN: 10, MaxDepth: 3, Start: boot, Pressure: fsys})
	require.NoError(t, err)
	at := func(i int) time.Time { return boot.Add(time.Hour + time.Duration(i)*30*time.Second) }
	for i, st := range []struct {
		rbytes, some, full uint64
		wantStart          time.Time
	}{
		{4096, 100, 50, time.Time{}}, // the baseline: nothing reported
		{8192, 200, 80, boot},        // the totals count since before the first collection
		{12288, 150, 90, at(1)},      // some went back: a new series from the previous reading
		{16384, 170, 95, at(1)},      // and goes on
		{20480, 180, 10, at(3)},      // full went back
	} {
		write(st.rbytes, st.some, st.full)
		res, err := c.Collect(at(i))
		require.NoError(t, err)
		if i == 0 {
			assert.Empty(t, res.Cgroups)
			continue
		}
		require.Len(t, res.Cgroups, 1, "collection %d", i)
		cg := res.Cgroups[0]
		require.True(t, cg.HasPressure)
		assert.Equal(t, boot, cg.Start, "collection %d: the I/O counters never went back", i)
		assert.Equal(t, st.wantStart, cg.PressureStart, "collection %d", i)
	}
}
