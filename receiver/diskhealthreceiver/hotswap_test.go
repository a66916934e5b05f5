package diskhealthreceiver

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper"
	"go.opentelemetry.io/collector/scraper/scrapertest"

	"github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/iostatscraper"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper"
)

// virtioRoot is a root_path with two virtio disks, vda and vdb (vdb with a partition vdb1), as a
// 5.15+ kernel shows them when diskseq is set (an older one has no diskseq file).
type virtioRoot struct{ *testkit.Root }

func newVirtioRoot(t *testing.T, diskseq bool) virtioRoot {
	r := virtioRoot{testkit.NewRoot(t)}
	r.Write("proc/stat", "btime 1764396000\n")
	for i, name := range []string{"vda", "vdb"} {
		hw := fmt.Sprintf("sys/devices/pci0000:00/0000:00:0%d.0/virtio%d", i+4, i+1)
		files := map[string]string{"size": "2097152\n", "serial": "SERIAL-" + name + "\n", "queue/rotational": "1\n"}
		if diskseq {
			files["diskseq"] = fmt.Sprintf("%d\n", i+1)
		}
		r.Disk(testkit.Disk{Name: name, Major: 254, Minor: uint32(16 * i), Dir: hw + "/block/" + name, Device: hw,
			Files: files, DeviceFiles: map[string]string{"vendor": "0x1af4\n"}})
	}
	r.Partition("sys/devices/pci0000:00/0000:00:05.0/virtio2/block/vdb", "vdb1", 254, 17, 1, 2048)
	r.diskstats(1000)
	return r
}

// diskstats writes /proc/diskstats with vdb's (and vdb1's) read count n.
func (r virtioRoot) diskstats(n int) {
	r.Write("proc/diskstats", fmt.Sprintf(
		" 254       0 vda 500 0 4000 100 200 0 1600 50 0 120 150 0 0 0 0 0 0\n"+
			" 254      16 vdb %d 0 %d 100 200 0 1600 50 0 120 150 0 0 0 0 0 0\n"+
			" 254      17 vdb1 %d 0 %d 100 0 0 0 0 0 100 100 0 0 0 0 0 0\n", n, 8*n, n/2, 4*n))
}

// swap replaces vdb by another disk under the same name and 254:16: another serial, counters from
// zero and, with diskseq, a new one.
func (r virtioRoot) swap(diskseq bool) {
	dir := "sys/devices/pci0000:00/0000:00:05.0/virtio2/block/vdb"
	r.Write(dir+"/serial", "SERIAL-NEW\n")
	if diskseq {
		r.Write(dir+"/diskseq", "7\n")
	}
	r.diskstats(10)
}

func startScraper(t *testing.T, f scraper.Factory, cfg component.Config) scraper.Metrics {
	t.Helper()
	s, err := f.CreateMetrics(t.Context(), scrapertest.NewNopSettings(f.Type()), cfg)
	require.NoError(t, err)
	require.NoError(t, s.Start(t.Context(), componenttest.NewNopHost()))
	// Not t.Context(): it is canceled before cleanups run, and a shutdown waits for reads in flight.
	t.Cleanup(func() { require.NoError(t, s.Shutdown(context.Background())) })
	return s
}

// ioSeries lists, per device, the resource's hw.id and serial and the start time of system.disk.io.
type ioSeries struct {
	hwID, serial string
	start        pcommon.Timestamp
}

func ioByDevice(md pmetric.Metrics) map[string]ioSeries {
	out := map[string]ioSeries{}
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		rm := rms.At(i)
		var s ioSeries
		if v, ok := rm.Resource().Attributes().Get("hw.id"); ok {
			s.hwID = v.Str()
		}
		if v, ok := rm.Resource().Attributes().Get("hw.serial_number"); ok {
			s.serial = v.Str()
		}
		ms := rm.ScopeMetrics().At(0).Metrics()
		for k := range ms.Len() {
			if m := ms.At(k); m.Name() == "system.disk.io" {
				dp := m.Sum().DataPoints().At(0)
				dev, _ := dp.Attributes().Get("system.device")
				s.start = dp.StartTimestamp()
				out[dev.Str()] = s
			}
		}
	}
	return out
}

// smartIDs lists the hw.id of every SMART read status point, by hw.name.
func smartIDs(md pmetric.Metrics) map[string][]string {
	out := map[string][]string{}
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		ms := rms.At(i).ScopeMetrics().At(0).Metrics()
		for k := range ms.Len() {
			m := ms.At(k)
			if m.Name() != "disk_health.physical_disk.smart.read.status" {
				continue
			}
			dps := pdatawalk.NumberPoints(m)
			for l := range dps.Len() {
				id, _ := dps.At(l).Attributes().Get("hw.id")
				name, _ := dps.At(l).Attributes().Get("hw.name")
				if ids := out[name.Str()]; len(ids) == 0 || ids[len(ids)-1] != id.Str() {
					out[name.Str()] = append(ids, id.Str())
				}
			}
		}
	}
	return out
}

// TestHotSwap: vdb is swapped for another disk between two scrapes, keeping its name and major:minor.
// At the very next scrape the iostat source reports the new serial and hw.id and starts new series
// (vdb1 too), and the SMART source reports the disk under its new hw.id only; vda is untouched. With
// diskseq (5.15+) the new diskseq says so; before 5.15 the counters that went back do.
func TestHotSwap(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the sources run on Linux only")
	}
	for _, tc := range []struct {
		name    string
		diskseq bool
	}{{"diskseq", true}, {"no diskseq", false}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newVirtioRoot(t, tc.diskseq)
			iof := iostatscraper.NewFactory()
			iocfg := iof.CreateDefaultConfig().(*iostatscraper.Config)
			iocfg.RootPath = r.Dir
			iocfg.DeviceClasses = []string{"disk", "partition"}
			io := startScraper(t, iof, iocfg)
			smf := smartscraper.NewFactory()
			smcfg := smf.CreateDefaultConfig().(*smartscraper.Config)
			smcfg.RootPath = r.Dir
			sm := startScraper(t, smf, smcfg)

			md, err := io.ScrapeMetrics(t.Context())
			require.NoError(t, err)
			before := ioByDevice(md)
			require.Equal(t, ioSeries{hwID: "_SERIAL-vdb", serial: "SERIAL-vdb", start: before["vdb"].start}, before["vdb"])
			smd, err := sm.ScrapeMetrics(t.Context())
			require.NoError(t, err)
			assert.Equal(t, map[string][]string{"vda": {"_SERIAL-vda"}, "vdb": {"_SERIAL-vdb"}}, smartIDs(smd))

			r.swap(tc.diskseq)
			md, err = io.ScrapeMetrics(t.Context())
			require.NoError(t, err)
			after := ioByDevice(md)
			assert.Equal(t, "_SERIAL-NEW", after["vdb"].hwID, "the new hw.id at once")
			assert.Equal(t, "SERIAL-NEW", after["vdb"].serial)
			assert.Greater(t, after["vdb"].start, before["vdb"].start, "vdb's counters start a new series")
			assert.Greater(t, after["vdb1"].start, before["vdb1"].start, "so do its partition's")
			assert.Equal(t, "SERIAL-NEW", after["vdb1"].serial, "the partition carries the new disk's serial")
			assert.Equal(t, before["vda"], after["vda"], "vda is the same series")
			smd, err = sm.ScrapeMetrics(t.Context())
			require.NoError(t, err)
			// These virtio disks have no SMART: vda's unsupported status went out at the first scrape and is
			// not repeated; the new vdb is another disk, whose status goes out afresh.
			assert.Equal(t, map[string][]string{"vdb": {"_SERIAL-NEW"}}, smartIDs(smd),
				"SMART follows; the old identity is not reported for the new disk")

			// And the next scrape continues the new series.
			r.diskstats(20)
			md, err = io.ScrapeMetrics(t.Context())
			require.NoError(t, err)
			assert.Equal(t, after["vdb"], ioByDevice(md)["vdb"])
		})
	}
}
