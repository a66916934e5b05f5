package blockdev

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// swapHost is buildHost on a 5.15+ kernel: every whole disk has a diskseq. vdb has a partition.
func swapHost(t *testing.T) (*fakeSys, []Dev) {
	s := buildHost(t)
	for i, d := range []string{ataDev + "/block/sda", sasDev + "/block/sdb", nvmeCtrl + "/nvme0n1", virtio1 + "/block/vda", virtio2 + "/block/vdb"} {
		s.write(d+"/diskseq", fmt.Sprintf("%d\n", i+1))
	}
	s.blockDev(virtio2+"/block/vdb/vdb1", "", map[string]string{"partition": "1\n", "size": "2048\n"})
	devs := append(hostDevs(), Dev{Name: "vdb1", Major: 254, Minor: 17})
	return s, devs
}

// A disk swapped under the same name and major:minor (a new diskseq, another serial) is read again at
// the next Refresh, with its partitions; every other device costs one diskseq read per whole disk.
func TestIdentityCacheDiskseqSwap(t *testing.T) {
	s, devs := swapHost(t)
	c, calls, paths := countingCache()
	require.NoError(t, c.Refresh(s.root, devs))
	vdb, _ := c.Get("vdb")
	assert.Equal(t, uint64(5), vdb.DiskSeq)
	vdb1, _ := c.Get("vdb1")
	assert.Equal(t, uint64(5), vdb1.DiskSeq, "a partition carries its disk's diskseq")
	assert.Equal(t, "data-disk-7", vdb1.Serial)
	sda, _ := c.Get("sda")

	// Nothing changed: one read of each whole disk's diskseq, nothing else.
	before := *calls
	require.NoError(t, c.Refresh(s.root, devs))
	assert.Equal(t, 5, *calls-before, "one diskseq read per whole disk")
	assert.Equal(t, 2, paths["class/block/vdb/diskseq"])

	// The swap: same name, same 254:16, new diskseq and serial.
	s.write(virtio2+"/block/vdb/serial", "data-disk-8\n")
	s.write(virtio2+"/block/vdb/diskseq", "9\n")
	listed := paths["class/block/vdb"]
	require.NoError(t, c.Refresh(s.root, devs))
	assert.Equal(t, listed+1, paths["class/block/vdb"], "the swapped disk is read again")
	vdb, _ = c.Get("vdb")
	assert.Equal(t, "data-disk-8", vdb.Serial)
	assert.Equal(t, uint64(9), vdb.DiskSeq)
	assert.Equal(t, "_data-disk-8", DiskID(vdb))
	vdb1, _ = c.Get("vdb1")
	assert.Equal(t, "data-disk-8", vdb1.Serial, "its partition follows")
	assert.Equal(t, uint64(9), vdb1.DiskSeq)
	same, _ := c.Get("sda")
	assert.Same(t, sda, same, "other disks are not read again")

	// A swap found while the device set changes too.
	s.write(virtio2+"/block/vdb/serial", "data-disk-9\n")
	s.write(virtio2+"/block/vdb/diskseq", "10\n")
	require.NoError(t, c.Refresh(s.root, devs[:len(devs)-1])) // vdb1 gone
	vdb, _ = c.Get("vdb")
	assert.Equal(t, "data-disk-9", vdb.Serial)
	_, ok := c.Get("vdb1")
	assert.False(t, ok)
}

// Without diskseq (kernels before 5.15) an unchanged set costs nothing, and a swap shows only in the
// counters: the caller then calls Reread.
func TestIdentityCacheReread(t *testing.T) {
	s := buildHost(t)
	s.blockDev(virtio2+"/block/vdb/vdb1", "", map[string]string{"partition": "1\n", "size": "2048\n"})
	devs := append(hostDevs(), Dev{Name: "vdb1", Major: 254, Minor: 17})
	c, calls, _ := countingCache()
	require.NoError(t, c.Refresh(s.root, devs))
	old, _ := c.Get("vdb")
	oldPart, _ := c.Get("vdb1")
	s.write(virtio2+"/block/vdb/serial", "data-disk-8\n")
	before := *calls
	require.NoError(t, c.Refresh(s.root, devs))
	assert.Equal(t, before, *calls, "no diskseq: an unchanged set costs no filesystem operation")
	same, _ := c.Get("vdb")
	assert.Same(t, old, same)

	require.NoError(t, c.Reread("vdb"))
	vdb, _ := c.Get("vdb")
	assert.Equal(t, "data-disk-8", vdb.Serial)
	vdb1, _ := c.Get("vdb1")
	assert.Equal(t, "data-disk-8", vdb1.Serial, "its partition follows")
	assert.Equal(t, "data-disk-7", old.Serial, "identities already handed out are not modified")
	assert.Equal(t, "data-disk-7", oldPart.Serial)

	// A partition alone takes its disk's hardware from the cache.
	require.NoError(t, c.Reread("vdb1"))
	vdb1, _ = c.Get("vdb1")
	assert.Equal(t, "data-disk-8", vdb1.Serial)
	require.NoError(t, c.Reread("sdz"), "an unknown device is no error")
}

func BenchmarkIdentityCacheRefreshDiskseq100(b *testing.B) {
	s := newFakeSys(b)
	devs := make([]Dev, 100)
	for i := range devs {
		name := fmt.Sprintf("vd%d", i)
		dir := fmt.Sprintf("devices/pci0000:00/virtio%d", i)
		s.write(dir+"/vendor", "0x1af4\n")
		s.blockDev(dir+"/block/"+name, dir, map[string]string{"size": "2048\n", "diskseq": fmt.Sprintf("%d\n", i+1)})
		devs[i] = Dev{Name: name, Major: 254, Minor: uint32(16 * i)}
	}
	var c Cache
	if err := c.Refresh(s.root, devs); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Refresh(s.root, devs); err != nil {
			b.Fatal(err)
		}
	}
}
