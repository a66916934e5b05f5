package device

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/sanitize"
)

// sysTree builds a sysfs tree shaped like the kernel's: devices under
// devices/..., relative links from block/<name> and class/block/<name>, and
// "device" links from a disk to its parent device.
type sysTree struct {
	t    *testing.T
	root string // the host root; sysfs is root/sys
}

func newSysTree(t *testing.T) *sysTree {
	return &sysTree{t: t, root: t.TempDir()}
}

func (s *sysTree) path(rel string) string { return filepath.Join(s.root, "sys", rel) }

func (s *sysTree) write(rel, content string) {
	s.t.Helper()
	require.NoError(s.t, os.MkdirAll(filepath.Dir(s.path(rel)), 0o755))
	require.NoError(s.t, os.WriteFile(s.path(rel), []byte(content), 0o644))
}

func (s *sysTree) link(rel, target string) {
	s.t.Helper()
	require.NoError(s.t, os.MkdirAll(filepath.Dir(s.path(rel)), 0o755))
	r, err := filepath.Rel(filepath.Dir(s.path(rel)), s.path(target))
	require.NoError(s.t, err)
	require.NoError(s.t, os.Symlink(r, s.path(rel)))
}

// disk makes a block device at devDir with attrs; parent, if set, is what
// its "device" link points to. Partitions get no block/ link.
func (s *sysTree) disk(devDir, parent, dev string, attrs map[string]string) {
	s.t.Helper()
	name := filepath.Base(devDir)
	s.write(devDir+"/dev", dev+"\n")
	for rel, content := range attrs {
		if strings.HasSuffix(rel, "/") {
			require.NoError(s.t, os.MkdirAll(s.path(devDir+"/"+rel), 0o755))
			continue
		}
		s.write(devDir+"/"+rel, content)
	}
	s.link("class/block/"+name, devDir)
	if attrs["partition"] == "" {
		s.link("block/"+name, devDir)
	}
	if parent != "" {
		s.link(devDir+"/device", parent)
	}
}

const (
	tAHCI     = "devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0"
	tSCSI     = "devices/pci0000:00/0000:00:05.0/virtio2/host2/target2:0:0/2:0:0:0"
	tCDROM    = "devices/pci0000:00/0000:00:01.1/ata2/host1/target1:0:0/1:0:0:0"
	tNVMe     = "devices/pci0000:00/0000:00:03.0/nvme/nvme0"
	tNVMe1    = "devices/pci0000:00/0000:00:06.0/nvme/nvme1"
	tSubsys   = "devices/virtual/nvme-subsystem/nvme-subsys2"
	tNVMe2    = "devices/pci0000:00/0000:00:07.0/nvme/nvme2"
	tVirtio   = "devices/pci0000:00/0000:00:04.0/virtio1"
	tNVMeBare = "devices/pci0000:00/0000:00:08.0/nvme/nvme3"
)

// buildTree lays out one of each kind of block device a host may have.
func buildTree(t *testing.T) *sysTree {
	s := newSysTree(t)
	// libata disk: the SCSI device says vendor ATA.
	s.write(tAHCI+"/vendor", "ATA     \n")
	s.write(tAHCI+"/model", "ST4000DM004-2CV1\n")
	s.write(tAHCI+"/type", "0\n")
	s.write(tAHCI+"/scsi_level", "6\n")
	s.write(tAHCI+"/wwid", "naa.5000c500a1b2c3d4\n")
	s.disk(tAHCI+"/block/sda", tAHCI, "8:0", map[string]string{"size": "131072\n", "queue/rotational": "1\n"})
	s.disk(tAHCI+"/block/sda/sda1", "", "8:1", map[string]string{"partition": "1\n", "size": "2048\n"})
	// A SCSI disk (virtio-scsi) and a CD-ROM.
	s.write(tSCSI+"/vendor", "QEMU    \n")
	s.write(tSCSI+"/model", "QEMU HARDDISK   \n")
	s.write(tSCSI+"/type", "0\n")
	s.write(tSCSI+"/scsi_level", "6\n")
	s.write(tSCSI+"/vpd_pg80", string([]byte{0, 0x80, 0, 8})+"SCSITEST")
	s.disk(tSCSI+"/block/sdb", tSCSI, "8:16", map[string]string{"size": "131072\n", "queue/rotational": "1\n"})
	s.write(tCDROM+"/vendor", "QEMU    \n")
	s.write(tCDROM+"/type", "5\n")
	s.write(tCDROM+"/scsi_level", "6\n")
	s.disk(tCDROM+"/block/sr0", tCDROM, "11:0", map[string]string{"size": "0\n"})
	// NVMe controller with two namespaces, listed out of order.
	s.write(tNVMe+"/model", "QEMU NVMe Ctrl                          \n")
	s.write(tNVMe+"/serial", "smarttest   \n")
	s.write(tNVMe+"/firmware_rev", "7.2.22  \n")
	s.write(tNVMe+"/hwmon3/temp1_input", "49850\n")
	s.write(tNVMe+"/state", "live\n")
	s.link("class/nvme/nvme0", tNVMe)
	s.disk(tNVMe+"/nvme0n2", tNVMe, "259:1", map[string]string{"size": "2048\n", "nsid": "2\n", "wwid": "nvme.1b36-2\n", "queue/rotational": "0\n"})
	s.disk(tNVMe+"/nvme0n1", tNVMe, "259:0", map[string]string{"size": "131072\n", "nsid": "1\n", "wwid": "nvme.1b36-1\n", "queue/rotational": "0\n"})
	s.disk(tNVMe+"/nvme0n1/nvme0n1p1", "", "259:2", map[string]string{"partition": "1\n", "size": "2048\n"})
	// Multipath: the head's device is the subsystem, the path is hidden.
	s.write(tNVMe2+"/model", "Multipath Ctrl\n")
	s.write(tNVMe2+"/serial", "MP1\n")
	s.write(tNVMe2+"/state", "connecting\n")
	s.link("class/nvme/nvme2", tNVMe2)
	s.link("class/nvme-subsystem/nvme-subsys2", tSubsys)
	s.link(tSubsys+"/nvme2", tNVMe2)
	s.disk(tSubsys+"/nvme2n1", tSubsys, "259:5", map[string]string{"size": "4096\n", "nsid": "1\n", "wwid": "eui.0011223344556677\n"})
	s.disk(tNVMe2+"/nvme2c2n1", tNVMe2, "259:6", map[string]string{"size": "4096\n", "hidden": "1\n"})
	// A controller with no namespace at all.
	s.write(tNVMeBare+"/model", "Empty Ctrl\n")
	s.write(tNVMeBare+"/serial", "EMPTY1\n")
	s.link("class/nvme/nvme3", tNVMeBare)
	// virtio-blk: a whole disk without a health interface.
	s.write(tVirtio+"/vendor", "0x1af4\n")
	s.disk(tVirtio+"/block/vda", tVirtio, "254:0", map[string]string{"size": "2048\n", "serial": "VIRT1\n"})
	// Virtual devices.
	s.disk("devices/virtual/block/loop0", "", "7:0", map[string]string{"size": "0\n", "loop/": ""})
	s.disk("devices/virtual/block/dm-0", "", "252:0", map[string]string{"size": "2048\n", "dm/name": "vg-root\n"})
	s.disk("devices/virtual/block/md0", "", "9:0", map[string]string{"size": "2048\n", "md/": ""})
	return s
}

func TestDiscover(t *testing.T) {
	s := buildTree(t)
	disks, err := Discover(s.root)
	require.NoError(t, err)

	type row struct {
		Name, ID, Node string
		Protocol       Protocol
		Namespaces     []Namespace
		Hwmon          bool
	}
	var got []row
	for _, d := range disks {
		got = append(got, row{d.Name, d.ID, strings.TrimPrefix(d.Node, s.root), d.Protocol, d.Namespaces, d.HwmonDir != ""})
	}
	assert.Equal(t, []row{
		{"nvme0", "nvme.1b36-1", "/dev/nvme0", ProtocolNVMe, []Namespace{{"nvme0n1", 1, "nvme.1b36-1"}, {"nvme0n2", 2, "nvme.1b36-2"}}, true},
		{"nvme2", "eui.0011223344556677", "/dev/nvme2", ProtocolNVMe, []Namespace{{"nvme2n1", 1, "eui.0011223344556677"}}, false},
		{"nvme3", "Empty Ctrl_EMPTY1", "/dev/nvme3", ProtocolNVMe, nil, false},
		{"sda", "naa.5000c500a1b2c3d4", "/dev/sda", ProtocolATA, nil, false},
		{"sdb", "QEMU HARDDISK_SCSITEST", "/dev/sdb", ProtocolSCSI, nil, false},
		{"vda", "_VIRT1", "/dev/vda", ProtocolNone, nil, false},
	}, got)

	nvme0 := disks[0]
	assert.Equal(t, "QEMU NVMe Ctrl", nvme0.Identity.Model)
	assert.Equal(t, "nvme0n1", nvme0.Identity.Name, "the controller takes its first namespace's identity")
	assert.Equal(t, s.path("class/nvme/nvme0/hwmon3"), nvme0.HwmonDir)
	assert.Equal(t, "live", nvme0.State)
	assert.True(t, nvme0.Live())
	assert.Equal(t, "connecting", disks[1].State, "an NVMe-oF controller that lost its connection")
	assert.False(t, disks[1].Live())
	assert.True(t, disks[2].Live(), "a controller whose kernel shows no state")
}

// The SMART hw.id is the I/O metrics' hw.id: both are blockdev.DiskID of
// the same sysfs identity.
func TestDiscoverIDMatchesIOIdentity(t *testing.T) {
	s := buildTree(t)
	disks, err := Discover(s.root)
	require.NoError(t, err)
	for _, d := range disks {
		if d.Protocol == ProtocolNVMe && len(d.Namespaces) == 0 {
			continue
		}
		name := d.Name
		if len(d.Namespaces) > 0 {
			name = d.Namespaces[0].Name
		}
		assert.Equal(t, name, d.Identity.Name)
	}
}

func TestDiscoverErrors(t *testing.T) {
	t.Run("no sysfs", func(t *testing.T) {
		_, err := Discover(t.TempDir())
		require.ErrorContains(t, err, "listing block devices")
	})
	t.Run("bad dev number costs only that disk", func(t *testing.T) {
		s := buildTree(t)
		s.write(tAHCI+"/block/sda/dev", "garbage\n")
		disks, err := Discover(s.root)
		require.ErrorContains(t, err, "disk sda")
		require.ErrorContains(t, err, "not major:minor")
		var names []string
		for _, d := range disks {
			names = append(names, d.Name)
		}
		assert.Equal(t, []string{"nvme0", "nvme2", "nvme3", "sdb", "vda"}, names)
	})
}

// TestDiscoverSanitisesBareController: an NVMe controller without a namespace has its identity read from
// sys/class/nvme, and its strings take the one sanitising path: valid UTF-8, control characters escaped,
// capped (they become hw.model, hw.serial_number, hw.firmware_version and hw.id).
func TestDiscoverSanitisesBareController(t *testing.T) {
	s := newSysTree(t)
	ctrl := "devices/pci0000:00/0000:00:05.0/nvme/nvme7"
	s.write(ctrl+"/model", strings.Repeat("M", 60<<10)+"\n") // below bounded.Attr, far above the model cap
	s.write(ctrl+"/serial", "SN\x01\x1b[31m\xff\n")
	s.write(ctrl+"/firmware_rev", "1.0\x00\x7f\n")
	s.link("class/nvme/nvme7", ctrl)
	require.NoError(t, os.MkdirAll(s.path("block"), 0o755))
	disks, err := Discover(s.root)
	require.NoError(t, err)
	require.Len(t, disks, 1)
	id := disks[0].Identity
	assert.Equal(t, sanitize.String(sanitize.Model, strings.Repeat("M", 60<<10)), id.Model)
	assert.Len(t, id.Model, sanitize.Cap(sanitize.Model))
	assert.Equal(t, `SN\x01\x1b[31m`+"\uFFFD", id.Serial)
	assert.Equal(t, `1.0\x00\x7f`, id.Firmware)
	assert.True(t, utf8.ValidString(disks[0].ID))
	assert.LessOrEqual(t, len(disks[0].ID), sanitize.Cap(sanitize.HWID))
	assert.Equal(t, id.Model+"_"+id.Serial, disks[0].ID)
}
