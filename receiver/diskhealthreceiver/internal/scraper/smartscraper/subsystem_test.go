package smartscraper

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device/devicetest"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/nvme"
)

// The QEMU guest's NVMe/TCP subsystem, reached through nvme1 and nvme2, has one SMART series, under its
// namespace head's hw.id (the one the I/O source gives nvme1n1), read through nvme1; while nvme1
// reconnects it is read through nvme2, and the series stays the same (hw.id and hw.name).
func TestSMARTSubsystemOneSeries(t *testing.T) {
	const head = devicetest.NVMeTCPHeadID
	root, m := devicetest.NVMeTCP(t)
	h := newHarnessOn(t, m, func(c *device.Config) { c.Root, c.Discover = root, device.Discover })
	series := func() map[string][]string {
		out := map[string][]string{}
		for name, dps := range pointsByDisk(h.scrape(t), "disk_health.physical_disk.spare.available") {
			for _, dp := range dps {
				id, _ := dp.Attributes().Get("hw.id")
				out[name] = append(out[name], id.Str())
			}
		}
		return out
	}
	assert.Equal(t, map[string][]string{"nvme0": {"nvme.1b36-44484e564d4530-51454d55204e564d65204374726c-00000001"}, "nvme1": {head}}, series())
	assert.Empty(t, m.Disk("nvme2").Sent())

	devicetest.SetControllerState(t, root, "nvme1", "connecting")
	devicetest.SetControllerState(t, root, "nvme2", "live")
	m.Disk("nvme1").ResetSent()
	require.Equal(t, map[string][]string{"nvme0": {"nvme.1b36-44484e564d4530-51454d55204e564d65204374726c-00000001"}, "nvme1": {head}}, series())
	assert.Empty(t, m.Disk("nvme1").Sent(), "read through nvme2")
	assert.NotEmpty(t, m.Disk("nvme2").Sent())
}

// The Error Information log is the answering controller's: a subsystem read through another controller
// takes that controller's log as history (no events on its first read), and coming back to the first one
// does not resend its entries as new.
func TestSMARTSubsystemErrorLogPerController(t *testing.T) {
	root, m := devicetest.NVMeTCP(t)
	errLog := devicetest.NVMeLog(nvme.LogError)
	setPage(m.Disk("nvme1"), errLog, devicetest.ErrorLog(128, 7, 6, 5))
	setPage(m.Disk("nvme2"), errLog, devicetest.ErrorLog(128, 2, 1))
	h := newHarnessOn(t, m, func(c *device.Config) { c.Root, c.Discover = root, device.Discover })
	h.scrape(t)
	require.Empty(t, nvmeErrorRecords(h))

	via := func(ctrl string) {
		other := map[string]string{"nvme1": "nvme2", "nvme2": "nvme1"}[ctrl]
		devicetest.SetControllerState(t, root, other, "connecting")
		devicetest.SetControllerState(t, root, ctrl, "live")
	}
	via("nvme2")
	h.scrape(t)
	assert.Empty(t, nvmeErrorRecords(h), "nvme2's entries are history")
	setPage(m.Disk("nvme2"), errLog, devicetest.ErrorLog(128, 3, 2, 1))
	h.scrape(t)
	assert.Len(t, nvmeErrorRecords(h), 1, "nvme2's new entry")

	via("nvme1")
	h.scrape(t)
	assert.Len(t, nvmeErrorRecords(h), 1, "nvme1's entries 4 to 7 are not news")
}
