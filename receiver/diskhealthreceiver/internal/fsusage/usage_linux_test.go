package fsusage

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"golang.org/x/sys/unix"
)

func TestUsageFromStatfs(t *testing.T) {
	tests := []struct {
		name string
		st   unix.Statfs_t
		want Usage
		util float64
		ok   bool
	}{
		{
			name: "ext4 with the 5 % root reserve",
			st:   unix.Statfs_t{Bsize: 4096, Frsize: 4096, Blocks: 1000, Bfree: 300, Bavail: 250, Files: 640, Ffree: 600},
			want: Usage{Limit: 4096000, Used: 700 * 4096, Free: 250 * 4096, Reserved: 50 * 4096, Inodes: 640, InodesUsed: 40, InodesFree: 600},
			util: 700.0 / 950, ok: true,
		},
		{
			name: "fragment size differs from block size: df uses f_frsize",
			st:   unix.Statfs_t{Bsize: 1 << 20, Frsize: 4096, Blocks: 100, Bfree: 50, Bavail: 50},
			want: Usage{Limit: 409600, Used: 204800, Free: 204800},
			util: 0.5, ok: true,
		},
		{
			name: "no fragment size: block size",
			st:   unix.Statfs_t{Bsize: 512, Blocks: 10, Bfree: 10, Bavail: 10},
			want: Usage{Limit: 5120, Free: 5120},
			util: 0, ok: true,
		},
		{
			name: "proc-like: nothing to report, never NaN",
			st:   unix.Statfs_t{Bsize: 4096, Frsize: 4096},
			want: Usage{},
			ok:   false,
		},
		{
			name: "full to the reserve: 100 %",
			st:   unix.Statfs_t{Frsize: 4096, Blocks: 100, Bfree: 5, Bavail: 0},
			want: Usage{Limit: 409600, Used: 95 * 4096, Reserved: 5 * 4096},
			util: 1, ok: true,
		},
		{
			name: "inconsistent counts are clamped to add up",
			st:   unix.Statfs_t{Frsize: 1024, Blocks: 100, Bfree: 120, Bavail: 150, Files: 10, Ffree: 20},
			want: Usage{Limit: 102400, Free: 102400, Inodes: 10, InodesFree: 10},
			util: 0, ok: true,
		},
		{
			name: "btrfs: no inode table",
			st:   unix.Statfs_t{Frsize: 4096, Blocks: 10, Bfree: 4, Bavail: 4, Files: 0, Ffree: 0},
			want: Usage{Limit: 40960, Used: 6 * 4096, Free: 4 * 4096},
			util: 0.6, ok: true,
		},
		{
			name: "read-only flag",
			st:   unix.Statfs_t{Frsize: 4096, Blocks: 10, Bfree: 10, Bavail: 10, Flags: unix.ST_RDONLY | unix.ST_NOATIME},
			want: Usage{Limit: 40960, Free: 40960, ReadOnly: true},
			util: 0, ok: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := UsageFromStatfs(&tt.st)
			assert.Equal(t, tt.want, u)
			assert.Equal(t, u.Limit, u.Used+u.Free+u.Reserved)
			util, ok := u.Utilization()
			assert.Equal(t, tt.ok, ok)
			assert.InDelta(t, tt.util, util, 1e-12)
		})
	}
}

// TestUsageFromStatfsPastSignedRange: a filesystem reporting 2^63 blocks or more (a broken FUSE
// filesystem) gives values within the int64 range of the data points, still adding up to the limit;
// blocks × size past 2^64 no longer wraps.
func TestUsageFromStatfsPastSignedRange(t *testing.T) {
	for _, st := range []unix.Statfs_t{
		{Bsize: 4096, Frsize: 4096, Blocks: 1 << 63, Bfree: 1 << 62, Bavail: 1 << 61, Files: 1<<64 - 1, Ffree: 1 << 63},
		{Bsize: 4096, Frsize: 4096, Blocks: 1<<64 - 1, Bfree: 1<<64 - 1, Bavail: 1<<64 - 1},
		{Bsize: 512, Frsize: 512, Blocks: 1<<55 + 1, Bfree: 1, Bavail: 1},
	} {
		u := UsageFromStatfs(&st)
		for _, v := range []uint64{u.Limit, u.Used, u.Free, u.Reserved, u.Inodes, u.InodesUsed, u.InodesFree} {
			assert.LessOrEqual(t, v, uint64(math.MaxInt64), "%+v", st)
		}
		assert.Equal(t, u.Limit, u.Used+u.Free+u.Reserved)
		assert.Equal(t, u.Inodes, u.InodesUsed+u.InodesFree)
		assert.Positive(t, u.Limit)
	}
}
