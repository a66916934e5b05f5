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
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
	os.RemoveAll(dir)
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
	run, err := Start(b.Context(), r, src, root)
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

// BenchmarkDisk: hostmetrics' disk scraper against disk_health's iostat source, per device count.
func BenchmarkDisk(b *testing.B) {
	for _, n := range sizes(b, *devicesFlag) {
		for _, r := range []Receiver{HostMetrics, DiskHealth, DiskHealthParity} {
			b.Run(fmt.Sprintf("devices=%d/recv=%s", n, r), func(b *testing.B) { benchScrape(b, r, Disk, n, 1) })
		}
	}
}

// BenchmarkFilesystem: hostmetrics' filesystem scraper against disk_health's, per mount count.
func BenchmarkFilesystem(b *testing.B) {
	for _, m := range sizes(b, *mountsFlag) {
		for _, r := range []Receiver{HostMetrics, DiskHealth, DiskHealthParity} {
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
