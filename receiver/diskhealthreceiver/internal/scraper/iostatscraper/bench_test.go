package iostatscraper

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/internal/testkit"
)

// syntheticRoot lays out a root_path with n NVMe-style whole disks: a 20-field /proc/diskstats line each
// and the sysfs entries the identity reader looks at.
func syntheticRoot(tb testing.TB, n int) string {
	tb.Helper()
	r := testkit.NewRoot(tb)
	var stats strings.Builder
	for i := range n {
		name := fmt.Sprintf("nvme%dn1", i)
		ctrl := fmt.Sprintf("sys/devices/pci0000:00/0000:%02x:%02x.0/nvme/nvme%d", i/256, i%256, i)
		r.Disk(testkit.Disk{Name: name, Major: 259, Minor: uint32(i), Dir: ctrl + "/" + name, Device: ctrl,
			Files:       map[string]string{"size": "7501476528\n", "wwid": fmt.Sprintf("eui.%016x\n", i), "queue/rotational": "0\n"},
			DeviceFiles: map[string]string{"model": "Synthetic NVMe\n", "serial": fmt.Sprintf("SYN%08d\n", i), "firmware_rev": "1.0\n"}})
		fmt.Fprintf(&stats, "259 %7d %s %d 120 %d 3100 %d 340 %d 9800 2 41000 52000 77 0 8800 12 310 95\n",
			i, name, 100000+i, 8000000+i, 200000+i, 16000000+i)
	}
	r.Write("proc/diskstats", stats.String())
	r.Write("proc/stat", "btime 1764000000\n")
	return r.Dir
}

// BenchmarkIOScrape is the cost of one steady-state scrape (read, parse, identity cache, rate engine,
// pdata emission) for n devices. `make bench` reports it.
func BenchmarkIOScrape(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("devices=%d", n), func(b *testing.B) {
			root := syntheticRoot(b, n)
			clock := t0
			s := newTestIOScraper(b, testConfig(root), &clock)
			md, err := s.scrape(b.Context()) // first read: identities cached, no gauges yet
			require.NoError(b, err)
			require.Equal(b, n, md.ResourceMetrics().Len())
			b.ReportAllocs()
			for b.Loop() {
				clock = clock.Add(10 * time.Second)
				if _, err := s.scrape(b.Context()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
