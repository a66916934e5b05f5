package latencyscraper

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/scraper/scrapertest"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/biolat"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/latencyscraper/internal/metadata"
)

// benchRoot writes a host of n NVMe disks (each with a WWID, so hw.id is derived) and returns it with
// a snapshot in which every disk has read, write, discard and flush histograms of 40 buckets each and
// one error count: what a busy host shows after a while.
func benchRoot(b *testing.B, n int) (string, biolat.Snapshot) {
	root := b.TempDir()
	var ds strings.Builder
	var snap biolat.Snapshot
	for i := range n {
		name := fmt.Sprintf("nvme%dn1", i)
		fmt.Fprintf(&ds, " 259 %7d %s 1000 0 8000 500 2000 0 16000 900 0 1400 1400 10 0 80 3 2 1\n", i, name)
		dir := filepath.Join(root, "sys/class/block", name)
		require.NoError(b, os.MkdirAll(filepath.Join(dir, "device"), 0o755))
		for f, v := range map[string]string{"size": "2097152", "wwid": fmt.Sprintf("eui.%016x", i+1), "device/model": "BENCH NVME"} {
			require.NoError(b, os.WriteFile(filepath.Join(dir, f), []byte(v+"\n"), 0o644))
		}
		dev := biolat.Dev{Major: 259, Minor: uint32(i)}
		for _, d := range []biolat.Direction{biolat.Read, biolat.Write, biolat.Discard, biolat.Flush} {
			buckets := make([]uint64, 40)
			for j := range buckets {
				buckets[j] = uint64(1 + j*j)
			}
			snap.Series = append(snap.Series, biolat.Series{Dev: dev, Direction: d, Kind: biolat.Total, Histogram: hist(-120, 0, buckets...)})
		}
		snap.Errors = append(snap.Errors, biolat.ErrorCount{Dev: dev, Direction: biolat.Write, Status: "ioerr", Count: 1})
	}
	require.NoError(b, os.MkdirAll(filepath.Join(root, "proc"), 0o755))
	require.NoError(b, os.WriteFile(filepath.Join(root, "proc/diskstats"), []byte(ds.String()), 0o644))
	return root, snap
}

// BenchmarkLatencyScrape is the latency source's user-space cost per scrape for n disks, on a fake probe
// (the probe's own map read is biolat's BenchmarkSnapshot): /proc/diskstats, identities, the pdata of
// 4 histograms and an error counter per disk. It reports time, bytes and allocations per disk, and
// heap-B/device: the scraper's state that stays between scrapes (device sets, identity cache,
// reused parse buffers), measured after a GC.
func BenchmarkLatencyScrape(b *testing.B) {
	for _, n := range []int{1, 16, 64, 256} {
		b.Run(fmt.Sprintf("devices=%d", n), func(b *testing.B) {
			root, snap := benchRoot(b, n)
			p := &fakeProbe{started: time.Now(), snap: snap}
			cfg := createDefaultConfig()
			cfg.RootPath = root
			cfg.MaxDevices = max(n, 1)
			open := func(biolat.Options) (probe, error) { return p, nil }

			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			s, err := newScraper(scrapertest.NewNopSettings(metadata.Type), cfg, open, time.Now)
			require.NoError(b, err)
			require.NoError(b, s.start(b.Context(), componenttest.NewNopHost()))
			md, err := s.scrape(b.Context())
			require.NoError(b, err)
			require.Equal(b, 5*n, md.DataPointCount())
			runtime.GC()
			runtime.ReadMemStats(&after)
			retained := float64(after.HeapAlloc) - float64(before.HeapAlloc)
			runtime.KeepAlive(s)

			b.ReportAllocs()
			runtime.ReadMemStats(&before)
			for b.Loop() {
				if _, err := s.scrape(b.Context()); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			runtime.ReadMemStats(&after)
			require.NoError(b, s.shutdown(b.Context()))
			per := float64(b.N) * float64(n)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/per, "ns/device")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/per, "allocs/device")
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/per, "B/device")
			b.ReportMetric(retained/float64(n), "heap-B/device")
		})
	}
}
