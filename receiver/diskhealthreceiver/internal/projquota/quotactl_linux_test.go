package projquota

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// fakeQuota answers Q_GETNEXTQUOTA from a sorted table, as the kernel does.
func fakeQuota(recs []ifNextDqblk, calls *int) func(uint32, *ifNextDqblk) error {
	return func(id uint32, q *ifNextDqblk) error {
		*calls++
		for _, r := range recs {
			if r.ID >= id {
				*q = r
				return nil
			}
		}
		return unix.ENOENT
	}
}

func TestScanWalksEveryRecordOnce(t *testing.T) {
	var calls int
	got, err := scan(fakeQuota([]ifNextDqblk{
		{ID: 0, CurSpace: 1 << 30},
		{ID: 7, CurSpace: 4096, CurInodes: 2, BHardLimit: 100, BSoftLimit: 80, IHardLimit: 10, ISoftLimit: 8},
		{ID: 1000, CurSpace: 8192, CurInodes: 1},
		{ID: 4294967295, CurSpace: 1},
	}, &calls), nil)
	require.NoError(t, err)
	assert.Equal(t, []Project{
		{ID: 7, Used: 4096, Inodes: 2, BlockHard: 100 << 10, BlockSoft: 80 << 10, InodeHard: 10, InodeSoft: 8},
		{ID: 1000, Used: 8192, Inodes: 1},
		{ID: 4294967295, Used: 1},
	}, got, "project 0 left out, limits in bytes")
	assert.Equal(t, 4, calls, "one call per record, none past the last ID")
}

func TestScanErrors(t *testing.T) {
	_, err := scan(func(uint32, *ifNextDqblk) error { return unix.ESRCH }, nil)
	require.ErrorIs(t, err, ErrOff)
	_, err = scan(func(uint32, *ifNextDqblk) error { return unix.EPERM }, nil)
	require.ErrorIs(t, err, unix.EPERM)
	require.ErrorContains(t, err, "Q_GETNEXTQUOTA (project 0)")
	next := uint32(1)
	got, err := scan(func(id uint32, q *ifNextDqblk) error {
		*q = ifNextDqblk{ID: max(id, next), CurSpace: 1}
		next++
		return nil
	}, nil)
	require.ErrorIs(t, err, ErrTruncated)
	assert.Len(t, got, MaxScan)
}

// TestReadOnAFilesystemWithoutProjectQuota: tmpfs has none (or the kernel no quota support): the answer is an
// error, never records.
func TestReadOnAFilesystemWithoutProjectQuota(t *testing.T) {
	got, err := Read(t.TempDir(), "", nil)
	require.Error(t, err)
	assert.Empty(t, got)
}
