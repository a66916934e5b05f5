package bench

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/goleak"
)

// The sizes are flags so `make test` can smoke-run the benchmarks on small trees:
// go test -bench . -benchtime=1x -args -devices=10 -mounts=50
var (
	devicesFlag = flag.String("devices", "10,100,1000,10000", "comma-separated device counts")
	mountsFlag  = flag.String("mounts", "50,500,5000", "comma-separated mount counts")
)

// root is the one root_path of this process: hostmetrics refuses a second, different one.
var root string

// current is the tree now laid out under root.
var current Tree

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "diskhealth-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	root = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	// Every receiver a test or benchmark started has been shut down: none may leave a goroutine behind.
	if err := goleak.Find(); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, "goleak:", err)
		code = 1
	}
	os.Exit(code)
}

func sizes(tb testing.TB, s string) []int {
	tb.Helper()
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		require.NoError(tb, err, "size list %q", s)
		out = append(out, n)
	}
	return out
}

// tree lays out a tree of n devices and m mounts under root unless it is already there.
func tree(tb testing.TB, n, m int) {
	tb.Helper()
	if current.Devices == n && current.Mounts == m {
		return
	}
	t, err := Generate(root, n, m)
	require.NoError(tb, err)
	current = *t
}

const runTimeout = 10 * time.Minute

// benchScrape measures completed scrapes of one receiver's source: ns/op is wall time per scrape,
// B/op and allocs/op are the whole process's per scrape (the controller's goroutine included), cpu-ns/op
// is user+system CPU per scrape (GC included), points/op the data points delivered per scrape.
func benchScrape(b *testing.B, r Receiver, src Source, n, m int) {
	tree(b, n, m)
	run, err := Start(b.Context(), r, src, root, m, nil)
	require.NoError(b, err)
	defer func() { require.NoError(b, run.Stop(b.Context())) }()
	// Two scrapes warm the caches (identities, mount table) and give disk_health its first rates.
	require.NoError(b, run.Wait(2, runTimeout))
	runtime.GC()
	s0, d0 := run.Counts()
	cpu0 := CPUTime()
	b.ReportAllocs()
	b.ResetTimer()
	require.NoError(b, run.Wait(s0+b.N, runTimeout))
	b.StopTimer()
	cpu1 := CPUTime()
	s1, d1 := run.Counts()
	k := float64(s1 - s0)
	b.ReportMetric(float64(cpu1-cpu0)/k, "cpu-ns/op")
	b.ReportMetric(float64(d1-d0)/k, "points/op")
}

// Both receivers see the same tree: every device and every mount, and the parity configuration emits
// exactly hostmetrics' data points. Otherwise the comparison would measure different work. The default
// configuration delivers the capacity source's points beside the filesystem source's on mounts.
func TestSameInputs(t *testing.T) {
	const devices, mounts = 7, 5
	tree(t, devices, mounts)
	seen := func(r Receiver, src Source, suffix string) (values, metrics map[string]bool, points int) {
		var mu sync.Mutex
		values, metrics = map[string]bool{}, map[string]bool{}
		run, err := Start(t.Context(), r, src, root, mounts, func(md pmetric.Metrics) {
			mu.Lock()
			defer mu.Unlock()
			points = md.DataPointCount()
			for _, v := range stringAttrs(md, suffix) {
				values[v] = true
			}
			for _, rm := range md.ResourceMetrics().All() {
				for _, sm := range rm.ScopeMetrics().All() {
					for _, m := range sm.Metrics().All() {
						metrics[m.Name()] = true
					}
				}
			}
		})
		require.NoError(t, err)
		require.NoError(t, run.Wait(3, time.Minute))
		require.NoError(t, run.Stop(t.Context()))
		mu.Lock()
		defer mu.Unlock()
		return values, metrics, points
	}
	for _, c := range []struct {
		src    Source
		suffix string
		want   int
		metric string // one the default emits
	}{{Disk, "device", devices, "disk_health.disk.throughput"}, {Filesystem, "mountpoint", mounts, "disk_health.filesystem.domain.mounts"}} {
		t.Run(string(c.src), func(t *testing.T) {
			hm, _, hmPoints := seen(HostMetrics, c.src, c.suffix)
			dh, dhMetrics, _ := seen(DiskHealth, c.src, c.suffix)
			parity, _, parityPoints := seen(DiskHealthParity, c.src, c.suffix)
			assert.Len(t, hm, c.want)
			assert.Len(t, dh, c.want)
			assert.Contains(t, dhMetrics, c.metric)
			assert.Len(t, parity, c.want)
			assert.Equal(t, hmPoints, parityPoints)
			for _, r := range []Receiver{HostMetricsEngine, DiskHealthEngine} {
				_, _, points := seen(r, c.src, c.suffix)
				assert.Zero(t, points, r)
			}
		})
	}
}

// stringAttrs lists the values of the data point attributes whose key ends with suffix.
func stringAttrs(md pmetric.Metrics, suffix string) []string {
	var out []string
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		sms := rms.At(i).ScopeMetrics()
		for j := range sms.Len() {
			ms := sms.At(j).Metrics()
			for k := range ms.Len() {
				m := ms.At(k)
				var dps pmetric.NumberDataPointSlice
				switch m.Type() {
				case pmetric.MetricTypeSum:
					dps = m.Sum().DataPoints()
				case pmetric.MetricTypeGauge:
					dps = m.Gauge().DataPoints()
				default:
					continue
				}
				for l := range dps.Len() {
					dps.At(l).Attributes().Range(func(k string, v pcommon.Value) bool {
						if strings.HasSuffix(k, suffix) {
							out = append(out, v.Str())
						}
						return true
					})
				}
			}
		}
	}
	return out
}

// BenchmarkDisk: hostmetrics' disk scraper against disk_health's iostat source, per device count.
func BenchmarkDisk(b *testing.B) {
	for _, n := range sizes(b, *devicesFlag) {
		for _, r := range Receivers {
			b.Run(fmt.Sprintf("devices=%d/recv=%s", n, r), func(b *testing.B) { benchScrape(b, r, Disk, n, 1) })
		}
	}
}

// BenchmarkFilesystem: hostmetrics' filesystem scraper against disk_health's, per mount count.
func BenchmarkFilesystem(b *testing.B) {
	for _, m := range sizes(b, *mountsFlag) {
		for _, r := range Receivers {
			b.Run(fmt.Sprintf("mounts=%d/recv=%s", m, r), func(b *testing.B) { benchScrape(b, r, Filesystem, 1, m) })
		}
	}
}

// BenchmarkDiskstatsFloor is the physical floor of an I/O scrape: open, read and close /proc/diskstats
// and split it into lines and fields, allocating nothing. No receiver can scrape for less.
func BenchmarkDiskstatsFloor(b *testing.B) {
	for _, n := range sizes(b, *devicesFlag) {
		b.Run(fmt.Sprintf("devices=%d", n), func(b *testing.B) {
			tree(b, n, 1)
			path := filepath.Join(root, "proc", "diskstats")
			buf := make([]byte, 0, 1<<16)
			b.ReportAllocs()
			for b.Loop() {
				var err error
				buf, err = readInto(path, buf[:0])
				if err != nil {
					b.Fatal(err)
				}
				if lines, fields := split(buf); lines != n || fields != 20*n {
					b.Fatalf("%d lines, %d fields", lines, fields)
				}
			}
		})
	}
}

// readInto reads the whole file into buf, growing it only when the file outgrows it.
func readInto(path string, buf []byte) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return buf, err
	}
	defer f.Close()
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		k, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+k]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// split counts the lines and the space-separated fields of data.
func split(data []byte) (lines, fields int) {
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		lines++
		inField := false
		for _, c := range line {
			if c == ' ' || c == '\t' {
				inField = false
			} else if !inField {
				inField = true
				fields++
			}
		}
	}
	return lines, fields
}
