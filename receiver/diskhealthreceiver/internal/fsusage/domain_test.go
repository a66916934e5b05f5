package fsusage

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	dhtest "github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/bounded"
)

// domainRoot is a root with udev's by-uuid links and sysfs's device links for an ext4 partition, a
// dm volume and a btrfs partition (mounted on an anonymous device).
func domainRoot(t *testing.T) *dhtest.Root {
	r := dhtest.NewRoot(t)
	r.Link("dev/disk/by-uuid/1b2c3d4e-0000-4000-8000-00000000aaaa", "../../sda1")
	r.Link("dev/disk/by-uuid/5f6e7d8c-0000-4000-8000-00000000bbbb", "../../dm-0")
	r.Link("dev/disk/by-uuid/9a8b7c6d-0000-4000-8000-00000000cccc", "../../sdb2")
	r.Link("sys/dev/block/8:1", "../../devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda/sda1")
	r.Link("sys/dev/block/253:0", "../../devices/virtual/block/dm-0")
	return r
}

func TestUUIDIndexDomain(t *testing.T) {
	r := domainRoot(t)
	x := NewUUIDIndex(bounded.NewDirFS(r.Dir, bounded.Attr))
	x.Refresh()
	for _, c := range []struct {
		m    Mount
		want Domain
	}{
		{Mount{Major: 8, Minor: 1, Source: "/dev/sda1"}, Domain{8, 1, "1b2c3d4e-0000-4000-8000-00000000aaaa"}},
		// The mount source names the mapper link, the numbers find dm-0.
		{Mount{Major: 253, Minor: 0, Source: "/dev/mapper/vg0-root"}, Domain{253, 0, "5f6e7d8c-0000-4000-8000-00000000bbbb"}},
		// btrfs: anonymous device numbers, found by its source.
		{Mount{Major: 0, Minor: 31, Source: "/dev/sdb2"}, Domain{0, 31, "9a8b7c6d-0000-4000-8000-00000000cccc"}},
		// tmpfs and overlay have no UUID; their numbers still tell them apart.
		{Mount{Major: 0, Minor: 45, Source: "tmpfs"}, Domain{0, 45, ""}},
		{Mount{Major: 0, Minor: 52, Source: "overlay"}, Domain{0, 52, ""}},
		// A block device without a by-uuid link (no filesystem UUID, or not in sysfs).
		{Mount{Major: 8, Minor: 17, Source: "/dev/sdc1"}, Domain{8, 17, ""}},
	} {
		assert.Equal(t, c.want, x.Domain(&c.m), "%+v", c.m)
	}
	assert.Equal(t, "253:0", Domain{Major: 253}.ID())
}

// TestUUIDIndexRefresh: the listing follows udev's changes (a new filesystem on a device) and a root
// without /dev/disk/by-uuid gives no UUIDs and no error.
func TestUUIDIndexRefresh(t *testing.T) {
	r := domainRoot(t)
	x := NewUUIDIndex(bounded.NewDirFS(r.Dir, bounded.Attr))
	x.Refresh()
	sda1 := Mount{Major: 8, Minor: 1, Source: "/dev/sda1"}
	require.Equal(t, "1b2c3d4e-0000-4000-8000-00000000aaaa", x.Domain(&sda1).UUID)

	require.NoError(t, os.Remove(r.Path("dev/disk/by-uuid/1b2c3d4e-0000-4000-8000-00000000aaaa")))
	r.Link("dev/disk/by-uuid/0e0e0e0e-0000-4000-8000-00000000dddd", "../../sda1")
	// A directory's mtime may not move within the clock's granularity; make the change visible.
	later := time.Now().Add(time.Second)
	require.NoError(t, os.Chtimes(r.Path("dev/disk/by-uuid"), later, later))
	x.Refresh()
	assert.Equal(t, "0e0e0e0e-0000-4000-8000-00000000dddd", x.Domain(&sda1).UUID)

	none := NewUUIDIndex(bounded.NewDirFS(dhtest.NewRoot(t).Dir, bounded.Attr))
	none.Refresh()
	assert.Equal(t, Domain{Major: 8, Minor: 1}, none.Domain(&sda1))
}

func TestUUIDsByName(t *testing.T) {
	got := UUIDsByName(map[string]string{
		"b-uuid":      "../../sda1",
		"a-uuid":      "../../sda1", // two links to one device: the smaller wins, whatever the order
		"bad\xffname": "../../sdb1",
		"nothing":     "",
	})
	assert.Equal(t, map[string]string{"sda1": "a-uuid", "sdb1": "bad\uFFFDname"}, got)
}
