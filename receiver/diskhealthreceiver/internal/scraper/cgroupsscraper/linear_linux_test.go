package cgroupsscraper

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/scraper/scrapertest"

	dhtest "github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/cgroupsscraper/internal/metadata"
)

// manyDeviceRoot is a root_path whose one cgroup did I/O on n devices; write(k) moves every counter.
type manyDeviceRoot struct {
	root, ioStat string
	n            int
}

func newManyDeviceRoot(tb testing.TB, n int) *manyDeviceRoot {
	tb.Helper()
	root := tb.TempDir()
	cg := filepath.Join(root, "sys", "fs", "cgroup")
	require.NoError(tb, os.MkdirAll(filepath.Join(cg, "big.slice"), 0o755))
	require.NoError(tb, os.MkdirAll(filepath.Join(root, "proc"), 0o755))
	require.NoError(tb, os.WriteFile(filepath.Join(cg, "cgroup.controllers"), []byte("cpu io memory\n"), 0o644))
	require.NoError(tb, os.WriteFile(filepath.Join(root, "proc", "stat"), []byte("cpu  1 2 3\nbtime 1795932000\n"), 0o644))
	require.NoError(tb, os.WriteFile(filepath.Join(root, "proc", "diskstats"), []byte("   8       0 sda 1 0 8 1 1 0 8 1 0 1 1 0 0 0 0 0 0\n"), 0o644))
	return &manyDeviceRoot{root: root, ioStat: filepath.Join(cg, "big.slice", "io.stat"), n: n}
}

// write writes the cgroup's io.stat with every counter k (short lines: 60 000 devices stay below the
// 4 MiB cap of an io.stat).
func (r *manyDeviceRoot) write(tb testing.TB, k int) {
	tb.Helper()
	var sb strings.Builder
	for i := range r.n {
		fmt.Fprintf(&sb, "%d:%d rbytes=%d wbytes=%d rios=%d wios=%d dbytes=0 dios=0\n", 8+i>>20, i&(1<<20-1), k, k, k, k)
	}
	require.NoError(tb, os.WriteFile(r.ioStat, []byte(sb.String()), 0o644))
}

// scrapePair runs the baseline scrape and the one that reports the cgroup's n devices.
func (r *manyDeviceRoot) scrapePair(tb testing.TB, s *cgroupScraper, clock *time.Time, measure func(func())) {
	r.write(tb, 1)
	_, err := s.scrape(tb.Context())
	require.NoError(tb, err)
	r.write(tb, 2)
	*clock = clock.Add(30 * time.Second)
	measure(func() {
		md, err := s.scrape(tb.Context())
		require.NoError(tb, err)
		require.Equal(tb, 6*r.n, md.DataPointCount()) // io and operations (read, write), discard io and operations
	})
}

func newManyDeviceScraper(tb testing.TB, root string, clock *time.Time) *cgroupScraper {
	tb.Helper()
	s, err := newScraper(scrapertest.NewNopSettings(metadata.Type), testConfig(root), func() time.Time { return *clock })
	require.NoError(tb, err)
	require.NoError(tb, s.start(tb.Context(), nil))
	return s
}

// One cgroup with 60 000 devices costs under a second of CPU per scrape: before the generated emitter the
// mdatagen builder compared every point with the metric's earlier ones (8 000 devices: 7.5 CPU-s). CPU
// time of this thread, not wall time, so a loaded machine does not fail it.
func TestScrapeSixtyThousandDevicesOneCgroup(t *testing.T) {
	const n = 60000
	r := newManyDeviceRoot(t, n)
	clock := t0
	s := newManyDeviceScraper(t, r.root, &clock)
	r.scrapePair(t, s, &clock, func(scrape func()) {
		cpu := dhtest.ThreadCPU(t, scrape)
		t.Logf("one scrape of one cgroup with %d devices: %v CPU", n, cpu)
		require.Less(t, cpu, dhtest.RaceSlowdown*time.Second)
	})
}

// BenchmarkScrapeDevicesPerCgroup: one scrape of one cgroup at 10× steps up to 60 000 devices; the cost
// per device stays flat.
func BenchmarkScrapeDevicesPerCgroup(b *testing.B) {
	for _, n := range []int{600, 6000, 60000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			r := newManyDeviceRoot(b, n)
			clock := t0
			s := newManyDeviceScraper(b, r.root, &clock)
			b.ReportAllocs()
			var total time.Duration
			for range b.N {
				r.scrapePair(b, s, &clock, func(scrape func()) {
					start := time.Now()
					scrape()
					total += time.Since(start)
				})
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns/scrape")
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N)/float64(n), "ns/device")
		})
	}
}
