package errcount

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type golden struct {
	SCSI         map[string]SCSICounters
	SCSIErrors   map[string]string
	Ext4         []Ext4Errors
	ReadOnlyErrs map[string]bool
	Btrfs        []BtrfsDeviceErrors
}

// TestGolden reads the fixture tree testdata/sys and testdata/mountinfo.txt
// and compares everything with testdata/golden.json.
func TestGolden(t *testing.T) {
	fixture := testkit.NewRoot(t)
	fixture.CopyTree("testdata/sys", ".", nil)
	sys := os.DirFS(fixture.Dir)
	got := golden{SCSI: map[string]SCSICounters{}, SCSIErrors: map[string]string{}, ReadOnlyErrs: map[string]bool{}}
	for _, name := range []string{"sda", "sdb", "sdc", "nvme0n1"} {
		c, err := ReadSCSI(sys, name)
		if err != nil {
			got.SCSIErrors[name] = err.Error()
			continue
		}
		got.SCSI[name] = c
	}
	var err error
	got.Ext4, err = ReadExt4(sys)
	require.NoError(t, err)
	mi, err := os.ReadFile("testdata/mountinfo.txt")
	require.NoError(t, err)
	mounts, err := fsusage.ParseMountInfo(mi)
	require.NoError(t, err)
	counts := map[string]uint64{}
	for _, e := range got.Ext4 {
		counts[e.Device] = e.Count
	}
	for _, m := range mounts {
		if m.FSType != "ext4" {
			continue
		}
		name, err := DeviceName(sys, m.Major, m.Minor)
		require.NoError(t, err)
		got.ReadOnlyErrs[m.MountPoint] = m.ReadOnlyAfterErrors(counts[name])
	}
	r := NewBtrfsReader(sys, nil, time.Second)
	got.Btrfs, err = r.Read(context.Background())
	require.NoError(t, err)

	testkit.GoldenJSON(t, "testdata/golden.json", got)

	assert.Equal(t, SCSICounters{Requests: 0x1a2b3c, Done: 0x1a2b3c, Errors: 31, Timeouts: 2}, got.SCSI["sda"])
	assert.Contains(t, got.SCSIErrors["nvme0n1"], "no such file")
	assert.Contains(t, got.SCSIErrors["sdc"], "iodone_cnt")
	assert.Equal(t, map[string]bool{"/": false, "/srv/data": true, "/srv/archive": false}, got.ReadOnlyErrs,
		"sda1's superblock went ro under an rw mount after 3 errors; sdb1 was mounted ro by hand")
	assert.Equal(t, time.Unix(1733043600, 0).UTC(), got.Ext4[1].LastErrorTime)
	require.Len(t, got.Btrfs, 1)
	assert.Equal(t, "loop0", got.Btrfs[0].Device, "one device: paired without opening it")
	assert.Equal(t, uint64(14), got.Btrfs[0].Stats.Corruption)
}

// superblock returns a device image with a btrfs primary superblock.
func superblock(fsid [16]byte, devid uint64) []byte {
	b := make([]byte, SuperblockOffset+superblockRead)
	sb := b[SuperblockOffset:]
	copy(sb[offFSID:], fsid[:])
	copy(sb[offMagic:], btrfsMagic)
	binary.LittleEndian.PutUint64(sb[offDevID:], devid)
	return b
}

func writeFile(t *testing.T, p string, b []byte) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, b, 0o644))
}

func TestBtrfsTwoDevicesPairedBySuperblock(t *testing.T) {
	root := t.TempDir()
	fsid := [16]byte{0x22, 0x1f, 0xb8, 0x74, 0xa1, 0x67, 0x42, 0x5d, 0xb0, 0xa6, 0x68, 0x38, 0x52, 0x00, 0xbf, 0x3f}
	base := filepath.Join(root, "sys/fs/btrfs/221fb874-a167-425d-b0a6-68385200bf3f")
	stats := func(c uint64) []byte {
		return fmt.Appendf(nil, "write_errs 0\nread_errs 0\nflush_errs 0\ncorruption_errs %d\ngeneration_errs 0\n", c)
	}
	writeFile(t, base+"/devinfo/1/error_stats", stats(0))
	writeFile(t, base+"/devinfo/2/error_stats", stats(7))
	writeFile(t, base+"/devices/loop3", nil)
	writeFile(t, base+"/devices/loop4", nil)
	// devid 1 is loop4, devid 2 is loop3: the names' order says nothing.
	writeFile(t, root+"/dev/loop4", superblock(fsid, 1))
	writeFile(t, root+"/dev/loop3", superblock(fsid, 2))
	r := NewBtrfsReader(os.DirFS(root+"/sys"), os.DirFS(root+"/dev"), time.Second)
	devs, err := r.Read(context.Background())
	require.NoError(t, err)
	require.Len(t, devs, 2)
	assert.Equal(t, "loop4", devs[0].Device)
	assert.Equal(t, "loop3", devs[1].Device)
	assert.Equal(t, uint64(7), devs[1].Stats.Corruption)

	// Cached: the superblocks are not read again.
	require.NoError(t, os.Remove(root+"/dev/loop3"))
	devs, err = r.Read(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "loop3", devs[1].Device)

	// Without a device directory the devids stay unpaired, with an error.
	devs, err = NewBtrfsReader(os.DirFS(root+"/sys"), nil, time.Second).Read(context.Background())
	require.Error(t, err)
	assert.Empty(t, devs[0].Device)

	// A superblock of another filesystem is refused.
	writeFile(t, root+"/dev/loop3", superblock([16]byte{1}, 2))
	_, err = NewBtrfsReader(os.DirFS(root+"/sys"), os.DirFS(root+"/dev"), time.Second).Read(context.Background())
	assert.ErrorContains(t, err, "not 221fb874")
}

func TestParsers(t *testing.T) {
	v, err := ParseHexCounter([]byte("0x1f\n"))
	require.NoError(t, err)
	assert.Equal(t, uint64(31), v)
	for _, bad := range []string{"31", "0x", "0xzz", ""} {
		_, err := ParseHexCounter([]byte(bad))
		require.Error(t, err, bad)
	}
	// The kernel's "0x%llx" of an int: past 2^31 the value is sign-extended.
	for in, want := range map[string]uint32{"0x7fffffff": 0x7fffffff, "0xffffffff80000000\n": 0x80000000, "0xffffffffffffffff": 0xffffffff, "0x10": 16} {
		c, err := ParseSCSICounter([]byte(in))
		require.NoError(t, err, in)
		assert.Equal(t, want, c, in)
	}
	for _, bad := range []string{"0x100000000", "0xffffffff7fffffff", "0x1ffffffff"} {
		_, err := ParseSCSICounter([]byte(bad))
		require.Error(t, err, bad)
	}
	_, err = ParseBtrfsErrorStats([]byte("invalid\n"))
	require.ErrorIs(t, err, ErrStatsInvalid)
	_, err = ParseBtrfsErrorStats([]byte("write_errs 0\n"))
	require.Error(t, err)
}
