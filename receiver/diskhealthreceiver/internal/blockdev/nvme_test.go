package blockdev

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every namespace of a controller names the controller's hw.id, its first namespace's DiskID, as
// HWParent; a multipath head names the first controller of its subsystem.
func TestIdentityCacheNVMeParents(t *testing.T) {
	s := buildHost(t)
	// A second namespace of nvme0, listed before the first, with a partition.
	ns2 := nvmeCtrl + "/nvme0n2"
	s.blockDev(ns2, nvmeCtrl, map[string]string{"size": "2048\n", "wwid": "eui.002538b111b2c3d5\n", "nsid": "2\n"})
	s.blockDev(ns2+"/nvme0n2p1", "", map[string]string{"partition": "1\n", "size": "1024\n"})
	// A multipath head: its device is the subsystem, whose controllers are nvme10 and nvme2.
	const subsys, ctrl2, ctrl10 = "devices/virtual/nvme-subsystem/nvme-subsys2",
		"devices/pci0000:00/0000:00:07.0/nvme/nvme2", "devices/pci0000:00/0000:00:08.0/nvme/nvme10"
	s.write(ctrl2+"/model", "MP\n")
	s.write(ctrl10+"/model", "MP\n")
	s.symlink("class/nvme-subsystem/nvme-subsys2", subsys)
	s.symlink(subsys+"/nvme2", ctrl2)
	s.symlink(subsys+"/nvme10", ctrl10)
	s.blockDev(subsys+"/nvme2n1", subsys, map[string]string{"size": "4096\n", "wwid": "eui.0011223344556677\n"})

	devs := append([]Dev{{Name: "nvme0n2", Major: 259, Minor: 10}, {Name: "nvme0n2p1", Major: 259, Minor: 11},
		{Name: "nvme2n1", Major: 259, Minor: 12}}, hostDevs()...)
	var c Cache
	require.NoError(t, c.Refresh(s.root, devs))
	for _, name := range []string{"nvme0n1", "nvme0n2"} {
		id, _ := c.Get(name)
		assert.Equal(t, "nvme0", id.Controller, name)
		assert.Equal(t, "eui.002538b111b2c3d4", id.HWParent, name)
	}
	n2, _ := c.Get("nvme0n2")
	assert.Equal(t, uint32(2), n2.NSID)
	assert.Equal(t, "eui.002538b111b2c3d5", DiskID(n2), "a namespace keeps its own hw.id")
	p, _ := c.Get("nvme0n2p1")
	assert.Empty(t, p.HWParent, "partitions name their disk (disk_health.disk.parent), not the controller")
	mp, _ := c.Get("nvme2n1")
	assert.Equal(t, "nvme2", mp.Controller, "the first controller of the subsystem, by number")
	assert.Equal(t, uint32(1), mp.NSID, "from the name when there is no nsid attribute")
	assert.Equal(t, "eui.0011223344556677", mp.HWParent)
	sda, _ := c.Get("sda")
	assert.Empty(t, sda.Controller)
	assert.Empty(t, sda.HWParent)

	// The first namespace goes: the controller is named by the next one.
	require.NoError(t, c.Refresh(s.root, devs[:3]))
	n2, _ = c.Get("nvme0n2")
	assert.Equal(t, "eui.002538b111b2c3d5", n2.HWParent)
}

func TestControllerID(t *testing.T) {
	assert.Empty(t, ControllerID(nil))
	a := &Identity{Name: "nvme0n3", NSID: 3, WWN: "c"}
	b := &Identity{Name: "nvme0n1", NSID: 1, WWN: "a"}
	assert.Equal(t, "a", ControllerID([]*Identity{a, b}))
}
