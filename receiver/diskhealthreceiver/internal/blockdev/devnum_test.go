package blockdev

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseMajorMinor(t *testing.T) {
	for _, tc := range []struct {
		in         string
		maj, minor uint32
		ok         bool
	}{
		{"8:1\n", 8, 1, true}, {"259:0", 259, 0, true}, {"4294967295:7", 1<<32 - 1, 7, true},
		{"8", 0, 0, false}, {"8:x", 0, 0, false}, {":1", 0, 0, false}, {"4294967296:0", 0, 0, false}, {"-1:0", 0, 0, false},
	} {
		maj, minor, ok := ParseMajorMinor([]byte(tc.in))
		assert.Equal(t, tc.ok, ok, tc.in)
		assert.Equal(t, [2]uint32{tc.maj, tc.minor}, [2]uint32{maj, minor}, tc.in)
	}
}

func FuzzParseMajorMinor(f *testing.F) {
	for _, s := range []string{"8:1\n", "259:0", "8", "8:x", ":", "1:2:3", " 7:0 "} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		maj, minor, ok := ParseMajorMinor(b)
		if !ok {
			require.Zero(t, maj)
			require.Zero(t, minor)
			return
		}
		again, again2, ok := ParseMajorMinor([]byte(MajorMinor(maj, minor)))
		require.True(t, ok)
		require.Equal(t, [2]uint32{maj, minor}, [2]uint32{again, again2}, "round trip")
	})
}

// TestWholeDisk: a partition maps to its disk through /sys/dev/block's link, every other device to
// itself; a device sysfs does not have, or a disk's unreadable dev, is an error for that one device.
func TestWholeDisk(t *testing.T) {
	sys := filepath.Join(t.TempDir(), "sys")
	write := func(rel, data string) {
		p := filepath.Join(sys, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	}
	link := func(dev, target string) {
		require.NoError(t, os.MkdirAll(filepath.Join(sys, "dev", "block"), 0o755))
		require.NoError(t, os.Symlink(target, filepath.Join(sys, "dev", "block", dev)))
	}
	write("devices/pci0000:00/block/sda/dev", "8:0\n")
	write("devices/pci0000:00/block/sda/sda2/dev", "8:2\n")
	write("devices/pci0000:00/block/sda/sda2/partition", "2\n")
	write("devices/virtual/block/loop0/dev", "7:0\n")
	write("devices/pci0000:00/block/nvme0n1/dev", "garbage\n")
	write("devices/pci0000:00/block/nvme0n1/nvme0n1p1/partition", "1\n")
	link("8:0", "../../devices/pci0000:00/block/sda")
	link("8:2", "../../devices/pci0000:00/block/sda/sda2")
	link("7:0", "../../devices/virtual/block/loop0")
	link("259:1", "../../devices/pci0000:00/block/nvme0n1/nvme0n1p1")

	for _, tc := range []struct{ dev, want [2]uint32 }{
		{[2]uint32{8, 2}, [2]uint32{8, 0}}, {[2]uint32{8, 0}, [2]uint32{8, 0}}, {[2]uint32{7, 0}, [2]uint32{7, 0}},
	} {
		maj, minor, err := WholeDisk(sys, tc.dev[0], tc.dev[1])
		require.NoError(t, err, tc.dev)
		assert.Equal(t, tc.want, [2]uint32{maj, minor}, tc.dev)
	}
	_, _, err := WholeDisk(sys, 9, 9)
	require.ErrorContains(t, err, "9:9", "no such device")
	_, _, err = WholeDisk(sys, 259, 1)
	require.ErrorContains(t, err, "is not major:minor", "its disk's dev is garbage")
}

// TestWholeDiskHost: on this machine, every block device's whole disk is one /proc/partitions lists,
// and a disk's own whole disk is itself.
func TestWholeDiskHost(t *testing.T) {
	entries, err := os.ReadDir("/sys/dev/block")
	if err != nil {
		t.Skipf("no /sys/dev/block: %v", err)
	}
	for _, e := range entries {
		maj, minor, ok := ParseMajorMinor([]byte(e.Name()))
		require.True(t, ok, e.Name())
		dmaj, dmin, err := WholeDisk("/sys", maj, minor)
		require.NoError(t, err, e.Name())
		_, partErr := os.Stat(filepath.Join("/sys/dev/block", e.Name(), "partition"))
		if partErr != nil {
			assert.Equal(t, [2]uint32{maj, minor}, [2]uint32{dmaj, dmin}, e.Name())
			continue
		}
		_, err = os.Stat(filepath.Join("/sys/dev/block", MajorMinor(dmaj, dmin), "partition"))
		assert.Error(t, err, "%s's disk %d:%d is no partition", e.Name(), dmaj, dmin)
	}
}
