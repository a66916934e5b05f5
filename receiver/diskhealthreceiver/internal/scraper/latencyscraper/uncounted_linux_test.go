package latencyscraper

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper/scrapertest"
	"golang.org/x/sys/unix"

	dhtest "github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/diskstats"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/latencyscraper/internal/metadata"
)

// deviceTotals is, for one scrape of one device, the count of its histograms (every direction) and
// the dropped counter summed over its reasons, with not_run + histograms_full apart.
type deviceTotals struct{ count, dropped, elsewhere, uncounted uint64 }

func totalsOf(t *testing.T, md pmetric.Metrics, device string) deviceTotals {
	t.Helper()
	var x deviceTotals
	pdatawalk.ForEachMetric(md, func(_ pcommon.Resource, m pmetric.Metric) {
		switch m.Type() {
		case pmetric.MetricTypeExponentialHistogram:
			dps := m.ExponentialHistogram().DataPoints()
			for i := range dps.Len() {
				if d, _ := dps.At(i).Attributes().Get("system.device"); d.Str() == device {
					x.count += dps.At(i).Count()
				}
			}
		case pmetric.MetricTypeSum:
			if m.Name() != "disk_health.latency.dropped" {
				return
			}
			dps := m.Sum().DataPoints()
			for i := range dps.Len() {
				n := uint64(dps.At(i).IntValue())
				x.dropped += n
				switch r, _ := dps.At(i).Attributes().Get("latency.drop.reason"); r.Str() {
				case "not_run", "histograms_full":
					x.elsewhere += n
				case "uncounted":
					x.uncounted = n
				}
			}
		}
	})
	return x
}

// completionsOf is the device's reads + writes + discards + flushes in /proc/diskstats.
func completionsOf(t *testing.T, name string) uint64 {
	t.Helper()
	data, err := os.ReadFile("/proc/diskstats")
	require.NoError(t, err)
	stats, err := new(diskstats.Parser).Parse(data, nil)
	require.NoError(t, err)
	for i := range stats {
		if stats[i].DeviceName == name {
			return completions(&stats[i])
		}
	}
	require.Failf(t, "not in /proc/diskstats", "%s", name)
	return 0
}

// quietScrape waits until nothing is in flight on the device and its diskstats stand still across a
// scrape (the last completion is accounted a little after its waiter wakes), then returns that scrape
// and the device's completions; it fails after 10 s.
func quietScrape(t *testing.T, s *latencyScraper, name string) (pmetric.Metrics, uint64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		inflight, err := os.ReadFile(filepath.Join("/sys/block", name, "inflight"))
		require.NoError(t, err)
		if f := strings.Fields(string(inflight)); len(f) != 2 || f[0] != "0" || f[1] != "0" {
			continue
		}
		before := completionsOf(t, name)
		md, err := s.scrape(t.Context())
		require.NoError(t, err)
		if after := completionsOf(t, name); after == before {
			return md, after
		}
	}
	require.FailNow(t, "the device did not go quiet", "%s", name)
	return pmetric.Metrics{}, 0
}

// On a loop device of this host under the load that made the histograms miss completions (a 512 KiB
// qd32 fio writer with --thread plus a direct-I/O read loop, 6 s), scraped throughout: the reason
// uncounted never goes down and never exceeds what the histograms missed, and once the device is quiet
// its histograms' count plus every dropped reason is exactly diskstats' count since the baseline,
// however many completions were missed in the run. The other reasons are host-wide: where another
// device made not_run or histograms_full move during the run, the sum can only exceed diskstats by
// them, and the test holds it between the two.
func TestUncountedOnThisHost(t *testing.T) {
	dhtest.RequireRoot(t, "loads BPF, creates loop devices")
	fio := dhtest.Tool(t, "fio", "fio")
	loop, name := loopDevice(t, 128<<20)

	cfg := createDefaultConfig()
	cfg.DeviceClasses = append(cfg.DeviceClasses, "loop")
	cfg.Devices.Include = []string{regexp.QuoteMeta(name)}
	s, err := newScraper(scrapertest.NewNopSettings(metadata.Type), cfg, openBiolat, time.Now)
	require.NoError(t, err)
	require.NoError(t, s.start(t.Context(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, s.shutdown(t.Context())) }()
	require.NotNil(t, s.probe, "the probe attached")

	fd, err := unix.Open(loop, unix.O_RDWR|unix.O_DIRECT, 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	buf, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	require.NoError(t, err)
	defer func() { _ = unix.Munmap(buf) }()
	// One read gives the device its first histogram; the scrape after, on the quiet device, is its
	// baseline.
	_, err = unix.Pread(fd, buf, 0)
	require.NoError(t, err)
	md, d0 := quietScrape(t, s, name)
	base := totalsOf(t, md, name)
	require.NotZero(t, base.count, "the device has histograms")
	based := false
	for dev, m := range s.marks {
		_, ok := s.uncounted.devs[dev]
		based = based || (m.name == name && ok)
	}
	require.True(t, based, "the baseline is taken")

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	writer := exec.CommandContext(ctx, fio, "--name=w", "--filename="+loop, "--direct=1", "--ioengine=libaio", "--iodepth=32",
		"--rw=randwrite", "--bs=512k", "--size=96M", "--time_based", "--runtime=6s", "--thread")
	var fioOut strings.Builder
	writer.Stdout, writer.Stderr = &fioOut, &fioOut
	require.NoError(t, writer.Start())
	reads := make(chan int, 1)
	go func() {
		n := 0
		for end := time.Now().Add(6 * time.Second); time.Now().Before(end); n++ {
			if _, err := unix.Pread(fd, buf, int64(n%4096)*4096); err != nil {
				break
			}
		}
		reads <- n
	}()
	var mid []uint64
	for done := false; !done; {
		select {
		case n := <-reads:
			t.Logf("%d direct reads", n)
			done = true
		case <-time.After(300 * time.Millisecond):
			md, err := s.scrape(t.Context())
			require.NoError(t, err)
			mid = append(mid, totalsOf(t, md, name).uncounted)
		}
	}
	require.NoError(t, writer.Wait(), "%s", fioOut.String())

	md, d1 := quietScrape(t, s, name)
	end := totalsOf(t, md, name)
	missing := d1 - d0 - (end.count - base.count)
	t.Logf("diskstats %d completions, histograms %d, missing %d: uncounted %d, not_run + histograms_full +%d; mid-load uncounted %v",
		d1-d0, end.count-base.count, missing, end.uncounted, end.elsewhere-base.elsewhere, mid)
	prev := base.uncounted
	for _, u := range append(mid, end.uncounted) {
		require.GreaterOrEqual(t, u, prev, "monotonic")
		prev = u
	}
	require.LessOrEqual(t, end.uncounted-base.uncounted, missing, "never more than the histograms missed")
	if end.elsewhere == base.elsewhere {
		require.Equal(t, d1-d0, end.count-base.count+end.dropped-base.dropped, "count + dropped = diskstats, exactly")
	} else {
		require.LessOrEqual(t, missing, end.dropped-base.dropped, "every completion missed is in a dropped reason")
	}
}
