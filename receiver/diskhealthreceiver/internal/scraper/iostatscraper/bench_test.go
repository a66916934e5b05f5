package iostatscraper

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// syntheticRoot lays out a root_path with n NVMe-style whole disks: a 20-field /proc/diskstats line each
// and the sysfs entries the identity reader looks at.
func syntheticRoot(tb testing.TB, n int) string {
	tb.Helper()
	root := tb.TempDir()
	var stats strings.Builder
	for i := range n {
		name := fmt.Sprintf("nvme%dn1", i)
		ctrl := filepath.Join("devices", "pci0000:00", fmt.Sprintf("0000:%02x:%02x.0", i/256, i%256), "nvme", fmt.Sprintf("nvme%d", i))
		dev := filepath.Join(ctrl, name)
		for rel, content := range map[string]string{
			filepath.Join(ctrl, "model"):              "Synthetic NVMe\n",
			filepath.Join(ctrl, "serial"):             fmt.Sprintf("SYN%08d\n", i),
			filepath.Join(ctrl, "firmware_rev"):       "1.0\n",
			filepath.Join(dev, "size"):                "7501476528\n",
			filepath.Join(dev, "wwid"):                fmt.Sprintf("eui.%016x\n", i),
			filepath.Join(dev, "queue", "rotational"): "0\n",
		} {
			p := filepath.Join(root, "sys", rel)
			require.NoError(tb, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(tb, os.WriteFile(p, []byte(content), 0o644))
		}
		link := func(from, to string) {
			p := filepath.Join(root, "sys", from)
			require.NoError(tb, os.MkdirAll(filepath.Dir(p), 0o755))
			rel, err := filepath.Rel(filepath.Dir(p), filepath.Join(root, "sys", to))
			require.NoError(tb, err)
			require.NoError(tb, os.Symlink(rel, p))
		}
		link(filepath.Join("class", "block", name), dev)
		link(filepath.Join("block", name), dev)
		link(filepath.Join(dev, "device"), ctrl)
		fmt.Fprintf(&stats, "259 %7d %s %d 120 %d 3100 %d 340 %d 9800 2 41000 52000 77 0 8800 12 310 95\n",
			i, name, 100000+i, 8000000+i, 200000+i, 16000000+i)
	}
	require.NoError(tb, os.MkdirAll(filepath.Join(root, "proc"), 0o755))
	require.NoError(tb, os.WriteFile(filepath.Join(root, "proc", "diskstats"), []byte(stats.String()), 0o644))
	require.NoError(tb, os.WriteFile(filepath.Join(root, "proc", "stat"), []byte("btime 1764000000\n"), 0o644))
	return root
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
