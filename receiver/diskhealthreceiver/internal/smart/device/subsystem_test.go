package device_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device/devicetest"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/nvme"
)

// headID is the hw.id of the subsystem's namespace head nvme1n1 in the k6.1-nvme-tcp sysfs: its wwid.
const headID = devicetest.NVMeTCPHeadID

// An NVMe/TCP subsystem reached through two controllers (nvme1 live, nvme2 connecting in the guest's
// sysfs) is one disk under its namespace head's hw.id, read through nvme1; nvme2 is no disk of its own
// (it was one, "Linux_<serial>", beside it).
func TestDiscoverSubsystemOneDisk(t *testing.T) {
	root := devicetest.SysfsRoot(t, "k6.1-nvme-tcp")
	disks, err := device.Discover(root)
	require.NoError(t, err)
	require.Len(t, disks, 2, "nvme0 (PCIe) and the subsystem")
	assert.Equal(t, "nvme0", disks[0].Name)
	assert.Nil(t, disks[0].Controllers)
	assert.Equal(t, "nvme0", disks[0].Via)

	d := disks[1]
	assert.Equal(t, "nvme1", d.Name)
	assert.Equal(t, headID, d.ID)
	assert.Equal(t, []string{"nvme1", "nvme2"}, d.Controllers)
	assert.Equal(t, []device.Namespace{{Name: "nvme1n1", NSID: 1, ID: headID}}, d.Namespaces)
	assert.Equal(t, "nvme1", d.Via)
	assert.Equal(t, filepath.Join(root, "dev", "nvme1"), d.Node)
	assert.Equal(t, "live", d.State)

	// nvme1 reconnecting: the subsystem is read through nvme2, under the same name and hw.id.
	devicetest.SetControllerState(t, root, "nvme1", "connecting")
	devicetest.SetControllerState(t, root, "nvme2", "live")
	disks, err = device.Discover(root)
	require.NoError(t, err)
	require.Len(t, disks, 2)
	d = disks[1]
	assert.Equal(t, "nvme1", d.Name)
	assert.Equal(t, headID, d.ID)
	assert.Equal(t, "nvme2", d.Via)
	assert.Equal(t, filepath.Join(root, "dev", "nvme2"), d.Node)
	assert.Equal(t, "live", d.State)

	// Neither live: read through the head's own controller, whose state says why it fails.
	devicetest.SetControllerState(t, root, "nvme2", "connecting")
	disks, err = device.Discover(root)
	require.NoError(t, err)
	assert.Equal(t, "nvme1", disks[1].Via)
	assert.Equal(t, "connecting", disks[1].State)
}

// The reader sends the subsystem's commands to one controller only, and to the other one from the read
// on which the first is not live; there it starts afresh (Identify Controller again: the cache was the
// other controller's).
func TestReadSubsystemThroughOneController(t *testing.T) {
	root, m := devicetest.NVMeTCP(t)
	r := newReader(t, m, func(c *device.Config) { c.Root, c.Discover = root, device.Discover })
	results, err := r.Collect(t.Context())
	require.NoError(t, err)
	require.Len(t, results, 2)
	got := byName(t, results)
	require.Equal(t, device.StatusOK, got["nvme1"].Status, got["nvme1"].Err)
	assert.Equal(t, headID, got["nvme1"].Disk.ID)
	assert.NotEmpty(t, m.Disk("nvme1").Sent())
	assert.Empty(t, m.Disk("nvme2").Sent(), "one read per subsystem")

	m.Disk("nvme1").ResetSent()
	devicetest.SetControllerState(t, root, "nvme1", "connecting")
	devicetest.SetControllerState(t, root, "nvme2", "live")
	results, err = r.Collect(t.Context())
	require.NoError(t, err)
	got = byName(t, results)
	require.Equal(t, device.StatusOK, got["nvme1"].Status, got["nvme1"].Err)
	assert.Equal(t, "nvme2", got["nvme1"].Disk.Via)
	assert.Empty(t, m.Disk("nvme1").Sent(), "nothing to the controller that is reconnecting")
	assert.Contains(t, m.Disk("nvme2").Sent(), devicetest.NVMeIDCtrl)
	assert.Contains(t, m.Disk("nvme2").Sent(), devicetest.NVMeLog(nvme.LogSMART))
}
