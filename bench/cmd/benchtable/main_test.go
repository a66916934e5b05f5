package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const sample = `goos: linux
BenchmarkDisk/devices=10/recv=hostmetrics-2   100  300 ns/op  600 cpu-ns/op  110 points/op  50 B/op  10 allocs/op
BenchmarkDisk/devices=10/recv=hostmetrics-2   100  100 ns/op  200 cpu-ns/op  110 points/op  50 B/op  30 allocs/op
BenchmarkDisk/devices=10/recv=hostmetrics-2   100  200 ns/op  400 cpu-ns/op  110 points/op  50 B/op  20 allocs/op
BenchmarkDisk/devices=10/recv=disk_health-2   100  100 ns/op  100 cpu-ns/op  400 points/op  50 B/op  40 allocs/op
BenchmarkDiskstatsFloor/devices=10-2          9999  15 ns/op  152 B/op  3 allocs/op
PASS
`

func TestParseMedians(t *testing.T) {
	res, order, err := parse(strings.NewReader(sample))
	require.NoError(t, err)
	assert.Equal(t, []string{"BenchmarkDisk/devices=10/recv=hostmetrics", "BenchmarkDisk/devices=10/recv=disk_health", "BenchmarkDiskstatsFloor/devices=10"}, order)
	hm := res["BenchmarkDisk/devices=10/recv=hostmetrics"]
	assert.Equal(t, result{"ns/op": 200, "cpu-ns/op": 400, "points/op": 110, "B/op": 50, "allocs/op": 20}, hm)
	assert.InDelta(t, 2.5, median([]float64{4, 1, 2, 3}), 0)
}

func TestPrintRatios(t *testing.T) {
	res, order, err := parse(strings.NewReader(sample))
	require.NoError(t, err)
	var out bytes.Buffer
	print(&out, res, order)
	// disk_health: CPU 100 / 400 = 0.25×, allocs 40 / 20 = 2.00×, 0.1 allocs per point.
	assert.Contains(t, out.String(), "| 10 | disk_health | 100 ns | 100 ns | 50 B | 40 | 400 | 0 ns | 0.1 | 0.25× | 2.00× |")
	assert.Contains(t, out.String(), "| 10 | 15 ns | 152 B | 3 |")
}

// The latency source's benchmarks get their own tables, with the budget beside each figure, and no
// empty side-by-side tables when the run had none.
func TestPrintLatency(t *testing.T) {
	in := `BenchmarkBPFRunTimePerIO/default-2  1000  19000 ns/op  300 bpf-ns/io  230 on_io_done-ns/io  70 on_rq_complete-ns/io
BenchmarkBPFRunTimePerIO/peer=bpftrace-2  1000  11000 ns/op  520 bpf-ns/io  295 bpftrace_block_io_done-ns/io  225 bpftrace_block_io_start-ns/io
BenchmarkFioIOPS/default-2  1  5e10 ns/op  200000 iops-off  195000 iops-on  2.5 loss-%
BenchmarkProbeMemory/default-2  10  7e7 ns/op  9312 map-B/device  7991 go-heap-B/device  15512 map-B-fixed  611480 map-B@64
BenchmarkSnapshot/devices=16-2  8000  160000 ns/op  10000 ns/device  41969 B/op  96 allocs/op
BenchmarkLatencyScrape/devices=16-2  10000  100000 ns/op  6590 ns/device  3920 B/device  45 allocs/device  5288 heap-B/device
`
	res, order, err := parse(strings.NewReader(in))
	require.NoError(t, err)
	var out bytes.Buffer
	print(&out, res, order)
	s := out.String()
	assert.NotContains(t, s, "Disk scrape")
	assert.NotContains(t, s, "own benchmarks")
	assert.Contains(t, s, "| default | 300 ns | ≤ 400 ns | on_io_done 230 ns, on_rq_complete 70 ns |")
	assert.Contains(t, s, "| peer=bpftrace | 520 ns | peer | bpftrace_block_io_done 295 ns, bpftrace_block_io_start 225 ns |")
	assert.Contains(t, s, "| default | 200000 | 195000 | 2.5 % | ≤ 5 % |")
	assert.Contains(t, s, "| default | 9.1 KiB | 7.8 KiB | 15.1 KiB | 597.1 KiB |")
	assert.Contains(t, s, "| biolat Collect (map read) | 16 | 10.0 µs | 2.6 KiB | 6 | – |")
	assert.Contains(t, s, "| scrape (pdata, fake probe) | 16 | 6.6 µs | 3.8 KiB | 45 | 5.2 KiB |")
}

// Any input parses without panicking, and every median lies within its runs.
func FuzzParse(f *testing.F) {
	f.Add(sample)
	f.Add("BenchmarkX-8 1 1e+06 ns/op\nBenchmarkX-8 1 2 ns/op\n")
	f.Fuzz(func(t *testing.T, in string) {
		res, order, err := parse(strings.NewReader(in))
		if err != nil {
			return
		}
		assert.Len(t, res, len(order))
		var out bytes.Buffer
		print(&out, res, order)
	})
}
