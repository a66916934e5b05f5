package diskhealthreceiver

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/iostatscraper"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper"
)

// newNVMeRoot is a root_path with one NVMe controller, nvme0, and two namespaces, laid out as the
// kernel does: /sys/class/nvme/nvme0 -> .../nvme/nvme0, whose namespaces nvme0n1 and nvme0n2 are
// block devices with their own WWN.
func newNVMeRoot(t *testing.T) virtioRoot {
	r := virtioRoot{testkit.NewRoot(t)}
	r.Write("proc/stat", "btime 1764396000\n")
	ctrl := "sys/devices/pci0000:00/0000:00:03.0/nvme/nvme0"
	r.Write(ctrl+"/model", "QEMU NVMe Ctrl\n")
	r.Write(ctrl+"/serial", "CTRL0001\n")
	r.Write(ctrl+"/firmware_rev", "8.0\n")
	r.Link("sys/class/nvme/nvme0", ctrl)
	for n := 1; n <= 2; n++ {
		name := fmt.Sprintf("nvme0n%d", n)
		r.Disk(testkit.Disk{Name: name, Major: 259, Minor: uint32(n - 1), Dir: ctrl + "/" + name, Device: ctrl,
			Files: map[string]string{"size": "2097152\n", "nsid": fmt.Sprintf("%d\n", n),
				"wwid": fmt.Sprintf("eui.00000000000000%02d\n", n), "queue/rotational": "0\n"}})
	}
	r.Write("proc/diskstats", " 259       0 nvme0n1 500 0 4000 100 200 0 1600 50 0 120 150 0 0 0 0 0 0\n"+
		" 259       1 nvme0n2 300 0 2400 60 100 0 800 20 0 70 80 0 0 0 0 0 0\n")
	return r
}

// TestNVMeNamespacesNameTheirController: both namespaces' I/O resources carry the controller's hw.id
// as hw.parent, and that is the hw.id the SMART source reports the controller under, so each
// namespace's I/O joins the controller's health (not only the first one's, whose own hw.id it is).
func TestNVMeNamespacesNameTheirController(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the sources run on Linux only")
	}
	r := newNVMeRoot(t)
	iof := iostatscraper.NewFactory()
	iocfg := iof.CreateDefaultConfig().(*iostatscraper.Config)
	iocfg.RootPath = r.Dir
	md, err := startScraper(t, iof, iocfg).ScrapeMetrics(t.Context())
	require.NoError(t, err)
	parents := map[string]string{}
	ids := map[string]string{}
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		attrs := rms.At(i).Resource().Attributes()
		mm, _ := attrs.Get("disk_health.disk.major_minor")
		p, ok := attrs.Get("hw.parent")
		require.True(t, ok, "%s without hw.parent", mm.Str())
		parents[mm.Str()] = p.Str()
		id, _ := attrs.Get("hw.id")
		ids[mm.Str()] = id.Str()
	}
	assert.Equal(t, map[string]string{"259:0": "eui.0000000000000001", "259:1": "eui.0000000000000001"}, parents)
	assert.Equal(t, map[string]string{"259:0": "eui.0000000000000001", "259:1": "eui.0000000000000002"}, ids,
		"each namespace keeps its own hw.id")

	smf := smartscraper.NewFactory()
	smcfg := smf.CreateDefaultConfig().(*smartscraper.Config)
	smcfg.RootPath = r.Dir
	smd, err := startScraper(t, smf, smcfg).ScrapeMetrics(t.Context())
	require.NoError(t, err)
	assert.Equal(t, map[string][]string{"nvme0": {"eui.0000000000000001"}}, smartIDs(smd),
		"the controller's health is under the hw.parent of both namespaces")
}
