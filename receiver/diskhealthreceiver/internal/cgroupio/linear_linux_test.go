package cgroupio

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/internal/testkit"
)

// ioStatOf returns an io.stat of n devices, each counter scaled by k so two readings differ.
func ioStatOf(n int, k uint64) []byte {
	var sb strings.Builder
	for i := range n {
		st := DeviceStat{Major: uint32(8 + i>>20), Minor: uint32(i & (1<<20 - 1)), HasDiscard: true,
			Counters: Counters{ReadBytes: k * 4096, WriteBytes: k * 8192, ReadOps: k, WriteOps: 2 * k, DiscardBytes: k, DiscardOps: k}}
		sb.WriteString(formatIOStat(st))
	}
	return []byte(sb.String())
}

// oneCgroupFS is a hierarchy of one child cgroup whose io.stat is data.
type oneCgroupFS struct{ data []byte }

func (f *oneCgroupFS) ReadFile(_ string, buf []byte) ([]byte, error) {
	return append(buf[:0], f.data...), nil
}

func (f *oneCgroupFS) SubDirs(name string, dst []string) ([]string, error) {
	if name == "" {
		return append(dst, "big.slice"), nil
	}
	return dst, nil
}

// collectTwice runs a first collection (the baseline) and a second one over a cgroup whose n devices all
// moved, so the second compares every device with its previous reading.
func collectTwice(tb testing.TB, n int, first, second []byte) {
	fsys := &oneCgroupFS{data: first}
	c, err := NewCollector(fsys, Config{Version: V2, TopN: 10, MaxDepth: 4, Start: t1})
	require.NoError(tb, err)
	_, err = c.Collect(t1)
	require.NoError(tb, err)
	fsys.data = second
	res, err := c.Collect(t1.Add(time.Minute))
	require.NoError(tb, err)
	require.Len(tb, res.Cgroups, 1)
	require.Len(tb, res.Cgroups[0].Devices, n)
}

// A cgroup with 60 000 devices in its io.stat (a hostile or huge host) costs one parse and one comparison
// per device, not one per pair of devices: under a second of CPU for two collections. CPU time of this
// thread, not wall time, so a loaded machine does not fail it; linear code needs ~1/50 of the bound.
func TestSixtyThousandDevicesLinear(t *testing.T) {
	const n = 60000
	first, second := ioStatOf(n, 1), ioStatOf(n, 2)
	cpu := testkit.ThreadCPU(t, func() { collectTwice(t, n, first, second) })
	t.Logf("two collections of one cgroup with %d devices: %v CPU", n, cpu)
	require.Less(t, cpu, testkit.RaceSlowdown*time.Second)
}

// BenchmarkDevicesPerIOStat measures one cgroup's baseline and second collection at 10× steps up to 10× the
// largest device list the tests use: the time per device stays flat.
func BenchmarkDevicesPerIOStat(b *testing.B) {
	for _, n := range []int{600, 6000, 60000} {
		first, second := ioStatOf(n, 1), ioStatOf(n, 2)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				collectTwice(b, n, first, second)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/device")
		})
	}
}

// BenchmarkParseBlkioDevices is the v1 parse at the same sizes.
func BenchmarkParseBlkioDevices(b *testing.B) {
	for _, n := range []int{600, 6000, 60000} {
		stats, err := ParseIOStat(ioStatOf(n, 1), nil)
		require.NoError(b, err)
		bytesFile, opsFile := formatBlkio(stats)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			var dst []DeviceStat
			for range b.N {
				dst, err = ParseBlkio([]byte(bytesFile), []byte(opsFile), dst)
				if err != nil || len(dst) != n {
					b.Fatal(err, len(dst))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/device")
		})
	}
}
