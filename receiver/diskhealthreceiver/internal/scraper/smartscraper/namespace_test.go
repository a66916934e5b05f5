package smartscraper

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device/devicetest"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/nvme"
)

// nsPoint is one disk_health.nvme.namespace.* point, by its point attributes.
type nsPoint struct {
	ID, Name, Parent string
	NSID, Value      int64
}

func namespacePoints(md pmetric.Metrics, metric string) []nsPoint {
	var out []nsPoint
	for _, dps := range pointsByDisk(md, metric) {
		for _, dp := range dps {
			a := dp.Attributes()
			id, _ := a.Get("hw.id")
			name, _ := a.Get("hw.name")
			parent, _ := a.Get("hw.parent")
			nsid, _ := a.Get("disk_health.nvme.namespace.id")
			out = append(out, nsPoint{id.Str(), name.Str(), parent.Str(), nsid.Int(), dp.IntValue()})
		}
	}
	return out
}

// The QEMU and Linux target namespaces are not thin provisioned (NSFEAT 14h, 12h): nothing by default (the
// I/O source's system.disk.limit has the size), their size when turned on, under the namespace's block
// device's hw.id, from the Identify Namespace data already read; NUSE, which is NCAP there, is no usage.
func TestNVMeNamespaceSizeQEMU(t *testing.T) {
	for _, c := range []struct{ dir, ctrl string }{{"k6.12", "nvme0"}, {"k6.12-nvmet", "nvme1"}} {
		t.Run(c.dir, func(t *testing.T) {
			read := func(kind string) []byte { return devicetest.QEMUPage(t, c.dir, c.ctrl+"."+kind+".bin") }
			m := &devicetest.Machine{}
			d := m.Add(devicetest.NVMeDisk(t, c.ctrl, read("identify_ctrl"), map[string][]byte{
				devicetest.NVMeIDNS(1):            read("identify_ns1"),
				devicetest.NVMeLog(nvme.LogSMART): read("log02_smart_log"),
			}))
			ns, err := nvme.ParseIdentifyNamespace(read("identify_ns1"))
			require.NoError(t, err)
			require.False(t, ns.ThinProvisioned())
			md := newHarnessOn(t, m, nil).scrape(t)
			for _, name := range []string{"size", "capacity", "usage"} {
				assert.Empty(t, namespacePoints(md, "disk_health.nvme.namespace."+name), name)
			}

			md = newHarnessWith(t, m, nil, func(c *Config) { c.MetricsBuilderConfig.Metrics.DiskHealthNvmeNamespaceSize.Enabled = true }).scrape(t)
			nsID := d.Info.Namespaces[0].ID
			assert.Equal(t, []nsPoint{{nsID, c.ctrl + "n1", d.Info.ID, 1, int64(ns.SizeBytes())}}, namespacePoints(md, "disk_health.nvme.namespace.size"))
			assert.Equal(t, int64(64<<20), int64(ns.SizeBytes()), "smartctl's size of the namespace")
			assert.Empty(t, namespacePoints(md, "disk_health.nvme.namespace.capacity"), "NCAP is NSZE")
			assert.Empty(t, namespacePoints(md, "disk_health.nvme.namespace.usage"), "NUSE is NCAP")
		})
	}
}

// thinNamespace is QEMU's namespace made thin provisioned (NSFEAT bit 0) with the given NCAP and NUSE in
// 512-byte blocks.
func thinNamespace(t *testing.T, ncap, nuse uint64) []byte {
	b := devicetest.QEMUPage(t, "k6.12", "nvme0.identify_ns1.bin")
	b[24] |= 0x01
	binary.LittleEndian.PutUint64(b[8:], ncap)
	binary.LittleEndian.PutUint64(b[16:], nuse)
	return b
}

// A thin provisioned namespace reports its capacity and its usage, and the usage follows the drive: its
// Identify Namespace, and nothing else new, is sent again on every read.
func TestNVMeNamespaceThinUsage(t *testing.T) {
	m := &devicetest.Machine{}
	d := m.Add(devicetest.NVMeDisk(t, "nvme0", devicetest.QEMUPage(t, "k6.12", "nvme0.identify_ctrl.bin"), map[string][]byte{
		devicetest.NVMeIDNS(1):            thinNamespace(t, 100000, 1000),
		devicetest.NVMeLog(nvme.LogError): make([]byte, nvme.ErrorEntrySize),
	}))
	h := newHarnessWith(t, m, nil, func(c *Config) { c.MetricsBuilderConfig.Metrics.DiskHealthNvmeNamespaceSize.Enabled = true })
	md := h.scrape(t)
	compareGolden(t, "smart-nvme-thin", md)
	nsID, parent := d.Info.Namespaces[0].ID, d.Info.ID
	assert.Equal(t, []nsPoint{{nsID, "nvme0n1", parent, 1, 131072 * 512}}, namespacePoints(md, "disk_health.nvme.namespace.size"))
	assert.Equal(t, []nsPoint{{nsID, "nvme0n1", parent, 1, 100000 * 512}}, namespacePoints(md, "disk_health.nvme.namespace.capacity"))
	assert.Equal(t, []nsPoint{{nsID, "nvme0n1", parent, 1, 1000 * 512}}, namespacePoints(md, "disk_health.nvme.namespace.usage"))

	d.ResetSent()
	setPage(d, devicetest.NVMeIDNS(1), thinNamespace(t, 100000, 90000))
	md = h.scrape(t)
	assert.Equal(t, []string{devicetest.NVMeIDNS(1), devicetest.NVMeLog(nvme.LogSMART), devicetest.NVMeLog(nvme.LogError)}, d.Sent(),
		"the thin namespace's Identify Namespace again, then what every read sends")
	assert.Equal(t, []nsPoint{{nsID, "nvme0n1", parent, 1, 90000 * 512}}, namespacePoints(md, "disk_health.nvme.namespace.usage"))

	// A refresh that fails keeps the size and capacity but reports no usage that is no longer now.
	d.Lock()
	delete(d.Pages, devicetest.NVMeIDNS(1))
	d.Unlock()
	md = h.scrape(t)
	assert.Len(t, namespacePoints(md, "disk_health.nvme.namespace.capacity"), 1)
	assert.Empty(t, namespacePoints(md, "disk_health.nvme.namespace.usage"))
	assert.Len(t, pointsByDisk(md, "disk_health.physical_disk.spare.available")["nvme0"], 1, "the SMART log is still read")
}
