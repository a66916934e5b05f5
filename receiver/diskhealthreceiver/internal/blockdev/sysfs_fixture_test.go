package blockdev

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeSys builds a sysfs tree shaped like the kernel's: each block device
// lives under devices/..., with relative symlinks from class/block/<name>
// (every device) and block/<name> (whole disks), and a "device" link from a
// whole disk to its parent device.
type fakeSys struct {
	t    testing.TB
	root string
}

func newFakeSys(t testing.TB) *fakeSys {
	return &fakeSys{t: t, root: filepath.Join(t.TempDir(), "sys")}
}

// write creates the file rel (relative to the sysfs root) with content.
func (s *fakeSys) write(rel, content string) {
	s.t.Helper()
	p := filepath.Join(s.root, rel)
	require.NoError(s.t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(s.t, os.WriteFile(p, []byte(content), 0o644))
}

func (s *fakeSys) mkdir(rel string) {
	s.t.Helper()
	require.NoError(s.t, os.MkdirAll(filepath.Join(s.root, rel), 0o755))
}

// symlink makes rel a symlink to the sysfs path target, written relative
// to rel's directory as the kernel does.
func (s *fakeSys) symlink(rel, target string) {
	s.t.Helper()
	p := filepath.Join(s.root, rel)
	require.NoError(s.t, os.MkdirAll(filepath.Dir(p), 0o755))
	r, err := filepath.Rel(filepath.Dir(p), filepath.Join(s.root, target))
	require.NoError(s.t, err)
	require.NoError(s.t, os.Symlink(r, p))
}

func (s *fakeSys) remove(rel string) {
	s.t.Helper()
	require.NoError(s.t, os.RemoveAll(filepath.Join(s.root, rel)))
}

// blockDev creates a block device directory devDir (".../block/<name>" for a
// disk, ".../<disk>/<part>" for a partition, "devices/virtual/block/<name>"
// for a virtual device) with attrs relative to it, and its class/block link.
// parentDev, if set, is the hardware device the "device" link points to.
func (s *fakeSys) blockDev(devDir, parentDev string, attrs map[string]string) {
	s.t.Helper()
	name := filepath.Base(devDir)
	s.mkdir(devDir)
	s.write(devDir+"/dev", "0:0\n") // every block device has one; never read
	for rel, content := range attrs {
		if strings.HasSuffix(rel, "/") {
			s.mkdir(devDir + "/" + rel)
			continue
		}
		s.write(devDir+"/"+rel, content)
	}
	s.symlink("class/block/"+name, devDir)
	isPartition := attrs["partition"] != ""
	if !isPartition {
		s.symlink("block/"+name, devDir)
	}
	if parentDev != "" {
		s.symlink(devDir+"/device", parentDev)
	}
}

const (
	ataDev   = "devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0"
	sasDev   = "devices/pci0000:00/0000:00:05.0/host2/port-2:0/end_device-2:0/target2:0:0/2:0:0:0"
	nvmeCtrl = "devices/pci0000:00/0000:00:03.0/nvme/nvme0"
	virtio1  = "devices/pci0000:00/0000:00:02.0/virtio1"
	virtio2  = "devices/pci0000:00/0000:00:04.0/virtio2"
	cciss    = "devices/pci0000:00/0000:00:06.0/cciss0/c0d0"
)

// vpd80 builds a VPD page 0x80 as the SCSI layer exposes it in vpd_pg80.
func vpd80(serial string) string {
	return string([]byte{0, 0x80, byte(len(serial) >> 8), byte(len(serial))}) + serial
}

// buildHost lays out one of each kind of device.
func buildHost(t *testing.T) *fakeSys {
	s := newFakeSys(t)

	// SATA disk behind libata: SCSI model/rev/wwid, serial only in VPD 0x80.
	s.write(ataDev+"/model", "QEMU HARDDISK   \n")
	s.write(ataDev+"/vendor", "ATA     \n")
	s.write(ataDev+"/rev", "2.5+\n")
	s.write(ataDev+"/wwid", "t10.ATA     QEMU HARDDISK                           QM00001\n")
	s.write(ataDev+"/vpd_pg80", vpd80("QM00001             "))
	sda := ataDev + "/block/sda"
	s.blockDev(sda, ataDev, map[string]string{"size": "8388608\n", "queue/rotational": "1\n", "stat": "", "holders/": ""})
	s.blockDev(sda+"/sda1", "", map[string]string{"partition": "1\n", "size": "2048000\n", "start": "2048\n"})
	s.blockDev(sda+"/sda2", "", map[string]string{"partition": "2\n", "size": "6338560\n", "start": "2050048\n"})

	// SAS disk with a NAA WWN but no VPD 0x80 page.
	s.write(sasDev+"/model", "ST4000NM0023    \n")
	s.write(sasDev+"/rev", "GS0F\n")
	s.write(sasDev+"/wwid", "naa.5000c500a1b2c3d4\n")
	s.blockDev(sasDev+"/block/sdb", sasDev, map[string]string{"size": "7814037168\n", "queue/rotational": "1\n"})

	// NVMe: the namespace's "device" is the controller.
	s.write(nvmeCtrl+"/model", "Samsung SSD 980 PRO 1TB                 \n")
	s.write(nvmeCtrl+"/serial", "S5GXNF0R123456K     \n")
	s.write(nvmeCtrl+"/firmware_rev", "5B2QGXA7\n")
	ns := nvmeCtrl + "/nvme0n1"
	s.blockDev(ns, nvmeCtrl, map[string]string{"size": "1953525168\n", "queue/rotational": "0\n", "wwid": "eui.002538b111b2c3d4\n", "nsid": "1\n"})
	s.blockDev(ns+"/nvme0n1p1", "", map[string]string{"partition": "1\n", "size": "1048576\n"})

	// LVM logical volume.
	s.blockDev("devices/virtual/block/dm-0", "", map[string]string{
		"size": "41943040\n", "queue/rotational": "0\n", "dm/name": "vg0-root\n", "dm/uuid": "LVM-abc\n", "slaves/": "",
	})
	// Software RAID, and a partition of it.
	s.blockDev("devices/virtual/block/md0", "", map[string]string{"size": "16777216\n", "queue/rotational": "1\n", "md/level": "raid1\n"})
	s.blockDev("devices/virtual/block/md0/md0p1", "", map[string]string{"partition": "1\n", "size": "16000000\n"})
	// A bound loop device has loop/; an unbound one has not.
	s.blockDev("devices/virtual/block/loop0", "", map[string]string{"size": "131072\n", "queue/rotational": "1\n", "loop/backing_file": "/var/lib/snapd/snaps/core_1.snap\n"})
	s.blockDev("devices/virtual/block/loop1", "", map[string]string{"size": "0\n", "queue/rotational": "1\n"})
	s.blockDev("devices/virtual/block/zram0", "", map[string]string{"size": "16777216\n", "queue/rotational": "0\n", "comp_algorithm": "lzo [zstd]\n"})
	s.blockDev("devices/virtual/block/ram0", "", map[string]string{"size": "131072\n", "queue/rotational": "0\n"})
	// nbd: a virtual whole disk without a parent device.
	s.blockDev("devices/virtual/block/nbd0", "", map[string]string{"size": "0\n", "queue/rotational": "0\n"})

	// virtio-blk: the virtio device has neither model nor serial; the disk
	// has a serial attribute of its own (empty when the host gave none).
	s.write(virtio1+"/vendor", "0x1af4\n")
	s.blockDev(virtio1+"/block/vda", virtio1, map[string]string{"size": "20971520\n", "queue/rotational": "1\n"})
	s.blockDev(virtio1+"/block/vda/vda1", "", map[string]string{"partition": "1\n", "size": "20969472\n"})
	s.write(virtio2+"/vendor", "0x1af4\n")
	s.blockDev(virtio2+"/block/vdb", virtio2, map[string]string{"size": "2097152\n", "queue/rotational": "1\n", "serial": "data-disk-7\n"})

	// A name with '/', which sysfs spells with '!'.
	s.blockDev(cciss+"/block/cciss!c0d0", cciss, map[string]string{"size": "1000\n", "queue/rotational": "1\n"})
	s.write(cciss+"/model", "LOGICAL VOLUME  \n")
	s.blockDev(cciss+"/block/cciss!c0d0/cciss!c0d0p1", "", map[string]string{"partition": "1\n", "size": "900\n"})
	return s
}

// hostDevs are the devices of the diskstats lines matching buildHost, disks before their
// partitions as the kernel prints them.
func hostDevs() []Dev {
	devs := []struct {
		maj, min uint32
		name     string
	}{
		{8, 0, "sda"}, {8, 1, "sda1"}, {8, 2, "sda2"}, {8, 16, "sdb"},
		{259, 0, "nvme0n1"}, {259, 1, "nvme0n1p1"},
		{253, 0, "dm-0"}, {9, 0, "md0"}, {259, 2, "md0p1"},
		{7, 0, "loop0"}, {7, 1, "loop1"}, {252, 0, "zram0"}, {1, 0, "ram0"}, {43, 0, "nbd0"},
		{254, 0, "vda"}, {254, 1, "vda1"}, {254, 16, "vdb"},
		{104, 0, "cciss/c0d0"}, {104, 1, "cciss/c0d0p1"},
	}
	stats := make([]Dev, len(devs))
	for i, d := range devs {
		stats[i] = Dev{Name: d.name, Major: d.maj, Minor: d.min}
	}
	return stats
}
