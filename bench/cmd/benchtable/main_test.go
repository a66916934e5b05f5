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
