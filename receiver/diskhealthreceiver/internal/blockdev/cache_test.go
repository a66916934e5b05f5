package blockdev

import (
	"io/fs"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingFS counts every filesystem operation the identity reader makes.
type countingFS struct {
	fsys  fs.FS
	calls *int
	paths map[string]int
}

func (c countingFS) note(name string) { *c.calls++; c.paths[name]++ }

func (c countingFS) Open(name string) (fs.File, error) { c.note(name); return c.fsys.Open(name) }
func (c countingFS) ReadDir(name string) ([]fs.DirEntry, error) {
	c.note(name)
	return fs.ReadDir(c.fsys, name)
}
func (c countingFS) ReadFile(name string) ([]byte, error) {
	c.note(name)
	return fs.ReadFile(c.fsys, name)
}
func (c countingFS) ReadLink(name string) (string, error) {
	c.note(name)
	return fs.ReadLink(c.fsys, name)
}
func (c countingFS) Lstat(name string) (fs.FileInfo, error) {
	c.note(name)
	return fs.Lstat(c.fsys, name)
}

func countingCache() (*Cache, *int, map[string]int) {
	calls, paths := new(int), map[string]int{}
	c := &Cache{openFS: func(root string) fs.FS {
		return countingFS{fsys: os.DirFS(root), calls: calls, paths: paths}
	}}
	return c, calls, paths
}

func TestIdentityCacheMatchesReadIdentity(t *testing.T) {
	s := buildHost(t)
	c, _, _ := countingCache()
	stats := hostDevs()
	require.NoError(t, c.Refresh(s.root, stats))
	want := wantHost()
	// The cache knows the other namespaces too: it names each namespace's controller.
	nvme := want["nvme0n1"]
	nvme.HWParent = "eui.002538b111b2c3d4"
	want["nvme0n1"] = nvme
	for _, st := range stats {
		got, ok := c.Get(st.Name)
		require.True(t, ok, st.Name)
		assert.Equal(t, want[st.Name], *got)
	}
	_, ok := c.Get("sdz")
	assert.False(t, ok)
}

func TestIdentityCacheReadsEachDeviceOnce(t *testing.T) {
	s := buildHost(t)
	c, calls, paths := countingCache()
	stats := hostDevs()
	require.NoError(t, c.Refresh(s.root, stats))
	first := *calls
	// Each device is listed once; a partition takes its disk's hardware
	// fields from memory, so the disk is not listed again for it.
	assert.Equal(t, 1, paths["class/block/sda"])
	assert.Equal(t, 1, paths["class/block/nvme0n1"])
	t.Logf("first refresh of %d devices: %d filesystem operations", len(stats), first)

	// Same set: no filesystem access, no allocation; the tree can change
	// under us and we do not notice, by design.
	s.write(ataDev+"/model", "CHANGED\n")
	allocs := testing.AllocsPerRun(50, func() {
		require.NoError(t, c.Refresh(s.root, stats))
	})
	assert.Zero(t, allocs)
	assert.Equal(t, first, *calls)
	id, _ := c.Get("sda")
	assert.Equal(t, "QEMU HARDDISK", id.Model)

	// A different slice with equal content is the same set.
	again := append([]Dev(nil), stats...)
	require.NoError(t, c.Refresh(s.root, again))
	assert.Equal(t, first, *calls)
}

func TestIdentityCacheRecreatedDevice(t *testing.T) {
	s := buildHost(t)
	c, calls, paths := countingCache()
	stats := hostDevs()
	require.NoError(t, c.Refresh(s.root, stats))
	before := *calls
	sda1Ops := paths["class/block/sda1"] // listing and link
	oldSda1, _ := c.Get("sda1")
	oldNVMe, _ := c.Get("nvme0n1")

	// sda is replaced by another disk with a new minor; its partitions
	// keep their numbers here (they do not need to change for this test).
	s.write(ataDev+"/model", "NEW DISK\n")
	stats[0].Minor = 32
	require.NoError(t, c.Refresh(s.root, stats))
	assert.Equal(t, 2, paths["class/block/sda"], "the re-created disk is read again")
	assert.Equal(t, sda1Ops, paths["class/block/sda1"], "its unchanged partitions are not")
	assert.Equal(t, 1, paths["class/block/nvme0n1"], "other devices are not")
	assert.Greater(t, *calls, before)

	sda, _ := c.Get("sda")
	assert.Equal(t, "NEW DISK", sda.Model)
	assert.Equal(t, uint32(32), sda.Minor)
	sda1, _ := c.Get("sda1")
	assert.Equal(t, "NEW DISK", sda1.Model, "partitions follow their re-read disk")
	assert.Equal(t, "QEMU HARDDISK", oldSda1.Model, "identities already handed out are not modified")
	nvme, _ := c.Get("nvme0n1")
	assert.Same(t, oldNVMe, nvme)
}

func TestIdentityCacheDropsGoneDevicesAndAddsNew(t *testing.T) {
	s := buildHost(t)
	c, _, paths := countingCache()
	stats := hostDevs()
	require.NoError(t, c.Refresh(s.root, stats[:4])) // sda, sda1, sda2, sdb
	_, ok := c.Get("nvme0n1")
	assert.False(t, ok)

	require.NoError(t, c.Refresh(s.root, stats[4:6])) // nvme0n1, nvme0n1p1 only
	_, ok = c.Get("sda")
	assert.False(t, ok, "gone devices are dropped")
	id, ok := c.Get("nvme0n1p1")
	require.True(t, ok)
	assert.Equal(t, "Samsung SSD 980 PRO 1TB", id.Model)

	// sda comes back (hot-plug): it is read again, not resurrected.
	require.NoError(t, c.Refresh(s.root, stats[:1]))
	assert.Equal(t, 2, paths["class/block/sda"])
}

// A device whose read failed is not read again while it stays, and its error stands: every Refresh
// returns it (the scraper's Reporter logs it once), until the device is read again.
func TestIdentityCacheErrorsStandUntilReread(t *testing.T) {
	s := buildHost(t)
	s.remove(ataDev + "/rev")
	s.mkdir(ataDev + "/rev/") // unreadable
	c, _, paths := countingCache()
	stats := hostDevs()
	err := c.Refresh(s.root, stats)
	require.ErrorContains(t, err, "device sda: ")
	id, ok := c.Get("sda")
	require.True(t, ok)
	assert.Equal(t, "QEMU HARDDISK", id.Model, "the rest of the device is filled")
	assert.Empty(t, id.Firmware)
	other, _ := c.Get("nvme0n1")
	assert.Equal(t, "Samsung SSD 980 PRO 1TB", other.Model, "other devices are unaffected")

	reads := paths["class/block/sda"]
	again := c.Refresh(s.root, stats)
	assert.Equal(t, err.Error(), again.Error(), "the same error stands")
	assert.Equal(t, reads, paths["class/block/sda"], "not read again")

	// Fixed and read again (counters restarted): the error is gone.
	s.remove(ataDev + "/rev")
	s.write(ataDev+"/rev", "2.5+\n")
	require.NoError(t, c.Reread("sda"))
	require.NoError(t, c.Refresh(s.root, stats))
	id, _ = c.Get("sda")
	assert.Equal(t, "2.5+", id.Firmware)
}

// A partition whose disk is not in diskstats reads the disk's hardware on every change of the device
// set; an error of that read stands once, however many changes come.
func TestIdentityCacheAbsentDiskErrorStandsOnce(t *testing.T) {
	s := buildHost(t)
	s.remove(ataDev + "/rev")
	s.mkdir(ataDev + "/rev/") // unreadable
	var c Cache
	sda1, nvme := hostDevs()[1:2], hostDevs()[4:5]
	first := c.Refresh(s.root, sda1)
	require.ErrorContains(t, first, "rev")
	for _, set := range [][]Dev{append(slices.Clone(sda1), nvme...), sda1, sda1} {
		err := c.Refresh(s.root, set)
		assert.Equal(t, first.Error(), err.Error(), "the one error, once, for %v", set)
	}
}

func TestIdentityCachePartitionBeforeItsDisk(t *testing.T) {
	// Not what the kernel prints, but the result must not depend on order.
	s := buildHost(t)
	var c Cache
	stats := []Dev{hostDevs()[1], hostDevs()[0]} // sda1, sda
	require.NoError(t, c.Refresh(s.root, stats))
	id, _ := c.Get("sda1")
	assert.Equal(t, wantHost()["sda1"], *id)
}

func TestIdentityCachePartitionWithoutItsDisk(t *testing.T) {
	s := buildHost(t)
	var c Cache
	require.NoError(t, c.Refresh(s.root, hostDevs()[1:2])) // sda1 alone
	id, _ := c.Get("sda1")
	assert.Equal(t, wantHost()["sda1"], *id, "the disk's hardware is read directly")
}

func TestIdentityCacheNewRootRereads(t *testing.T) {
	a, b := buildHost(t), buildHost(t)
	b.write(ataDev+"/model", "OTHER HOST\n")
	var c Cache
	stats := hostDevs()
	require.NoError(t, c.Refresh(a.root, stats))
	require.NoError(t, c.Refresh(b.root, stats))
	id, _ := c.Get("sda")
	assert.Equal(t, "OTHER HOST", id.Model)
}

func TestIdentityCacheEmpty(t *testing.T) {
	var c Cache
	_, ok := c.Get("sda")
	assert.False(t, ok, "Get before any Refresh")
	require.NoError(t, c.Refresh(t.TempDir(), nil))
	_, ok = c.Get("sda")
	assert.False(t, ok)
}
